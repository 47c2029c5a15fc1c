"""The `openshift` configuration section: an OpenShift 4 cluster installed the UPI way.

Facts from the OpenShift guide (NVIDIA/Red Hat, OpenShift 4 on bare metal): three control-plane
nodes plus a bootstrap node that goes away once bootstrapping completes, a helper machine that
serves DNS (dnsmasq), load balancing (HAProxy), HTTP (images, ignition) and PXE, and compute
nodes that may be bare-metal DGX systems booting UEFI only.

Every VM the `vsphere` section plans (components.facts.VsphereFacts) is a node with its planned
role, address and MAC; `nodes` lists the bare-metal machines (address required) and, optionally,
VMs to add a detail to (what is given must match the VM). `plan(openshift, vsphere)` turns the
validated section into the resolved node list every file and the component use.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field

from components.facts import VsphereFacts
from components.model import (
    Cidr,
    HostName,
    IPv4,
    MacAddress,
    Model,
    Problem,
    SshPublicKey,
    dockerconfigjson_problems,
    duplicates,
    matches,
    ssh_key_line_problem,
)
from labrules.openshift import CONTROL_PLANE_NODES, LOAD_BALANCER_PORTS

NodeRole = Literal["bootstrap", "control-plane", "worker"]

# The name openshift-install gives each role's ignition file.
IGNITION_NAME = {"bootstrap": "bootstrap", "control-plane": "master", "worker": "worker"}

# The openshift-install source the installer rules below mirror (openshift/installer, master of
# 2025-05-13, the 4.20 development line); each rule names the file and function it follows.
INSTALLER_COMMIT = "7ad0e35651d59acc86772481d79ea17241f3ecd7"

# OVN-Kubernetes keeps these IPv4 subnets for itself; openshift-install refuses a cluster, service
# or machine network that overlaps one (pkg/validate/validate.go, OVNIPv4*Subnet;
# pkg/types/validation/installconfig.go, validateNetworkNotOverlapDefaultOVNSubnets).
OVN_RESERVED = {
    "join": ipaddress.IPv4Network("100.64.0.0/16"),
    "transit": ipaddress.IPv4Network("100.88.0.0/16"),
    "masquerade": ipaddress.IPv4Network("169.254.0.0/17"),
}

# metadata.name: a DNS label less the 9 characters "\052.apps" takes in DNS records
# (pkg/validate/validate.go, ClusterName).
CLUSTER_NAME_MAX = 63 - 9
# A DNS-1123 subdomain, which the cluster domain (name.baseDomain) must be (pkg/validate/validate.go,
# DomainName; installconfig.go, ValidateInstallConfig).
DOMAIN_MAX = 253
# The shortest IPv4 service network prefix (pkg/validate/validate.go, ServiceSubnetCIDR).
SERVICE_PREFIX_MIN = 12

Domain = Annotated[str, matches(
    r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$",
    "is not a DNS domain: lower-case labels of letters, digits and '-' joined by '.'",
)]


def _check_location(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme:
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{value!r}: give an http(s) URL or a path on the helper's HTTP server")
    elif value.startswith("/") or " " in value or not value:
        raise ValueError(f"{value!r}: a path on the helper's HTTP server is relative, like rhcos/kernel")
    return value


Location = Annotated[str, AfterValidator(_check_location)]
"""An http(s) URL, or a path relative to the helper node's HTTP server root."""

# useradd/groupadd's portable name rule (shadow-utils; NAME_REGEX of Debian's adduser): at most 32.
PosixGroup = Annotated[str, matches(r"^[a-z_][a-z0-9_-]{0,31}$",
                                    "is not a group name: lower-case letters, digits, '_' and '-', "
                                    "starting with a letter or '_', at most 32 characters")]

BlockDevice = Annotated[str, matches(r"^/dev/[A-Za-z0-9/_.:-]+$",
                                     "is not a block device path like /dev/sda or /dev/nvme0n1")]


class ClusterNetwork(Model):
    cidr: Cidr = "10.128.0.0/14"
    host_prefix: int = Field(default=23, ge=8, le=30, description="pod subnet size given to each node")


class OpenShiftNetworks(Model):
    cluster_network: ClusterNetwork = ClusterNetwork()
    service_network: Cidr = "172.30.0.0/16"
    machine_network: list[Cidr] = Field(min_length=1, description="networks the node addresses are on")
    gateway: IPv4 | None = Field(
        default=None, description="default route of the nodes (static kernel arguments and DHCP); none when omitted"
    )


