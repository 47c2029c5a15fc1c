"""The `vsphere` section's rules: what the guides ask of hosts, networks and VMs, as Problems.

check() reads this section only, on the plan's own derivation (plan.py) of hosts and VMs, so a
rule and a component never disagree on where a VM goes or which address it has. The numbers
(sizing minimums, MTU, hardware and vDS versions) live in labrules.vsphere.
"""

from __future__ import annotations

import ipaddress

from components.facts import PlannedVm
from components.model import AddressPlan, AddressRange, Problem, duplicates, expand_addresses
from components.vsphere.model import Sizing, VsphereConfig
from components.vsphere.plan import planned_hosts, planned_vms
from labrules.vsphere import (
    HARDWARE_VERSIONS,
    LACP_ALLOWED_ON_RDMA_UPLINKS,
    MIN_BOOTSTRAP,
    MIN_CONTROL_PLANE,
    MIN_WORKER,
    PVRDMA_MIN_HARDWARE_VERSION,
    RDMA_MIN_MTU,
    RDMA_UPLINKS_PER_HOST,
    VDS_MIN_VERSION,
    VDS_VERSIONS,
    vds_version_supports_pvrdma,
)


def check(vs: VsphereConfig) -> list[Problem]:
    """The guide's rules for the vSphere section (it reads no other section)."""
    p: list[Problem] = []
    nets = vs.networks
    rdma_net = ipaddress.IPv4Network(nets.rdma.cidr)
    host_net = ipaddress.IPv4Network(nets.management.host_cidr)
    vm_net = ipaddress.IPv4Network(nets.management.vm_cidr)

    # MTU and LACP: RoCE needs jumbo frames end to end and one path per flow.
    if nets.rdma.mtu < RDMA_MIN_MTU:
        p.append(Problem("vsphere.networks.rdma.mtu",
                         f"{nets.rdma.mtu} is below {RDMA_MIN_MTU}; the RDMA network needs jumbo frames "
                         f"({RDMA_MIN_MTU} or more)"))
    if vs.vds.mtu < RDMA_MIN_MTU:
        p.append(Problem("vsphere.vds.mtu",
                         f"{vs.vds.mtu} is below {RDMA_MIN_MTU}; the RoCE vDS needs jumbo frames "
                         f"({RDMA_MIN_MTU} or more)"))
    if vs.vds.mtu < nets.rdma.mtu:
        p.append(Problem("vsphere.vds.mtu",
                         f"{vs.vds.mtu} is below the RDMA network MTU {nets.rdma.mtu}; the vDS must carry it"))
    if vs.vds.lacp and not LACP_ALLOWED_ON_RDMA_UPLINKS:
        p.append(Problem("vsphere.vds.lacp",
                         "LACP is not allowed on RDMA uplinks (RoCE needs one NIC per subnet, no bonding); set false"))
    if vs.hardware_version is not None and vs.hardware_version not in HARDWARE_VERSIONS:
        p.append(Problem("vsphere.hardwareVersion",
                         f"{vs.hardware_version} is not allowed: PVRDMA needs virtual hardware "
                         f"{PVRDMA_MIN_HARDWARE_VERSION} or later, and "
                         f"pulumi-vsphere accepts {_ranges(HARDWARE_VERSIONS)}; or leave it out to keep the "
                         "template's version"))
    if not vds_version_supports_pvrdma(vs.vds.version):
        p.append(Problem("vsphere.vds.version", f"{vs.vds.version}: PVRDMA needs a vDS of version "
                                                f"{'.'.join(map(str, VDS_MIN_VERSION))} or later"))
    elif vs.vds.version not in VDS_VERSIONS:
        p.append(Problem("vsphere.vds.version", f"{vs.vds.version} is not a vDS version pulumi-vsphere can create; "
                                                f"use one of {', '.join(VDS_VERSIONS)}"))

    # Subnets: the management network of hosts/VMs must not overlap the RDMA network.
    for key, net in (("hostCidr", host_net), ("vmCidr", vm_net)):
        if net.overlaps(rdma_net):
            p.append(Problem(f"vsphere.networks.management.{key}",
                             f"{net} overlaps the RDMA network {rdma_net}; each NIC needs its own subnet"))

    # Hosts.
    host_names = [vs.management_host] + [h.name for h in vs.worker_hosts]
    # vCenter host names are DNS names or addresses: case does not make two hosts.
    for name in duplicates([n.lower() for n in host_names]):
        p.append(Problem("vsphere.workerHosts", f"host name {name!r} appears more than once; names must be unique"))
    layouts = {tuple(h.rdma_uplinks) for h in vs.worker_hosts}
    if len(layouts) > 1:
        first = vs.worker_hosts[0]
        for i, h in enumerate(vs.worker_hosts):
            if tuple(h.rdma_uplinks) != tuple(first.rdma_uplinks):
                p.append(Problem(f"vsphere.workerHosts[{i}].rdmaUplinks",
                                 f"{h.rdma_uplinks} differs from {first.name}'s {first.rdma_uplinks}; "
                                 "all worker hosts must have the same RDMA uplink layout (same PCIe placement)"))
    for i, h in enumerate(vs.worker_hosts):
        if len(h.rdma_uplinks) > RDMA_UPLINKS_PER_HOST:
            p.append(Problem(f"vsphere.workerHosts[{i}].rdmaUplinks",
                             f"{len(h.rdma_uplinks)} RDMA uplinks; the PVRDMA vDS takes exactly one RoCE port per "
                             "host (one NIC per subnet, no teaming); give one vmnic"))
        for nic in duplicates(h.rdma_uplinks):
            p.append(Problem(f"vsphere.workerHosts[{i}].rdmaUplinks", f"{nic} is listed twice"))

    p += _address_list_problems("vsphere.vmkAddresses", vs.vmk_addresses, len(vs.worker_hosts), rdma_net,
                                "worker host")

    # VMs.
    cp, w = vs.control_plane, vs.workers
    p += _sizing_problems("vsphere.workers.sizing", w.sizing, MIN_WORKER, "worker")
    p += _sizing_problems("vsphere.controlPlane.sizing", cp.sizing, MIN_CONTROL_PLANE, "control-plane")
    if vs.bootstrap is not None:
        p += _sizing_problems("vsphere.bootstrap.sizing", vs.bootstrap.sizing, MIN_BOOTSTRAP, "bootstrap")
    p += _address_list_problems("vsphere.workers.rdmaAddresses", w.rdma_addresses, len(w.names), rdma_net, "worker")
    for key, group in (("controlPlane", cp), ("workers", w)):
        if group.management_addresses is not None:
            p += _address_list_problems(f"vsphere.{key}.managementAddresses", group.management_addresses,
                                        len(group.names), vm_net, "VM")
        if group.macs is not None and len(group.macs) != len(group.names):
            p.append(Problem(f"vsphere.{key}.macs",
                             f"{len(group.macs)} MACs for {len(group.names)} VMs; give one per VM or none"))
    p += _worker_host_problems(vs)
    if vs.bootstrap is not None and vs.bootstrap.management_address is not None:
        if vs.bootstrap.management_address not in vm_net:
            p.append(Problem("vsphere.bootstrap.managementAddress",
                             f"{vs.bootstrap.management_address} is outside the VM management network {vm_net}"))

    vms = planned_vms(vs, with_bootstrap=True)
    p += _shared_problems(vs, vms, host_names)
    vmk = {h.vmk_address: h.name for h in planned_hosts(vs)}
    for i, v in enumerate(x for x in vms if x.role == "worker"):
        if v.rdma_address in vmk:
            p.append(Problem(f"vsphere.workers.rdmaAddresses[{i}]",
                             f"{v.rdma_address} of VM {v.name} collides with the vmk of host {vmk[v.rdma_address]}"))
    # One NIC per subnet per VM: management and RDMA NICs must land on different subnets.
    for v in vms:
        if v.rdma_address and v.management_address and \
                ipaddress.IPv4Network(f"{v.management_address}/{rdma_net.prefixlen}", strict=False) == rdma_net:
            p.append(Problem("vsphere", f"VM {v.name} has two NICs on {rdma_net}; one NIC per subnet"))
    return p


