"""The `vsphere` section's plan: every fact its components and the other sections read, once.

Computed from the validated model (model.py) before any resource registers. RoceFabric and
LabVms take RoceFabricPlan and LabVmsPlan, never the model, so a fact such as where a worker
goes is decided here and nowhere else; the other sections read VsphereFacts (components/facts.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, NamedTuple

from components.facts import HostRoce, PlannedHost, PlannedVm, VsphereFacts
from components.model import expand_addresses
from components.vsphere.model import VsphereConfig


class PortGroup(NamedTuple):
    """A port group of the RoCE vDS."""

    name: str
    vlan: int


@dataclass(frozen=True)
class RoceFabricPlan:
    """What RoceFabric builds: the vDS, its RDMA and management port groups, a vmk per worker host."""

    datacenter: str
    hosts: tuple[PlannedHost, ...]
    vds_name: str
    vds_version: str
    vds_mtu: int
    rdma_port_group: PortGroup
    management_port_group: PortGroup
    rdma_cidr: str
    rdma_mtu: int
    """MTU of the vmk ports (and the VMs' RDMA NICs)."""
    pfc_priority: int
    trust: Literal["dscp", "pcp"]


@dataclass(frozen=True)
class LabVmsPlan:
    """What LabVms builds the VMs from, besides the fabric's port groups and host ids."""

    vms: tuple[PlannedVm, ...]
    """Every VM to create (VsphereFacts.vms)."""
    datacenter: str
    cluster: str
    datastore: str
    management_datastore: str | None
    """The management host's VMs' datastore; None: the same as datastore."""
    template: str
    folder: str | None
    domain: str
    hardware_version: int | None
    """None keeps the template's version."""
    management_host: str
    management_host_network: str
    """The existing network of the control-plane and bootstrap VMs on the management host."""
    management_port_group: str
    """The worker VMs' management network (a port group of the RoCE vDS)."""
    management_cidr: str
    rdma_port_group: str
    rdma_cidr: str
    cloud_init_user_data: Mapping[str, str]
    """Role -> cloud-init user-data, for the roles the section gives it to."""
    worker_placement: Literal["pinned", "spread"]
    """WorkerPlacement.drs."""
    worker_host_count: int


class WorkerPlacement(NamedTuple):
    """Where the workers go: the VMs' hosts and LabVms' DRS rules both follow this one decision."""

    hosts: list[str]
    """The worker host of each worker, in the order of workers.names."""
    drs: Literal["pinned", "spread"]
    """pinned: `workers.hosts` writes each worker's host, and a should-run-on rule per host keeps
    it there; spread: the host is a round-robin start, and anti-affinity rules over consecutive
    workers let DRS spread them."""


def planned_hosts(vs: VsphereConfig) -> list[PlannedHost]:
    addresses = expand_addresses(vs.vmk_addresses, len(vs.worker_hosts))
    return [
        PlannedHost(h.name, tuple(h.rdma_uplinks), str(a) if a else "")
        for h, a in zip(vs.worker_hosts, addresses, strict=True)
    ]


def worker_placement(vs: VsphereConfig) -> WorkerPlacement:
    """`workers.hosts` when given, else round-robin by position (the day-1 form, kept as it was so
    existing stacks plan the same)."""
    if vs.workers.hosts is not None:
        return WorkerPlacement(list(vs.workers.hosts), "pinned")
    return WorkerPlacement([vs.worker_hosts[i % len(vs.worker_hosts)].name for i in range(len(vs.workers.names))],
                           "spread")


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
    hosts = (worker_placement(vs).hosts + [vs.worker_hosts[0].name] * n)[:n]
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


def roce_fabric_plan(vs: VsphereConfig, facts: VsphereFacts) -> RoceFabricPlan:
    """RoceFabric's part, on the hosts the facts planned."""
    rdma, management = vs.networks.rdma, vs.networks.management
    return RoceFabricPlan(
        datacenter=vs.datacenter,
        hosts=facts.hosts,
        vds_name=vs.vds.name,
        vds_version=vs.vds.version,
        vds_mtu=vs.vds.mtu,
        rdma_port_group=PortGroup(rdma.port_group, rdma.vlan),
        management_port_group=PortGroup(management.port_group, management.vlan),
        rdma_cidr=rdma.cidr,
        rdma_mtu=rdma.mtu,
        pfc_priority=rdma.pfc_priority,
        trust=rdma.trust,
    )


def lab_vms_plan(vs: VsphereConfig, facts: VsphereFacts) -> LabVmsPlan:
    """LabVms' part, on the VMs the facts planned."""
    management = vs.networks.management
    user_data = {role: group.cloud_init_user_data
                 for role, group in (("control-plane", vs.control_plane), ("worker", vs.workers))
                 if group.cloud_init_user_data}
    return LabVmsPlan(
        vms=facts.vms,
        datacenter=vs.datacenter,
        cluster=vs.cluster,
        datastore=vs.datastore,
        management_datastore=vs.management_datastore or None,
        template=vs.template,
        folder=vs.folder,
        domain=vs.domain,
        hardware_version=vs.hardware_version,
        management_host=vs.management_host,
        management_host_network=management.management_host_network,
        management_port_group=management.port_group,
        management_cidr=management.vm_cidr,
        rdma_port_group=vs.networks.rdma.port_group,
        rdma_cidr=vs.networks.rdma.cidr,
        cloud_init_user_data=user_data,
        worker_placement=worker_placement(vs).drs,
        worker_host_count=len(vs.worker_hosts),
    )