class Node(Model):
    name: HostName
    role: NodeRole
    platform: Literal["vsphere", "baremetal"] = "baremetal"
    address: IPv4 | None = Field(default=None, description="required for bare metal; VMs default to their planned one")
    mac: MacAddress | None = None
    install_device: BlockDevice | None = Field(default=None, description="overrides openshift.installDevice")


class HelperPaths(Model):
    """Where the helper node keeps what we deploy (defaults are RHEL/CentOS package paths)."""

    dnsmasq_conf: str = "/etc/dnsmasq.d/openshift.conf"
    hosts_file: str = "/etc/hosts.dnsmasq"
    haproxy_cfg: str = "/etc/haproxy/haproxy.cfg"
    tftp_root: str = "/var/lib/tftpboot"
    http_root: str = "/var/www/html"
    httpd_drop_in: str = Field(
        default="/etc/httpd/conf.d/gpu-lab-ignition.conf",
        description="the HTTP server's access rule for the ignition files (Debian's apache2: "
                    "/etc/apache2/conf-enabled/gpu-lab-ignition.conf)")
    staging: str = Field(default="/var/tmp/gpu-lab-openshift", description="upload directory, checked before install")


class HelperNode(Model):
    """The machine serving DNS, load balancing, HTTP and PXE (reached over SSH)."""

    address: IPv4
    user: str = "root"
    port: int = Field(default=22, ge=1, le=65535)
    load_balancer_address: IPv4 | None = Field(
        default=None, description="address HAProxy listens on and api/api-int/*.apps resolve to (default: address)"
    )
    host_key: SshPublicKey | None = Field(
        default=None, description="the helper's SSH host key ('ssh-ed25519 AAAA...', from ssh-keyscan); unset means "
                                  "any key is accepted and the policy pack reports it")
    http_port: int = Field(default=8080, ge=1, le=65535)
    http_group: PosixGroup = Field(
        default="apache", description="the group the HTTP server runs as, which alone may read the ignition files "
                                      "(RHEL httpd: apache; Debian apache2: www-data)")
    dns_upstreams: list[IPv4] = Field(default_factory=list, description="resolvers for names outside the cluster")
    paths: HelperPaths = HelperPaths()


class Dhcp(Model):
    enabled: bool = Field(default=False,
                          description="dnsmasq hands out the nodes' addresses by MAC (reservations only)")
    lease_time: str = Field(default="12h", pattern=r"^(\d+[smhd]?|infinite)$")


class RhcosImages(Model):
    """RHCOS live PXE artifacts (openshift-install coreos print-stream-json names them)."""

    kernel: Location = "rhcos/rhcos-live-kernel-x86_64"
    initramfs: Location = "rhcos/rhcos-live-initramfs.x86_64.img"
    rootfs: Location = "rhcos/rhcos-live-rootfs.x86_64.img"


class VmInterfaces(Model):
    """Guest NIC names of vSphere nodes, used in their static ip= kernel arguments."""

    management: str = Field(default="ens192", pattern=r"^[a-z0-9]+$")
    rdma: str = Field(default="ens224", pattern=r"^[a-z0-9]+$")


class Vcenter(Model):
    """vCenter for `platform: vsphere` (the password is the vsphere:password secret)."""

    server: str
    user: str


class OpenShiftConfig(Model):
    cluster_name: HostName
    base_domain: Domain
    platform: Literal["none", "vsphere"] = "none"
    vcenter: Vcenter | None = None
    network_type: Literal["OVNKubernetes", "OpenShiftSDN"] = "OVNKubernetes"
    networks: OpenShiftNetworks
    nodes: list[Node] = Field(
        default_factory=list,
        description="bare-metal nodes, and vSphere VMs to add to (every VM of the vsphere section is a node)",
    )
    ingress_nodes: list[HostName] | None = Field(
        default=None, description="nodes behind 80/443 (default: workers, or the control plane when there are none)"
    )
    helper: HelperNode
    dhcp: Dhcp = Dhcp()
    rhcos: RhcosImages = RhcosImages()
    install_device: BlockDevice = "/dev/sda"
    kernel_args: list[str] = Field(default_factory=lambda: ["console=tty0", "console=ttyS0,115200n8"])
    interfaces: VmInterfaces = VmInterfaces()
    bootstrap: bool = Field(default=True, description="false once bootstrapping completed: bootstrap VM and backend go")
    single_node: bool = Field(default=False, description="opt in to a one-node control plane (bootstrap in place)")
    wait_for_bootstrap: bool = False
    wait_for_install: bool = False
    approve_csrs: bool = Field(default=True, description="approve pending CSRs of the configured nodes only")
    installer: str = Field(default="openshift-install", description="openshift-install binary (path or name on PATH)")
    oc: str = Field(default="oc", description="oc binary (path or name on PATH), for CSR approval")
    drain_timeout_s: int = Field(
        default=900, gt=0, le=86400,
        description="seconds a node's drain may take (oc adm drain --timeout) before a roll or a removal stops")
    install_dir: str | None = Field(default=None, description="default build/<stack>/openshift-install")


