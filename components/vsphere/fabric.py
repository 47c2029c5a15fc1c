"""RoceFabric: the RoCE vDS, its port groups, one PVRDMA vmk per worker host, and the host
settings PVRDMA and vGPU need that pulumi-vsphere cannot express.

The RDG: the ConnectX RoCE ports are the vDS uplinks (VMs on different hosts use the
physical RDMA devices only when those are uplinks of the same vDS), each worker host has a vmk on
the RDMA network named in `Net.PVRDMAVmknic`, the `pvrdma` firewall ruleset is open (port 28250),
and the host graphics type is `sharedDirect` so vGPU profiles can be attached. It is built from
the section's plan (RoceFabricPlan), not from the section itself.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import pulumi
import pulumi_vsphere as vsphere

from components.dynamic.host_settings import (
    HostAdvancedOption,
    HostFirewallRuleset,
    HostGraphicsType,
    HostModuleOptions,
)
from components.model import resource_slug
from components.roce.host import nmlx5_module_options
from components.vsphere.plan import PortGroup, RoceFabricPlan
from labrules.types import ROCE_FABRIC

PVRDMA_VMKNIC_OPTION = "Net.PVRDMAVmknic"
PVRDMA_RULESET = "pvrdma"
VGPU_GRAPHICS_TYPE = "sharedDirect"
CONNECTX_MODULE = "nmlx5_core"
PENDING_SETTINGS = ("graphics type", f"{CONNECTX_MODULE} options")
"""What hostsPendingReboot names, in the order the fabric reads the two settings."""


@dataclass(frozen=True)
class RoceFabricArgs:
    plan: RoceFabricPlan
    """The vDS, its port groups and the worker hosts with their RDMA uplinks and vmk address (LabPlan.roce_fabric)."""
    lossless: bool = True
    """PFC on at the hosts' ConnectX ports (False when the switches run lossy, ECN only)."""
    protect: bool = False
    """gpu-lab:lifecycle.protect: the engine refuses to delete or replace the vDS (every VM's network)."""


def uplink_names(count: int) -> list[str]:
    """vDS uplink port names, one per RDMA port a host contributes."""
    return [f"rdma-uplink{i + 1}" for i in range(count)]


def vmk_device(vnic_id: str) -> str:
    """pulumi-vsphere ids a vmk as '<host id>_<device>'; the device is what PVRDMA wants."""
    return vnic_id.rsplit("_", 1)[-1]


