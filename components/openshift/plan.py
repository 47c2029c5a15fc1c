"""The resolved OpenShift cluster: every fact the files and components read, computed once.

`plan()` runs on a section that passed its rules: each VM of the vsphere section becomes a node
with its planned role, address and MAC, the bare-metal nodes come from the section, and every
setting becomes a plain value here, so no component reads the stack file's model.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import get_args
from urllib.parse import urlsplit

from components.facts import VsphereFacts
from components.mirror import MirrorPlan
from components.openshift.model import Node, NodeRole, OpenShiftConfig

# Every node role, in the order the PXE menus, the httpd rule and `make render` list them.
ROLES: tuple[str, ...] = get_args(NodeRole)
# The name openshift-install gives each role's ignition file.
IGNITION_NAME = {"bootstrap": "bootstrap", "control-plane": "master", "worker": "worker"}


@dataclass(frozen=True)
class HelperLayout:
    """Where the helper node keeps what the lab deploys."""

    dnsmasq_conf: str
    hosts_file: str
    haproxy_cfg: str
    tftp_root: str
    http_root: str
    httpd_drop_in: str
    staging: str


@dataclass(frozen=True)
class ClusterHelper:
    """The helper node: its SSH login, the addresses and ports of its services, its layout."""

    address: str
    port: int
    user: str
    host_key: str | None
    load_balancer_address: str
    """Where HAProxy listens and api, api-int and *.apps resolve to (the helper's address unless set)."""
    http_port: int
    http_group: str
    dns_upstreams: tuple[str, ...]
    paths: HelperLayout


@dataclass(frozen=True)
class ClusterNetworks:
    """The networks install-config declares."""

    cluster_cidr: str
    host_prefix: int
    service_network: str
    machine_networks: tuple[str, ...]


@dataclass(frozen=True)
class BootImages:
    """The RHCOS live PXE artifacts: each an http(s) URL or a path on the helper's HTTP server."""

    kernel: str
    initramfs: str
    rootfs: str


@dataclass(frozen=True)
class DhcpSettings:
    enabled: bool
    lease_time: str


@dataclass(frozen=True)
class GuestNics:
    """Guest NIC names of vSphere nodes, for their static ip= kernel arguments."""

    management: str
    rdma: str


@dataclass(frozen=True)
class VcenterLogin:
    server: str
    user: str


@dataclass(frozen=True)
class InstallLifecycle:
    """The installer and oc runs around the cluster: binaries, waits, CSR approval, drains."""

    installer: str
    oc: str
    wait_for_bootstrap: bool
    wait_for_install: bool
    approve_csrs: bool
    drain_timeout_s: int
    install_dir: str | None


@dataclass(frozen=True)
class ClusterNode:
    """One node with every fact resolved (vSphere VMs filled in from the planned VMs)."""

    name: str
    role: str
    platform: str
    address: str | None
    mac: str | None
    rdma_address: str | None
    install_device: str

    @property
    def ignition(self) -> str:
        return IGNITION_NAME[self.role]

    @property
    def planned_address(self) -> str:
        """The node's address; every node of a lab that passed check() has one."""
        if self.address is None:
            raise ValueError(f"node {self.name} has no address (check() reports this before anything is built)")
        return self.address

    @property
    def planned_mac(self) -> str:
        """The node's MAC; every node PXE or a VM NIC needs has one once check() passed."""
        if self.mac is None:
            raise ValueError(f"node {self.name} has no MAC (check() reports this before anything is built)")
        return self.mac


@dataclass(frozen=True)
class ClusterPlan:
    """Everything the renderers and the component need, derived once from the section."""

    cluster_name: str
    base_domain: str
    platform: str
    """install-config's platform: none, or vsphere (with `vcenter`)."""
    vcenter: VcenterLogin | None
    network_type: str
    networks: ClusterNetworks
    nodes: tuple[ClusterNode, ...]
    """Nodes that exist now: the bootstrap node only while `bootstrap` is true."""
    gateway: str | None
    rdma_cidr: str | None
    rdma_mtu: int | None
    helper: ClusterHelper
    dhcp: DhcpSettings
    rhcos: BootImages
    install_device: str
    """The nodes' default install device (a node's own is in ClusterNode.install_device)."""
    kernel_args: tuple[str, ...]
    interfaces: GuestNics
    bootstrap: bool
    single_node: bool
    ingress_nodes: tuple[str, ...] | None
    """The nodes behind 80/443 the section names; None: workers, or the control plane without them."""
    configured_bootstrap_name: str | None
    """The bootstrap node the configuration names, whether or not it exists now."""
    lifecycle: InstallLifecycle
    vsphere: VsphereFacts | None = None
    mirror: MirrorPlan | None = None
    """The lab's image mirror (install-config imageDigestSources, additionalTrustBundle); None: the internet."""

    @property
    def pxe_wanted(self) -> bool:
        """Bare-metal nodes install through PXE; vSphere VMs are cloned from the RHCOS template."""
        return any(n.platform == "baremetal" for n in self.nodes)

    @property
    def domain(self) -> str:
        return f"{self.cluster_name}.{self.base_domain}"

    @property
    def lb_address(self) -> str:
        return self.helper.load_balancer_address

    @property
    def http_base(self) -> str:
        return f"http://{self.helper.address}:{self.helper.http_port}"

    def of_role(self, role: str) -> list[ClusterNode]:
        return [n for n in self.nodes if n.role == role]

    @property
    def bootstrap_node(self) -> ClusterNode | None:
        found = self.of_role("bootstrap")
        return found[0] if found else None

    @property
    def ingress(self) -> list[ClusterNode]:
        wanted = self.ingress_nodes
        if wanted is not None:
            return [n for n in self.nodes if n.name in wanted]
        return self.of_role("worker") or self.of_role("control-plane")

    def ignition_url(self, role: str) -> str:
        return f"{self.http_base}/{IGNITION_NAME[role]}.ign"

    def image_url(self, location: str) -> str:
        return location if urlsplit(location).scheme else f"{self.http_base}/{location}"

    def machine_network_of(self, address: str) -> ipaddress.IPv4Network | None:
        ip = ipaddress.IPv4Address(address)
        for cidr in self.networks.machine_networks:
            net = ipaddress.IPv4Network(cidr)
            if ip in net:
                return net
        return None


def plan(oc: OpenShiftConfig, vsphere: VsphereFacts | None, mirror: MirrorPlan | None = None) -> ClusterPlan:
    """The resolved cluster of a validated section and the vSphere plan (call after load_lab)."""
    helper, paths, nets = oc.helper, oc.helper.paths, oc.networks
    return ClusterPlan(
        cluster_name=oc.cluster_name,
        base_domain=oc.base_domain,
        platform=oc.platform,
        vcenter=VcenterLogin(server=oc.vcenter.server, user=oc.vcenter.user) if oc.vcenter is not None else None,
        network_type=oc.network_type,
        networks=ClusterNetworks(
            cluster_cidr=nets.cluster_network.cidr,
            host_prefix=nets.cluster_network.host_prefix,
            service_network=nets.service_network,
            machine_networks=tuple(nets.machine_network),
        ),
        nodes=tuple(node for _, node in resolve_nodes(oc, vsphere)),
        gateway=str(nets.gateway) if nets.gateway else None,
        rdma_cidr=vsphere.rdma_cidr if vsphere else None,
        rdma_mtu=vsphere.rdma_mtu if vsphere else None,
        helper=ClusterHelper(
            address=str(helper.address),
            port=helper.port,
            user=helper.user,
            host_key=helper.host_key,
            load_balancer_address=str(helper.load_balancer_address or helper.address),
            http_port=helper.http_port,
            http_group=helper.http_group,
            dns_upstreams=tuple(str(a) for a in helper.dns_upstreams),
            paths=HelperLayout(
                dnsmasq_conf=paths.dnsmasq_conf,
                hosts_file=paths.hosts_file,
                haproxy_cfg=paths.haproxy_cfg,
                tftp_root=paths.tftp_root,
                http_root=paths.http_root,
                httpd_drop_in=paths.httpd_drop_in,
                staging=paths.staging,
            ),
        ),
        dhcp=DhcpSettings(enabled=oc.dhcp.enabled, lease_time=oc.dhcp.lease_time),
        rhcos=BootImages(kernel=oc.rhcos.kernel, initramfs=oc.rhcos.initramfs, rootfs=oc.rhcos.rootfs),
        install_device=oc.install_device,
        kernel_args=tuple(oc.kernel_args),
        interfaces=GuestNics(management=oc.interfaces.management, rdma=oc.interfaces.rdma),
        bootstrap=oc.bootstrap,
        single_node=oc.single_node,
        ingress_nodes=tuple(oc.ingress_nodes) if oc.ingress_nodes is not None else None,
        configured_bootstrap_name=_configured_bootstrap_name(oc, vsphere),
        lifecycle=InstallLifecycle(
            installer=oc.installer,
            oc=oc.oc,
            wait_for_bootstrap=oc.wait_for_bootstrap,
            wait_for_install=oc.wait_for_install,
            approve_csrs=oc.approve_csrs,
            drain_timeout_s=oc.drain_timeout_s,
            install_dir=oc.install_dir,
        ),
        vsphere=vsphere,
        mirror=mirror,
    )


def _configured_bootstrap_name(oc: OpenShiftConfig, vsphere: VsphereFacts | None) -> str | None:
    """The bootstrap VM the vsphere section plans, else the section's bootstrap node, present now or not."""
    if vsphere is not None and vsphere.bootstrap_name is not None:
        return vsphere.bootstrap_name
    return next((n.name for n in oc.nodes if n.role == "bootstrap"), None)


def resolve_nodes(oc: OpenShiftConfig, vsphere: VsphereFacts | None) -> list[tuple[int | None, ClusterNode]]:
    """(index in openshift.nodes or None, node) for every node that exists now.

    Every VM that exists now is a node (the template is RHCOS); an openshift.nodes entry with
    platform vsphere only adds to its VM. Bare-metal nodes come from openshift.nodes alone.
    The bootstrap node is left out once `bootstrap` is false. Addresses may be None here when
    the configuration is invalid; check() reports that, plan() runs only on valid labs.
    """
    listed: dict[str, tuple[int, Node]] = {}
    for i, node in enumerate(oc.nodes):
        if node.platform == "vsphere":
            listed.setdefault(node.name, (i, node))
    out: list[tuple[int | None, ClusterNode]] = []
    for vm in (vsphere.vms if vsphere else ()):
        index, entry = listed.get(vm.name) or (None, None)
        address = str(entry.address) if entry is not None and entry.address else vm.management_address
        out.append((index, ClusterNode(
            name=vm.name,
            role=vm.role,
            platform="vsphere",
            address=address,
            mac=(entry.mac if entry is not None and entry.mac else vm.mac),
            rdma_address=vm.rdma_address,
            install_device=(entry.install_device if entry is not None and entry.install_device else oc.install_device),
        )))
    for i, node in enumerate(oc.nodes):
        if node.platform != "baremetal" or (node.role == "bootstrap" and not oc.bootstrap):
            continue
        out.append((i, ClusterNode(
            name=node.name,
            role=node.role,
            platform="baremetal",
            address=str(node.address) if node.address else None,
            mac=node.mac,
            rdma_address=None,
            install_device=node.install_device or oc.install_device,
        )))
    return out