# ---------------------------------------------------------------- resolved plan


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
    """Everything the renderers and the component need, derived once from the config."""

    config: OpenShiftConfig
    nodes: tuple[ClusterNode, ...]
    """Nodes that exist now: the bootstrap node only while `bootstrap` is true."""
    gateway: str | None
    rdma_cidr: str | None
    rdma_mtu: int | None
    vsphere: VsphereFacts | None = None

    @property
    def pxe_wanted(self) -> bool:
        """Bare-metal nodes install through PXE; vSphere VMs are cloned from the RHCOS template."""
        return any(n.platform == "baremetal" for n in self.nodes)

    @property
    def domain(self) -> str:
        return f"{self.config.cluster_name}.{self.config.base_domain}"

    @property
    def lb_address(self) -> str:
        helper = self.config.helper
        return str(helper.load_balancer_address or helper.address)

    @property
    def http_base(self) -> str:
        return f"http://{self.config.helper.address}:{self.config.helper.http_port}"

    def of_role(self, role: str) -> list[ClusterNode]:
        return [n for n in self.nodes if n.role == role]

    @property
    def configured_bootstrap_name(self) -> str | None:
        """The bootstrap node the config names, whether or not it exists now."""
        if self.vsphere is not None and self.vsphere.bootstrap_name is not None:
            return self.vsphere.bootstrap_name
        return next((n.name for n in self.config.nodes if n.role == "bootstrap"), None)

    @property
    def bootstrap_node(self) -> ClusterNode | None:
        found = self.of_role("bootstrap")
        return found[0] if found else None

    @property
    def ingress(self) -> list[ClusterNode]:
        wanted = self.config.ingress_nodes
        if wanted is not None:
            return [n for n in self.nodes if n.name in wanted]
        return self.of_role("worker") or self.of_role("control-plane")

    def ignition_url(self, role: str) -> str:
        return f"{self.http_base}/{IGNITION_NAME[role]}.ign"

    def image_url(self, location: str) -> str:
        return location if urlsplit(location).scheme else f"{self.http_base}/{location}"

    def machine_network_of(self, address: str) -> ipaddress.IPv4Network | None:
        ip = ipaddress.IPv4Address(address)
        for cidr in self.config.networks.machine_network:
            net = ipaddress.IPv4Network(cidr)
            if ip in net:
                return net
        return None


def plan(oc: OpenShiftConfig, vsphere: VsphereFacts | None) -> ClusterPlan:
    """The resolved cluster of a validated section and the vSphere plan (call after load_lab)."""
    return ClusterPlan(
        config=oc,
        nodes=tuple(node for _, node in resolve_nodes(oc, vsphere)),
        gateway=str(oc.networks.gateway) if oc.networks.gateway else None,
        rdma_cidr=vsphere.rdma_cidr if vsphere else None,
        rdma_mtu=vsphere.rdma_mtu if vsphere else None,
        vsphere=vsphere,
    )


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


# ---------------------------------------------------------------- rules


