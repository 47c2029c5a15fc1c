"""The `vsphere` configuration section: hosts, networks, the RoCE vDS and the VMs.

Defaults are the NVIDIA RDG for Kubernetes with vGPU and PVRDMA: a
management host, identical worker hosts with a ConnectX RoCE uplink each, a
192.168.0.0/24 RDMA network with jumbo frames, 4 vCPU / 24 GB / 50 GB workers.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import Field

from components.facts import HostRoce, PlannedHost, PlannedVm, VsphereFacts
from components.model import (
    AddressPlan,
    AddressRange,
    Cidr,
    HostName,
    InventoryName,
    IPv4,
    MacAddress,
    Model,
    Problem,
    Vlan,
    duplicates,
    expand_addresses,
    matches,
)
from labrules.roce import DEFAULT_PFC_PRIORITY, PFC_PRIORITY_MAX, PFC_PRIORITY_MIN
from labrules.vsphere import (
    HARDWARE_VERSIONS,
    LACP_ALLOWED_ON_RDMA_UPLINKS,
    MAX_MEMORY_GB,
    MAX_VCPUS,
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

# The numbers of the rules (sizing minimums, MTU, hardware and vDS versions) live in labrules.vsphere.
# pulumi-vsphere refuses to downgrade a VM, so hardwareVersion defaults to keeping the template's.

# grid_<gpu>[-<mig slices>]-<framebuffer GB><series>, e.g. grid_v100-16c, grid_a100-3-20c,
# nvidia_l40s-24c. Series: a (virtual apps), b (virtual PC), c (compute), q (workstation).
VgpuProfile = Annotated[str, matches(
    r"^(grid|nvidia)_([a-z0-9]+)(-(\d+))?-(\d+)([abcq])$",
    "is not a vGPU profile: expected grid_<gpu>[-<slices>]-<framebuffer GB><series> "
    "with series a, b, c or q, e.g. grid_v100-16c (Virtual Compute Server profiles end in 'c')",
)]

Vmnic = Annotated[str, matches(r"^vmnic\d+$", "is not an ESXi physical NIC name: expected vmnic<N>, e.g. vmnic4")]


class Sizing(Model):
    """Virtual hardware of one VM. The bounds are vSphere 8's per VM (VMware, "Configuration Maximums",
    vSphere 8.0, Virtual Machine Maximums: 768 virtual CPUs, 24 TB of RAM;
    https://configmax.broadcom.com/guest?vmwareproduct=vSphere&release=vSphere%208.0&categories=1-0)."""

    cpus: int = Field(gt=0, le=MAX_VCPUS, description=f"vCPUs (vSphere 8 allows up to {MAX_VCPUS} per VM)")
    memory_gb: int = Field(gt=0, le=MAX_MEMORY_GB,
                           description=f"memory in GiB, fully reserved on vGPU VMs (vSphere 8 allows up to "
                                       f"{MAX_MEMORY_GB} GiB, 24 TB, per VM)")
    disk_gb: int = Field(gt=0, description="system disk in GiB (thin clone of the template)")


class WorkerHost(Model):
    """An ESXi host that runs vGPU workers and has ConnectX RoCE ports."""

    name: InventoryName = Field(description="the host as vCenter lists it: FQDN, IP address or short name")
    rdma_uplinks: list[Vmnic] = Field(
        min_length=1, description="the ConnectX ports that become the RoCE vDS uplinks, e.g. [vmnic4]"
    )


class ManagementNetwork(Model):
    host_cidr: Cidr = "172.16.31.0/24"
    vm_cidr: Cidr = "172.16.7.0/24"
    port_group: str = Field(default="lab-management",
                            description="management port group created on the vDS for the worker VMs")
    vlan: Vlan = 0
    management_host_network: str = Field(
        default="VM Network",
        description="existing network on the management host for the control-plane and bootstrap VMs "
                    "(the management host is not on the RoCE vDS)",
    )


