"""The facts one section of the lab hands another, as plain frozen values.

The vSphere section plans hosts and VMs; the openshift, switch and add-on rules and components
read those plans, never the vSphere model itself. This module holds only the shapes (standard
library types), so every section can take them without importing another section;
components/lab_plan.py fills them in once from the validated sections.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class PlannedHost:
    """One worker ESXi host on the RoCE vDS."""

    name: str
    rdma_uplinks: tuple[str, ...]
    vmk_address: str


@dataclass(frozen=True)
class PlannedVm:
    """One VM as it will be created; the single place VM facts are derived."""

    name: str
    role: Literal["control-plane", "worker", "bootstrap"]
    host: str
    cpus: int
    memory_gb: int
    disk_gb: int
    management_address: str | None
    mac: str | None
    rdma_address: str | None
    vgpu_profile: str | None


@dataclass(frozen=True)
class HostRoce:
    """What the hosts' RoCE NICs do, and the config key each value comes from (for messages)."""

    pfc_priority: int
    trust: str
    mtu: int
    pfc_path: str
    trust_path: str
    mtu_path: str


@dataclass(frozen=True)
class VsphereFacts:
    """What the other sections read from the vSphere section."""

    hosts: tuple[PlannedHost, ...]
    vms: tuple[PlannedVm, ...]
    """Every VM that exists now: the bootstrap VM only while OpenShift bootstraps."""
    planned_vms: tuple[PlannedVm, ...]
    """Every VM the section describes, bootstrap included even when switched off."""
    roce: HostRoce
    rdma_cidr: str
    rdma_mtu: int
    management_cidrs: tuple[tuple[str, str], ...]
    """(key under vsphere.networks.management, CIDR) of the hosts' and the VMs' management networks."""
    bootstrap_name: str | None
    datacenter: str
    cluster: str
    datastore: str
    folder: str | None
    vm_port_group: str
    """The management port group of the worker VMs."""

    @property
    def worker_names(self) -> list[str]:
        return [vm.name for vm in self.vms if vm.role == "worker"]

    def rdma_addresses_taken(self) -> dict[str, str]:
        """Addresses already used on the RDMA network: vmk ports and VM RDMA NICs -> whose."""
        taken = {h.vmk_address: f"host {h.name} (vmk)" for h in self.hosts if h.vmk_address}
        taken.update({vm.rdma_address: f"VM {vm.name}" for vm in self.vms if vm.rdma_address})
        return taken