def check(oc: OpenShiftConfig, vsphere: VsphereFacts | None) -> list[Problem]:
    """The UPI rules: node counts, unique names/addresses/MACs, networks apart, vSphere nodes real."""
    p: list[Problem] = []
    resolved = resolve_nodes(oc, vsphere)
    roles = [n.role for _, n in resolved]

    control = roles.count("control-plane")
    if oc.single_node:
        if control != 1:
            p.append(Problem("openshift.nodes",
                             f"singleNode: true needs exactly 1 control-plane node, found {control}"))
        if oc.bootstrap:
            p.append(Problem("openshift.bootstrap",
                             "singleNode: true bootstraps in place; set bootstrap: false (no bootstrap node is used)"))
    elif control < CONTROL_PLANE_NODES:
        # Report where the user wrote the control plane: the VMs' names, unless openshift.nodes lists some.
        written_in_nodes = any(n.platform == "baremetal" and n.role == "control-plane" for _, n in resolved)
        p.append(Problem("openshift.nodes" if written_in_nodes or vsphere is None else "vsphere.controlPlane.names",
                         f"{control} control-plane node(s); OpenShift needs at least {CONTROL_PLANE_NODES} "
                         "for etcd quorum (or opt into a one-node lab with singleNode: true)"))
    if roles.count("bootstrap") > 1:
        p.append(Problem("openshift.nodes", f"{roles.count('bootstrap')} bootstrap nodes; at most one is allowed"))
    if oc.bootstrap and "bootstrap" not in roles and not oc.single_node:
        p.append(Problem("openshift.bootstrap",
                         "bootstrap: true needs a bootstrap node (vsphere.bootstrap or a node with role bootstrap); "
                         "add one or set bootstrap: false"))

    p += _vsphere_node_problems(oc, vsphere)

    def where(index: int | None, node: ClusterNode, key: str) -> str:
        return f"openshift.nodes[{index}].{key}" if index is not None else "openshift.nodes"

    # Clashes among VMs alone are the vsphere section's to report.
    def clash(values) -> list:
        found = []
        for value in duplicates(v for v, _ in values):
            holders = [n for v, n in values if v == value]
            if any(n.platform == "baremetal" for n in holders):
                found.append((value, ", ".join(n.name for n in holders)))
        return found

    for name in duplicates(n.name for n in oc.nodes):
        p.append(Problem("openshift.nodes", f"node name {name!r} is listed more than once; names must be unique"))
    for name, _ in clash([(n.name, n) for _, n in resolved]):
        p.append(Problem("openshift.nodes", f"node name {name!r} is used more than once; names must be unique"))
    for addr, holders in clash([(n.address, n) for _, n in resolved]):
        p.append(Problem("openshift.nodes", f"address {addr} is given to more than one node ({holders})"))
    for mac, holders in clash([(n.mac, n) for _, n in resolved]):
        p.append(Problem("openshift.nodes", f"MAC {mac} is given to more than one node ({holders})"))

    machine = [ipaddress.IPv4Network(c) for c in oc.networks.machine_network]
    for index, node in resolved:
        if node.address is None:
            if node.platform == "baremetal":
                p.append(Problem(f"openshift.nodes[{index}].address",
                                 "required for bare-metal nodes (give an IPv4 address)"))
            else:
                p.append(Problem(where(index, node, "address"),
                                 f"VM {node.name} has no management address; OpenShift nodes need a fixed one: "
                                 "plan it in the vsphere section or give it here"))
        elif not any(ipaddress.IPv4Address(node.address) in net for net in machine):
            p.append(Problem(where(index, node, "address"),
                             f"{node.address} of node {node.name} is outside the machine network(s) "
                             f"{', '.join(map(str, machine))}; every node must be on one"))

    p += _installer_name_problems(oc)
    p += _network_type_problems(oc)
    p += _network_problems(oc, vsphere, sum(1 for r in roles if r != "bootstrap"))
    p += _helper_problems(oc, {n.address for _, n in resolved})

    names = {n.name: n.role for _, n in resolved}
    for i, name in enumerate(oc.ingress_nodes or []):
        if names.get(name) in (None, "bootstrap"):
            allowed = ", ".join(n for n, r in names.items() if r != "bootstrap")
            p.append(Problem(f"openshift.ingressNodes[{i}]",
                             f"{name!r} is not a control-plane or worker node; allowed: {allowed}"))

    if any(n.platform == "baremetal" for n in oc.nodes):
        for key in ("kernel", "initramfs"):
            if urlsplit(getattr(oc.rhcos, key)).scheme == "https":
                p.append(Problem(f"openshift.rhcos.{key}",
                                 "PXE loaders (pxelinux, GRUB) fetch it without TLS; give an http:// URL or a path"))

    if oc.platform == "vsphere":
        if oc.vcenter is None:
            p.append(Problem("openshift.vcenter", "platform: vsphere needs vcenter: {server, user}"))
        for i, listed_node in enumerate(oc.nodes):
            if listed_node.platform != "vsphere":
                p.append(Problem(f"openshift.nodes[{i}].platform",
                                 f"node {listed_node.name} is bare metal, which platform: vsphere does not support; "
                                 "use platform: none for mixed clusters"))
    elif oc.vcenter is not None:
        p.append(Problem("openshift.vcenter", "only used with platform: vsphere; remove it or set platform: vsphere"))
    return p


