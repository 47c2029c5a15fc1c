"""The `vsphere` section as the stack file writes it: hosts, networks, the RoCE vDS and the VMs.

Only the pydantic models: what the section derives lives in plan.py, its rules in rules.py.
Defaults are the NVIDIA RDG for Kubernetes with vGPU and PVRDMA: a management host, identical
worker hosts with a ConnectX RoCE uplink each, a 192.168.0.0/24 RDMA network with jumbo frames,
4 vCPU / 24 GB / 50 GB workers.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from components.model import (
    AddressPlan,
    Cidr,
    HostName,
    InventoryName,
    IPv4,
    MacAddress,
    Model,
    Vlan,
    matches,
)
from labrules.roce import DEFAULT_PFC_PRIORITY, PFC_PRIORITY_MAX, PFC_PRIORITY_MIN
from labrules.vsphere import MAX_MEMORY_GB, MAX_VCPUS, PVRDMA_MIN_HARDWARE_VERSION, RDMA_MTU

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
    mtu: int = Field(default=RDMA_MTU, description="MTU of the vmk and VM RDMA NICs")
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
    mtu: int = RDMA_MTU
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