def _ranges(values) -> str:
    """(13, 14, 15, 17, 18) -> '13-15, 17-18'."""
    runs: list[list[int]] = []
    for v in sorted(values):
        if runs and v == runs[-1][-1] + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def _vm_key_paths(vs: VsphereConfig) -> list[dict[str, str]]:
    """Where each VM's name, MAC and management address are written, in planned_vms order."""
    paths = []
    if vs.bootstrap is not None:
        paths.append({"name": "vsphere.bootstrap.name", "mac": "vsphere.bootstrap.mac",
                      "address": "vsphere.bootstrap.managementAddress"})
    for key, group in (("controlPlane", vs.control_plane), ("workers", vs.workers)):
        derived = isinstance(group.management_addresses, AddressRange)
        for i in range(len(group.names)):
            paths.append({"name": f"vsphere.{key}.names[{i}]", "mac": f"vsphere.{key}.macs[{i}]",
                          "address": f"vsphere.{key}.managementAddresses" + (".first" if derived else f"[{i}]")})
    return paths


def _shared_problems(vs: VsphereConfig, vms: list[PlannedVm], host_names: list[str]) -> list[Problem]:
    """Names, MACs and addresses given twice, reported at the key of each VM that shares one."""
    problems = []
    paths = _vm_key_paths(vs)
    for label, attr, what in (("name", "name", "name"), ("MAC", "mac", "mac"),
                              ("management address", "management_address", "address")):
        values = [getattr(v, attr) for v in vms]
        extra = host_names if attr == "name" else []
        for value in duplicates(values + extra):
            holders = [(v.name, paths[i][what]) for i, v in enumerate(vms) if values[i] == value]
            holders += [(f"host {h}", "vsphere.managementHost" if j == 0 else f"vsphere.workerHosts[{j - 1}].name")
                        for j, h in enumerate(extra) if h == value]
            if attr == "name":
                message = (f"name {value!r} is used by more than one host or VM: "
                           f"{', '.join(path for _, path in holders)}; names must be unique")
            else:
                message = (f"{label} {value} is given to more than one VM: "
                           f"{', '.join(f'{name} ({path})' for name, path in holders)}; each VM needs its own")
            problems.append(Problem(holders[-1][1], message))
    return problems