def _vsphere_node_problems(oc: OpenShiftConfig, vsphere: VsphereFacts | None) -> list[Problem]:
    p: list[Problem] = []
    vsphere_nodes = [(i, n) for i, n in enumerate(oc.nodes) if n.platform == "vsphere"]
    if vsphere is None:
        for i, n in vsphere_nodes:
            p.append(Problem(f"openshift.nodes[{i}].platform",
                             f"node {n.name} is a vSphere VM but the stack has no vsphere section; use baremetal"))
        return p
    # Bootstrap included even when switched off, so its entry stays valid while it is gone.
    vms = {vm.name: vm for vm in vsphere.planned_vms}
    for i, n in vsphere_nodes:
        vm = vms.get(n.name)
        if vm is None:
            p.append(Problem(f"openshift.nodes[{i}].name",
                             f"{n.name!r} is not a VM of the vsphere section; VMs: {', '.join(sorted(vms))}"))
            continue
        if vm.role != n.role:
            p.append(Problem(f"openshift.nodes[{i}].role",
                             f"{n.role} but VM {n.name} is planned as {vm.role}; the roles must agree"))
        if n.address is not None and vm.management_address and str(n.address) != vm.management_address:
            p.append(Problem(f"openshift.nodes[{i}].address",
                             f"{n.address} differs from VM {n.name}'s management address {vm.management_address}; "
                             "leave it out or make them equal"))
        if n.mac is not None and vm.mac and n.mac != vm.mac:
            p.append(Problem(f"openshift.nodes[{i}].mac",
                             f"{n.mac} differs from VM {n.name}'s MAC {vm.mac}; leave it out or make them equal"))
    return p


def _network_problems(oc: OpenShiftConfig, vsphere: VsphereFacts | None, node_count: int) -> list[Problem]:
    nets = oc.networks
    base = "openshift.networks"
    cluster = ipaddress.IPv4Network(nets.cluster_network.cidr)
    service = ipaddress.IPv4Network(nets.service_network)
    named = [(f"{base}.clusterNetwork.cidr", cluster), (f"{base}.serviceNetwork", service)]
    named += [(f"{base}.machineNetwork[{i}]", ipaddress.IPv4Network(c)) for i, c in enumerate(nets.machine_network)]
    installer_checked = list(named)  # what install-config carries; the RDMA network is ours alone
    if vsphere is not None:
        named.append(("vsphere.networks.rdma.cidr", ipaddress.IPv4Network(vsphere.rdma_cidr)))
    p: list[Problem] = []
    for path, net in installer_checked:
        # openshift-install: "address must be specified" (pkg/validate/validate.go, SubnetCIDR)
        if net.network_address.is_unspecified:
            p.append(Problem(path, f"{net} starts at 0.0.0.0, which openshift-install refuses; give a real network"))
    for i, (path_a, a) in enumerate(named):
        for path_b, b in named[i + 1:]:
            if a.overlaps(b):
                p.append(Problem(path_b, f"{b} overlaps {a} ({path_a}); cluster, service, machine and RDMA "
                                         "networks must not share addresses"))
    if oc.network_type == "OVNKubernetes":
        for path, net in installer_checked:
            for kind, reserved in OVN_RESERVED.items():
                if net.overlaps(reserved):
                    p.append(Problem(path, f"{net} overlaps {reserved}, the {kind} subnet OVN-Kubernetes uses "
                                           "internally; openshift-install refuses it, pick another range"))
    if service.prefixlen < SERVICE_PREFIX_MIN:
        p.append(Problem(f"{base}.serviceNetwork",
                         f"{service} is /{service.prefixlen}; openshift-install needs /{SERVICE_PREFIX_MIN} "
                         "or longer for the IPv4 service network (/16 is usual)"))

    prefix = nets.cluster_network.host_prefix
    if prefix < cluster.prefixlen:
        p.append(Problem(f"{base}.clusterNetwork.hostPrefix",
                         f"/{prefix} is shorter than the cluster network's /{cluster.prefixlen}; "
                         f"allowed: /{cluster.prefixlen} to /30"))
    else:
        capacity = 2 ** (prefix - cluster.prefixlen)
        if capacity < node_count:
            p.append(Problem(f"{base}.clusterNetwork.hostPrefix",
                             f"/{prefix} in {cluster} gives {capacity} node subnet(s) for {node_count} nodes; "
                             "use a shorter hostPrefix or a bigger cluster network"))
    if nets.gateway is not None and not any(nets.gateway in ipaddress.IPv4Network(c) for c in nets.machine_network):
        p.append(Problem(f"{base}.gateway", f"{nets.gateway} is outside the machine network(s)"))
    return p