class RoceFabric(pulumi.ComponentResource):
    """The vSphere side of the RoCE network for PVRDMA."""

    dvs: vsphere.DistributedVirtualSwitch
    rdma_port_group: vsphere.DistributedPortGroup
    management_port_group: vsphere.DistributedPortGroup
    host_summary: pulumi.Output[dict]
    """Per worker host: its vmk device and address on the RDMA network."""
    pending_reboot: pulumi.Output[dict]
    """Per worker host with settings written but not yet in force: which (they need the host to reboot)."""
    host_ids: dict[str, pulumi.Output[str]]
    """vSphere id of each worker host, by name: looked up once here, reused by LabVms (each lookup
    is a provider invoke that searches vCenter's inventory)."""

    def __init__(self, name: str, args: RoceFabricArgs, opts: pulumi.ResourceOptions | None = None):
        plan = args.plan
        super().__init__(ROCE_FABRIC, name, {
            "vdsName": plan.vds_name,
            "rdmaMtu": plan.rdma_mtu,
            "rdmaCidr": plan.rdma_cidr,
            "pfcPriority": plan.pfc_priority,
            "trust": plan.trust,
            "hosts": [{"name": h.name, "rdmaUplinks": list(h.rdma_uplinks), "vmkAddress": h.vmk_address}
                      for h in plan.hosts],
        }, opts)

        datacenter = vsphere.get_datacenter_output(name=plan.datacenter, opts=pulumi.InvokeOptions(parent=self))
        self.host_ids = host_ids = {
            h.name: vsphere.get_host_output(name=h.name, datacenter_id=datacenter.id,
                                            opts=pulumi.InvokeOptions(parent=self)).id
            for h in plan.hosts
        }
        uplinks = uplink_names(len(plan.hosts[0].rdma_uplinks))

        # LACP stays off and every RDMA port is an uplink of its own: RoCE wants one path per
        # flow and one NIC per subnet, and PVRDMA uses the uplinks directly.
        self.dvs = vsphere.DistributedVirtualSwitch(
            f"{name}-vds",
            name=plan.vds_name,
            datacenter_id=datacenter.id,
            version=plan.vds_version,
            max_mtu=plan.vds_mtu,
            uplinks=uplinks,
            active_uplinks=uplinks,
            standby_uplinks=[],
            lacp_enabled=False,
            link_discovery_protocol="lldp",
            link_discovery_operation="both",
            hosts=[
                vsphere.DistributedVirtualSwitchHostArgs(host_system_id=host_ids[h.name], devices=list(h.rdma_uplinks))
                for h in plan.hosts
            ],
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        self.rdma_port_group = self._port_group(f"{name}-rdma-pg", plan.rdma_port_group, uplinks)
        self.management_port_group = self._port_group(f"{name}-management-pg", plan.management_port_group, uplinks)

        netmask = str(ipaddress.IPv4Network(plan.rdma_cidr).netmask)
        module_options = nmlx5_module_options(plan.pfc_priority, plan.trust, lossless=args.lossless)
        summary: dict[str, pulumi.Output] = {}
        pending: dict[str, pulumi.Output] = {}
        for h in plan.hosts:
            host_opts = pulumi.ResourceOptions(parent=self)
            # Host names are vCenter inventory names (an FQDN or address); the slug keeps the URN parseable.
            prefix = f"{name}-{resource_slug(h.name)}"
            vnic = vsphere.Vnic(
                f"{prefix}-vmk",
                host=host_ids[h.name],
                distributed_switch_port=self.dvs.id,
                distributed_port_group=self.rdma_port_group.id,
                ipv4=vsphere.VnicIpv4Args(ip=h.vmk_address, netmask=netmask),
                mtu=plan.rdma_mtu,
                netstack="defaultTcpipStack",
                opts=host_opts,
            )
            device = vnic.id.apply(vmk_device)
            HostAdvancedOption(f"{prefix}-pvrdma-vmknic", h.name,
                               PVRDMA_VMKNIC_OPTION, device, opts=host_opts)
            HostFirewallRuleset(f"{prefix}-pvrdma-ruleset", h.name,
                                PVRDMA_RULESET, True, opts=host_opts)
            graphics = HostGraphicsType(f"{prefix}-graphics", h.name, VGPU_GRAPHICS_TYPE,
                                        opts=host_opts)
            # The ConnectX ports must send RoCE on the priority the switches protect.
            qos = HostModuleOptions(f"{prefix}-connectx-qos", h.name,
                                    CONNECTX_MODULE, module_options, opts=host_opts)
            summary[h.name] = pulumi.Output.all(device=device, address=h.vmk_address).apply(
                lambda v: {"vmk": v["device"], "address": v["address"]})
            # Both are read at boot: written is not in force until the host reboots.
            pending[h.name] = pulumi.Output.all(graphics.pending_reboot, qos.pending_reboot).apply(
                lambda flags: [what for what, flag in zip(PENDING_SETTINGS, flags, strict=True) if flag])

        self.host_summary = pulumi.Output.all(**summary) if summary else pulumi.Output.from_input({})
        self.pending_reboot = pulumi.Output.all(**pending).apply(
            lambda by_host: {host: settings for host, settings in by_host.items() if settings}
        ) if pending else pulumi.Output.from_input({})
        self.register_outputs({
            "dvsId": self.dvs.id,
            "rdmaPortGroupId": self.rdma_port_group.id,
            "managementPortGroupId": self.management_port_group.id,
            "hosts": self.host_summary,
            "pendingReboot": self.pending_reboot,
        })

    def _port_group(self, logical_name: str, port_group: PortGroup, uplinks: list[str]) -> vsphere.DistributedPortGroup:
        return vsphere.DistributedPortGroup(
            logical_name,
            name=port_group.name,
            distributed_virtual_switch_uuid=self.dvs.id,
            vlan_id=port_group.vlan,
            active_uplinks=uplinks,
            standby_uplinks=[],
            opts=pulumi.ResourceOptions(parent=self),
        )