class RdmaNetwork(Model):
    cidr: Cidr = "192.168.0.0/24"
    port_group: str = "lab-rdma"
    vlan: Vlan = 0
    mtu: int = Field(default=9000, description="MTU of the vmk and VM RDMA NICs")
    pfc_priority: int = Field(
        default=DEFAULT_PFC_PRIORITY, ge=PFC_PRIORITY_MIN, le=PFC_PRIORITY_MAX,
        description="802.1p priority the hosts' ConnectX ports send RoCE on"
    )
    trust: Literal["dscp", "pcp"] = Field(default="dscp", description="QoS trust mode of the hosts' ports")
    link_gbps: float = Field(
        default=100, gt=0, description="line rate of each host's RoCE uplink (its ConnectX port), Gb/s; "
        "the acceptance report grades against it"
    )


class DistributedSwitch(Model):
    name: str = "lab-roce-vds"
    version: str = Field(default="6.6.0", pattern=r"^\d+\.\d+\.\d+$",
                         description="vDS version; PVRDMA needs 6.5.0 or later")
    mtu: int = 9000
    lacp: bool = Field(default=False, description="must stay false: RoCE uplinks are not aggregated")


class VmGroup(Model):
    """VMs of one role. Addresses are listed or derived from a first address."""

    names: list[HostName] = Field(min_length=1)
    sizing: Sizing
    management_addresses: AddressPlan | None = Field(
        default=None, description="DHCP-reserved management addresses, one per VM (omit for plain DHCP)"
    )
    macs: list[MacAddress] | None = Field(
        default=None, description="management NIC MACs, one per VM (for DHCP reservations)"
    )
    cloud_init_user_data: str | None = Field(
        default=None, description="cloud-init user-data for templates that use it (not with OpenShift)"
    )


class WorkerVms(VmGroup):
    rdma_addresses: AddressPlan = Field(description="PVRDMA NIC addresses, one per worker")
    vgpu_profile: VgpuProfile
    hosts: list[InventoryName] | None = Field(
        default=None,
        description="the worker host of each worker, in the order of names (default: round-robin over "
                    "workerHosts by position); with listed addresses, any worker can be removed and no other "
                    "worker moves")


class BootstrapVm(Model):
    name: HostName = "bootstrap"
    sizing: Sizing = Sizing(cpus=4, memory_gb=16, disk_gb=100)
    management_address: IPv4 | None = None
    mac: MacAddress | None = None


class VsphereConfig(Model):
    datacenter: str
    cluster: str = Field(description="compute cluster holding the worker hosts (DRS rules live here)")
    datastore: str
    template: str = Field(description="VM or template to clone every VM from")
    management_datastore: str | None = Field(
        default=None, description="datastore of the management host's VMs (default: datastore)")
    folder: str | None = Field(default=None, description="VM folder, relative to the datacenter")
    domain: str = Field(default="lab.local", description="DNS domain given to cloned guests")
    hardware_version: int | None = Field(
        default=None, description="VM hardware version to upgrade the clones to (default: keep the template's); "
                                  f"PVRDMA needs {PVRDMA_MIN_HARDWARE_VERSION} or later")
    management_host: InventoryName = Field(
        description="the ESXi host of the control-plane and bootstrap VMs, as vCenter lists it")
    worker_hosts: list[WorkerHost] = Field(min_length=1)
    vmk_addresses: AddressPlan = Field(description="RDMA vmk addresses, one per worker host, in order")
    networks: Networks = Field(default_factory=lambda: Networks())
    vds: DistributedSwitch = DistributedSwitch()
    control_plane: VmGroup
    workers: WorkerVms
    bootstrap: BootstrapVm | None = Field(
        default=None, description="OpenShift bootstrap VM (created only while openshift.bootstrap is true)"
    )


class Networks(Model):
    management: ManagementNetwork = ManagementNetwork()
    rdma: RdmaNetwork = RdmaNetwork()


VsphereConfig.model_rebuild()


# ---------------------------------------------------------------- derived plan