def _installer_name_problems(oc: OpenShiftConfig) -> list[Problem]:
    """metadata.name and baseDomain as openshift-install checks them (ValidateInstallConfig)."""
    p: list[Problem] = []
    name = oc.cluster_name
    if len(name) > CLUSTER_NAME_MAX:
        p.append(Problem("openshift.clusterName",
                         f"{name!r} is {len(name)} characters; openshift-install allows at most {CLUSTER_NAME_MAX} "
                         "(a DNS label less the 9 of '*.apps' in DNS records)"))
    domain = f"{name}.{oc.base_domain}"
    if len(domain) > DOMAIN_MAX:
        p.append(Problem("openshift.baseDomain",
                         f"the cluster domain {domain!r} is {len(domain)} characters; openshift-install allows "
                         f"at most {DOMAIN_MAX} for clusterName.baseDomain"))
    return p


def _network_type_problems(oc: OpenShiftConfig) -> list[Problem]:
    # openshift-install refuses OpenShiftSDN since 4.15, when it stopped being an install-time
    # option (pkg/types/validation/installconfig.go, validateNetworking).
    if oc.network_type == "OpenShiftSDN":
        return [Problem("openshift.networkType",
                        "'OpenShiftSDN' is not installable since OpenShift 4.15 (openshift-install refuses it); "
                        "allowed: OVNKubernetes")]
    return []


def _helper_problems(oc: OpenShiftConfig, node_addresses: set[str | None]) -> list[Problem]:
    p: list[Problem] = []
    helper = oc.helper
    for key, addr in (("address", helper.address), ("loadBalancerAddress", helper.load_balancer_address)):
        if addr is not None and str(addr) in node_addresses:
            p.append(Problem(f"openshift.helper.{key}",
                             f"{addr} is also a node's address; the helper needs an address of its own"))
    if helper.http_port in LOAD_BALANCER_PORTS and helper.load_balancer_address in (None, helper.address):
        p.append(Problem("openshift.helper.httpPort",
                         f"{helper.http_port} is a load-balancer port on the same address; use another, e.g. 8080"))
    return p


# ---------------------------------------------------------------- secrets openshift-install reads

def pull_secret_problems(value: str, path: str = "gpu-lab:pullSecret") -> list[Problem]:
    """openshift-install's pull secret rule (pkg/validate/validate.go, ImagePullSecret): JSON with a
    non-empty "auths" object whose every registry has "auth" or "credsStore". Messages never
    quote the value: it is a secret, and openshift-install would print it whole."""
    problems = dockerconfigjson_problems(value, path, "the pull secret file from console.redhat.com")
    if problems:
        return problems
    return [Problem(path, f'registry {registry!r} needs "auth" or "credsStore"')
            for registry, entry in json.loads(value)["auths"].items() if not ({"auth", "credsStore"} & set(entry))]


def ssh_key_problems(value: str, path: str = "gpu-lab:sshPublicKey") -> list[Problem]:
    """Each authorized_keys line must be a public key openshift-install can parse (pkg/validate/
    validate.go, SSHPublicKey): "<type> <base64 blob> [comment]", the blob naming the same type."""
    lines = [line.strip() for line in value.splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    if not lines:
        return [Problem(path, "is empty; give an OpenSSH public key line like 'ssh-ed25519 AAAA... user@host'")]
    problems = []
    for number, line in enumerate(lines, 1):
        reason = ssh_key_line_problem(line)
        if reason:
            problems.append(Problem(path, f"line {number}: {reason}; give an OpenSSH public key line like "
                                          "'ssh-ed25519 AAAA... user@host' (the .pub file, not the private key)"))
    return problems
