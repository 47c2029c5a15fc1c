"""The openshift section's rules: what openshift-install and the UPI procedure would refuse, found
before anything is built (node counts, unique names, addresses and MACs, networks apart, the
vSphere nodes real), and the two secrets openshift-install reads.
"""

from __future__ import annotations

import ipaddress
import json
from urllib.parse import urlsplit

from components.facts import VsphereFacts
from components.model import Problem, dockerconfigjson_problems, duplicates, ssh_key_line_problem
from components.openshift.model import OpenShiftConfig
from components.openshift.plan import ClusterNode, resolve_nodes
from labrules.openshift import CONTROL_PLANE_NODES, LOAD_BALANCER_PORTS

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