def planned_hosts(vs: VsphereConfig) -> list[PlannedHost]:
    addresses = expand_addresses(vs.vmk_addresses, len(vs.worker_hosts))
    return [
        PlannedHost(h.name, tuple(h.rdma_uplinks), str(a) if a else "")
        for h, a in zip(vs.worker_hosts, addresses, strict=True)
    ]


def worker_placement(vs: VsphereConfig) -> list[str]:
    """The worker host of each worker: `workers.hosts` when given, else round-robin by position
    (the day-1 form, kept as it was so existing stacks plan the same)."""
    if vs.workers.hosts is not None:
        return list(vs.workers.hosts)
    return [vs.worker_hosts[i % len(vs.worker_hosts)].name for i in range(len(vs.workers.names))]


def planned_vms(vs: VsphereConfig, with_bootstrap: bool) -> list[PlannedVm]:
    """Every VM: bootstrap (when asked), control plane on the management host, workers on their hosts."""
    vms: list[PlannedVm] = []
    if with_bootstrap and vs.bootstrap is not None:
        b = vs.bootstrap
        vms.append(
            PlannedVm(b.name, "bootstrap", vs.management_host, b.sizing.cpus, b.sizing.memory_gb,
                      b.sizing.disk_gb, _str(b.management_address), b.mac, None, None)
        )
    cp = vs.control_plane
    for name, addr, mac in zip(cp.names, expand_addresses(cp.management_addresses, len(cp.names)),
                               _macs(cp.macs, len(cp.names)), strict=True):
        vms.append(PlannedVm(name, "control-plane", vs.management_host, cp.sizing.cpus, cp.sizing.memory_gb,
                             cp.sizing.disk_gb, _str(addr), mac, None, None))
    w = vs.workers
    n = len(w.names)
    # A hosts list of the wrong length is reported by check(); plan with what the section gives.
    hosts = (worker_placement(vs) + [vs.worker_hosts[0].name] * n)[:n]
    for name, addr, mac, rdma, host in zip(w.names, expand_addresses(w.management_addresses, n), _macs(w.macs, n),
                                           expand_addresses(w.rdma_addresses, n), hosts, strict=True):
        vms.append(PlannedVm(name, "worker", host, w.sizing.cpus, w.sizing.memory_gb, w.sizing.disk_gb,
                             _str(addr), mac, _str(rdma), w.vgpu_profile))
    return vms


def _str(addr) -> str | None:
    return str(addr) if addr is not None else None


def _macs(macs: list[str] | None, n: int) -> list[str | None]:
    return list(macs or []) + [None] * (n - len(macs or []))


def vsphere_facts(vs: VsphereConfig, with_bootstrap: bool) -> VsphereFacts:
    """What the other sections read from this one (with_bootstrap: the bootstrap VM exists now)."""
    rdma, vds, mgmt = vs.networks.rdma, vs.vds, vs.networks.management
    # The uplinks carry frames up to the vDS MTU, which is at least the vmk/VM NIC MTU.
    mtu, mtu_path = (vds.mtu, "vsphere.vds.mtu") if vds.mtu > rdma.mtu else (rdma.mtu, "vsphere.networks.rdma.mtu")
    return VsphereFacts(
        hosts=tuple(planned_hosts(vs)),
        vms=tuple(planned_vms(vs, with_bootstrap=with_bootstrap)),
        planned_vms=tuple(planned_vms(vs, with_bootstrap=True)),
        roce=HostRoce(rdma.pfc_priority, rdma.trust, mtu, "vsphere.networks.rdma.pfcPriority",
                      "vsphere.networks.rdma.trust", mtu_path),
        rdma_cidr=rdma.cidr,
        rdma_mtu=rdma.mtu,
        management_cidrs=(("hostCidr", mgmt.host_cidr), ("vmCidr", mgmt.vm_cidr)),
        bootstrap_name=vs.bootstrap.name if vs.bootstrap is not None else None,
        datacenter=vs.datacenter,
        cluster=vs.cluster,
        datastore=vs.datastore,
        folder=vs.folder,
        vm_port_group=mgmt.port_group,
    )


# ---------------------------------------------------------------- rules


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