def _sizing_problems(path: str, sizing: Sizing, minimum: dict[str, int], role: str) -> list[Problem]:
    problems = []
    for key, attr in (("cpus", "cpus"), ("memoryGb", "memory_gb"), ("diskGb", "disk_gb")):
        value = getattr(sizing, attr)
        if value < minimum[key]:
            problems.append(Problem(f"{path}.{key}",
                                    f"{value} is below the guide's {role} minimum of {minimum[key]}"))
    return problems


def _address_list_problems(path: str, plan: AddressPlan, count: int, net: ipaddress.IPv4Network,
                           what: str) -> list[Problem]:
    problems = []
    if isinstance(plan, list) and len(plan) != count:
        problems.append(Problem(path, f"{len(plan)} addresses for {count} {what}s; give exactly one per {what} "
                                      "or {first: <address>}"))
    addresses = expand_addresses(plan, count)
    for i, addr in enumerate(addresses):
        if addr is None:
            continue
        if addr not in net or addr in (net.network_address, net.broadcast_address):
            where = f"{path}[{i}]" if isinstance(plan, list) else f"{path}.first"
            problems.append(Problem(where, f"{addr} ({what} {i + 1}) is not a usable host address of {net}"))
            if not isinstance(plan, list):
                break
    for repeated in duplicates(addresses):
        problems.append(Problem(path, f"{repeated} is listed more than once; each {what} needs its own address"))
    return problems


def _worker_host_problems(vs: VsphereConfig) -> list[Problem]:
    """`workers.hosts`: one configured worker host per worker name."""
    hosts = vs.workers.hosts
    if hosts is None:
        return []
    problems = []
    names = vs.workers.names
    if len(hosts) != len(names):
        problems.append(Problem("vsphere.workers.hosts",
                                f"{len(hosts)} hosts for {len(names)} workers; give exactly one worker host per "
                                "name, in the order of vsphere.workers.names, or leave hosts out for round-robin"))
    worker_hosts = [h.name for h in vs.worker_hosts]
    for i, host in enumerate(hosts):
        if host in worker_hosts:
            continue
        worker = f" (worker {names[i]})" if i < len(names) else ""
        same_but_case = [h for h in worker_hosts if h.lower() == host.lower()]
        if same_but_case:
            why = f"is written {same_but_case[0]!r} in vsphere.workerHosts; write it the same way"
        elif host == vs.management_host:
            why = "is the management host, which is not on the RoCE vDS"
        else:
            why = "is not a worker host"
        problems.append(Problem(f"vsphere.workers.hosts[{i}]",
                                f"{host!r}{worker} {why}; use one of vsphere.workerHosts: {', '.join(worker_hosts)}"))
    return problems
