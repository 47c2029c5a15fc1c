"""The `openshift` section as the stack file writes it: an OpenShift 4 cluster installed the UPI way.

The OpenShift guide's cluster: three control-plane nodes, a bootstrap node that goes once
bootstrapping completes, a helper machine serving DNS, load balancing, HTTP and PXE, and compute
nodes that may be bare-metal DGX systems (UEFI only). Every VM of the vsphere section is a node;
`nodes` lists the bare-metal machines and details for VMs. Models only: `plan.py` derives the
facts the components read, `rules.py` checks the section.
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field

from components.model import Cidr, HostName, IPv4, MacAddress, Model, SshPublicKey, matches
from labrules.openshift import DEFAULT_OC, NODE_DRAIN_TIMEOUT_S

NodeRole = Literal["bootstrap", "control-plane", "worker"]

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
    oc: str = Field(default=DEFAULT_OC, description="oc binary (path or name on PATH), for CSR approval")
    drain_timeout_s: int = Field(
        default=NODE_DRAIN_TIMEOUT_S, gt=0, le=86400,
        description="seconds a node's drain may take (oc adm drain --timeout) before a roll or a removal stops")
    install_dir: str | None = Field(default=None, description="default build/<stack>/openshift-install")
