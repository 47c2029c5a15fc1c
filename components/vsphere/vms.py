"""LabVms: control-plane, bootstrap and vGPU worker VMs cloned from a template.

Every VM gets a vmxnet3 management NIC. Workers also get a PVRDMA (`vmxnet3vrdma`) NIC on the RDMA
port group with their planned address, memory fully reserved (a vGPU VM does not power on
otherwise), the vGPU profile (pyvmomi: a PCI passthrough device with a vmiop backing), and DRS
rules: anti-affinity rules that spread them over the worker hosts, or, where the plan pins each
worker to its host (`workers.hosts`), a should-run-on rule per worker host. Everything here comes
from the section's plan (LabVmsPlan), which alone decides where a VM goes.

A running VM is never touched by what only its first boot reads (template, customization,
ignition and kernel arguments in extra_config): see FIRST_BOOT_INPUTS in provider_facts.py.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_vsphere as vsphere

from components.dynamic.provider import VcenterConnection
from components.dynamic.roll import NodeRoll
from components.facts import PlannedVm
from components.model import ConfigError, Problem, resource_slug
from components.secrets import LabSecrets
from components.vsphere.fabric import RoceFabric
from components.vsphere.plan import LabVmsPlan
from components.vsphere.provider_facts import FIRST_BOOT_INPUTS, ROLLED_VM_SETTINGS, VIRTUAL_MACHINE, VM_REBOOT_KEYS
from labrules.types import LAB_VMS
from labrules.vsphere import MANAGEMENT_ADAPTER, PVRDMA_ADAPTER


def vcenter_connection(vsphere_config: pulumi.Config, secrets: LabSecrets) -> VcenterConnection:
    """The pyvmomi providers talk to the same vCenter as the vSphere provider, at the same port."""
    server, port = split_vcenter_address(vsphere_config.require("vsphereServer"))
    return VcenterConnection(
        server=server,
        port=port,
        user=vsphere_config.require("user"),
        password=secrets.require("vcenter_password", "the pyvmomi providers log in to vCenter"),
        insecure=(vsphere_config.get_bool("allowUnverifiedSsl") or False),
    )


def split_vcenter_address(address: str) -> tuple[str, int]:
    """`vsphere:vsphereServer` as host and port.

    pulumi-vsphere takes it as `host[:port]` and connects to https://<vsphereServer>/sdk
    (terraform-provider-vsphere, vsphere/config.go), so a port given there is the vCenter's port
    for pyvmomi too; without one, 443. IPv6 addresses with a port are written `[addr]:port`.
    """
    host, port = address, "443"
    if address.startswith("["):  # [v6]:port or [v6]
        host, bracket, rest = address[1:].partition("]")
        if not bracket:
            host = ""
        elif rest:
            port = rest[1:] if rest.startswith(":") else ""
    elif address.count(":") == 1:  # host:port (a bare IPv6 address has several colons)
        host, port = address.split(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError([Problem(
            "vsphere:vsphereServer",
            f"{address!r} is not a vCenter address: expected host, host:port or [IPv6]:port with a port 1-65535")])
    return host, int(port)


VM_TYPE = VIRTUAL_MACHINE
"""pulumi-vsphere's VM resource type, as the state records it."""
TYPE = LAB_VMS
"""The LabVms component's type token (make diff reads the VMs' intent by it)."""


@dataclass(frozen=True)
class LabVmsArgs:
    plan: LabVmsPlan
    """Every VM to create and where (LabPlan.lab_vms)."""
    fabric: RoceFabric
    roll_provider: pulumi.ProviderResource
    """The node rolls' provider: how they reach vCenter and the cluster (`node_roll_provider`)."""
    drain_timeout_s: int
    """How long a node's drain may take before its roll stops (LabPlan.drain_timeout_s)."""
    extra_config: Mapping[str, pulumi.Input[Mapping[str, str]]] = field(default_factory=dict)
    """VM name -> guestinfo keys (ignition from OpenShift); such VMs are not customized."""
    protect: bool = False
    """gpu-lab:lifecycle.protect: the engine refuses to delete or replace the control-plane VMs."""
    deployed_vms: frozenset[str] | None = None
    """Names of the VMs the stack's last deployment has ({} for a new stack); None when unknown, and every
    node's roll then waits for the previous node's."""


ROLLED_VM_INPUTS = [name for inputs in ROLLED_VM_SETTINGS.values() for name in inputs]
"""What a running cluster node's NodeRoll applies instead of pulumi-vsphere (ROLLED_VM_SETTINGS). Under
ignore_changes the provider keeps the value it has in its state (what the upgrade to rolls did to a
running lab: docs/day2.md)."""
CONSTANT_REBOOT_INPUTS = ("enableDiskUuid",)
"""Inputs on the provider's reboot list (VM_REBOOT_KEYS) that every VM sets to one value of gpu-lab's:
a release that changes one must roll it too (tests/vsphere/test_vsphere_program.py checks that every
reboot-list input a VM sets is a first-boot input, rolled, or here)."""
REBOOT_LIST = VM_REBOOT_KEYS
CLUSTER_ROLES = ("control-plane", "worker")
"""The VMs that are cluster nodes, and so roll; the bootstrap VM is short-lived and keeps the provider's way."""


def memory_mb(vm: PlannedVm) -> int:
    return vm.memory_gb * 1024


def memory_reservation_mb(vm: PlannedVm) -> int | None:
    """All of a vGPU VM's memory (it does not power on otherwise); None, no reservation, for any other VM."""
    return memory_mb(vm) if vm.vgpu_profile else None


def spread_groups(worker_names: Sequence[str], host_count: int) -> list[list[str]]:
    """Split workers into anti-affinity groups no larger than the number of worker hosts,
    so each rule can be satisfied; groups of one need no rule."""
    groups = [list(worker_names[i:i + host_count]) for i in range(0, len(worker_names), host_count)]
    return [g for g in groups if len(g) > 1]


def cloud_init_extra_config(user_data: str) -> dict[str, str]:
    return {
        "guestinfo.userdata": base64.b64encode(user_data.encode()).decode(),
        "guestinfo.userdata.encoding": "base64",
    }


class LabVms(pulumi.ComponentResource):
    machines: dict[str, vsphere.VirtualMachine]
    vm_summary: pulumi.Output[dict]
    """Per VM: role, host, management and RDMA addresses, vGPU profile."""

    def __init__(self, name: str, args: LabVmsArgs, opts: pulumi.ResourceOptions | None = None):
        plan = args.plan
        rdma_net = ipaddress.IPv4Network(plan.rdma_cidr)
        # The template is looked up first: without vsphere.hardwareVersion the VMs keep its hardware
        # version, and the policy pack needs that version among the component's inputs to judge PVRDMA.
        lookup = pulumi.InvokeOptions(parent=opts.parent if opts else None)
        datacenter = vsphere.get_datacenter_output(name=plan.datacenter, opts=lookup)
        template = vsphere.get_virtual_machine_output(name=plan.template, datacenter_id=datacenter.id, opts=lookup)
        super().__init__(TYPE, name, {
            "vms": [_intent(vm, plan) for vm in plan.vms],
            "hardwareVersion": plan.hardware_version,
            "templateHardwareVersion": template.hardware_version,
        }, opts)
        invoke = pulumi.InvokeOptions(parent=self)

        cluster = vsphere.get_compute_cluster_output(name=plan.cluster, datacenter_id=datacenter.id, opts=invoke)
        datastore = vsphere.get_datastore_output(name=plan.datastore, datacenter_id=datacenter.id, opts=invoke)
        management_datastore = datastore if plan.management_datastore is None else vsphere.get_datastore_output(
            name=plan.management_datastore, datacenter_id=datacenter.id, opts=invoke)
        management_host = vsphere.get_host_output(name=plan.management_host, datacenter_id=datacenter.id, opts=invoke)
        management_host_network = vsphere.get_network_output(
            name=plan.management_host_network, datacenter_id=datacenter.id, opts=invoke)
        host_ids = args.fabric.host_ids  # the fabric's lookups: the same worker hosts, in the same datacenter

        self.machines = {}
        self.rolls: dict[str, NodeRoll] = {}
        previous_roll: NodeRoll | None = None
        summary: dict[str, pulumi.Output] = {}
        for vm in plan.vms:
            on_management_host = vm.role != "worker"
            nics = [vsphere.VirtualMachineNetworkInterfaceArgs(
                network_id=management_host_network.id if on_management_host else args.fabric.management_port_group.id,
                adapter_type=MANAGEMENT_ADAPTER,
                use_static_mac=vm.mac is not None,
                mac_address=vm.mac,
            )]
            if vm.rdma_address:
                nics.append(vsphere.VirtualMachineNetworkInterfaceArgs(
                    network_id=args.fabric.rdma_port_group.id, adapter_type=PVRDMA_ADAPTER))

            extra = args.extra_config.get(vm.name)
            user_data = plan.cloud_init_user_data.get(vm.role)
            if extra is None and user_data:
                extra = cloud_init_extra_config(user_data)
            # Guests that configure themselves (ignition, cloud-init) must not be customized.
            customize = None if extra is not None else _customization(vm, plan.domain, rdma_net.prefixlen)

            reservation_mb = memory_reservation_mb(vm)
            machine = vsphere.VirtualMachine(
                f"{name}-{vm.name}",
                name=vm.name,
                resource_pool_id=management_host.resource_pool_id if on_management_host else cluster.resource_pool_id,
                host_system_id=management_host.id if on_management_host else host_ids[vm.host],
                datastore_id=(management_datastore if on_management_host else datastore).id,
                folder=plan.folder,
                num_cpus=vm.cpus,
                memory=memory_mb(vm),
                memory_reservation=reservation_mb,
                memory_reservation_locked_to_max=True if reservation_mb is not None else None,
                # None keeps the template's version: the provider refuses to downgrade a VM.
                hardware_version=plan.hardware_version,
                guest_id=template.guest_id,
                scsi_type=template.scsi_type,
                firmware=template.firmware,
                enable_disk_uuid=True,
                network_interfaces=nics,
                disks=[vsphere.VirtualMachineDiskArgs(label="disk0", size=vm.disk_gb, thin_provisioned=True)],
                clone=vsphere.VirtualMachineCloneArgs(template_uuid=template.id, customize=customize),
                extra_config=extra,
                # Ignition guests have no tools answering during the install; do not wait on them.
                wait_for_guest_net_timeout=0,
                wait_for_guest_ip_timeout=0,
                opts=pulumi.ResourceOptions(
                    parent=self,
                    ignore_changes=FIRST_BOOT_INPUTS + (ROLLED_VM_INPUTS if vm.role in CLUSTER_ROLES else []),
                    # A replacement has the old VM's name, MAC and addresses (and needs its GPU share):
                    # vCenter refuses a second VM of that name in the folder, so the old one goes first.
                    delete_before_replace=True,
                    # Workers can be rebuilt from the cluster's worker ignition; the control plane cannot.
                    protect=args.protect and vm.role == "control-plane",
                ),
            )
            self.machines[vm.name] = machine
            if vm.role in CLUSTER_ROLES:
                # One running node after the other: each roll starts once the previous one's is done, and
                # none starts after a failed one. A node whose VM this deployment creates is no cluster's
                # node yet: its roll's create gives it what the clone cannot (its vGPU) without a drain, and
                # it neither waits nor is waited for (a chain through every new node would make a new lab's
                # `up` take one engine step and two state checkpoints per node after its last VM).
                running = args.deployed_vms is None or f"{name}-{vm.name}" in args.deployed_vms
                roll = NodeRoll(
                    f"{name}-{vm.name}-roll", vm_id=machine.moid, vm_name=vm.name, role=vm.role,
                    cpus=vm.cpus, memory_mb=memory_mb(vm), memory_reservation_mb=reservation_mb,
                    hardware_version=plan.hardware_version, vgpu_profile=vm.vgpu_profile,
                    drain_timeout_s=args.drain_timeout_s, new_vm=not running,
                    opts=pulumi.ResourceOptions(
                        parent=self, deleted_with=machine, provider=args.roll_provider,
                        depends_on=[previous_roll] if running and previous_roll is not None else []))
                self.rolls[vm.name] = roll
                if running:
                    previous_roll = roll
            summary[vm.name] = pulumi.Output.from_input({
                "role": vm.role,
                "host": vm.host,
                "managementAddress": vm.management_address,
                "rdmaAddress": vm.rdma_address,
                "vgpuProfile": vm.vgpu_profile,
            })

        workers = [vm for vm in plan.vms if vm.role == "worker"]
        if plan.worker_placement == "spread":
            self._spread(name, [vm.name for vm in workers], plan.worker_host_count, cluster.id)
        else:
            self._keep_on_hosts(name, workers, host_ids, cluster.id)

        self.vm_summary = pulumi.Output.all(**summary) if summary else pulumi.Output.from_input({})
        self.register_outputs({"vms": self.vm_summary})

    def _spread(self, name: str, workers: list[str], host_count: int, cluster_id: pulumi.Input[str]) -> None:
        """Round-robin placement: anti-affinity rules over consecutive workers (spread_groups)."""
        for i, group in enumerate(spread_groups(workers, host_count)):
            rule = f"{name}-workers-spread-{i + 1}"
            vsphere.ComputeClusterVmAntiAffinityRule(
                rule,
                name=rule,
                compute_cluster_id=cluster_id,
                virtual_machine_ids=[self.machines[w].id for w in group],
                opts=pulumi.ResourceOptions(parent=self),
            )

    def _keep_on_hosts(self, name: str, workers: list[PlannedVm], host_ids: Mapping[str, pulumi.Input[str]],
                       cluster_id: pulumi.Input[str]) -> None:
        """Placement per worker (`workers.hosts`): per worker host with workers, a VM group of its
        workers, a host group of the host and a should-run-on rule between them. Adding or removing a
        worker changes its own host's VM group and nothing else; anti-affinity groups of consecutive
        workers would shift with every removal. A should rule, not a must: HA may still restart the
        VMs elsewhere when the host fails."""
        on_host: dict[str, list[str]] = {}
        for vm in workers:
            on_host.setdefault(vm.host, []).append(vm.name)
        child = pulumi.ResourceOptions(parent=self)
        for host, names in on_host.items():
            prefix = f"{name}-{resource_slug(host)}"
            vm_group = vsphere.ComputeClusterVmGroup(
                f"{prefix}-workers", name=f"{prefix}-workers", compute_cluster_id=cluster_id,
                virtual_machine_ids=[self.machines[w].id for w in names], opts=child)
            host_group = vsphere.ComputeClusterHostGroup(
                f"{prefix}-host", name=f"{prefix}-host", compute_cluster_id=cluster_id,
                host_system_ids=[host_ids[host]], opts=child)
            vsphere.ComputeClusterVmHostRule(
                f"{prefix}-placement", name=f"{prefix}-placement", compute_cluster_id=cluster_id,
                vm_group_name=vm_group.name, affinity_host_group_name=host_group.name, mandatory=False,
                opts=child)


def _customization(vm: PlannedVm, domain: str, rdma_prefix: int) -> vsphere.VirtualMachineCloneCustomizeArgs:
    """Guest customization for templates without ignition/cloud-init: DHCP (reserved) on the
    management NIC, the planned static address on the PVRDMA NIC."""
    nics = [vsphere.VirtualMachineCloneCustomizeNetworkInterfaceArgs()]
    if vm.rdma_address:
        nics.append(vsphere.VirtualMachineCloneCustomizeNetworkInterfaceArgs(
            ipv4_address=vm.rdma_address, ipv4_netmask=rdma_prefix))
    return vsphere.VirtualMachineCloneCustomizeArgs(
        linux_options=vsphere.VirtualMachineCloneCustomizeLinuxOptionsArgs(host_name=vm.name, domain=domain),
        network_interfaces=nics,
    )


def _intent(vm: PlannedVm, plan: LabVmsPlan) -> dict:
    """What the policy pack reads about a VM (docs/resource-contract.md)."""
    nics = [{"network": plan.management_host_network if vm.role != "worker" else plan.management_port_group,
             "adapterType": MANAGEMENT_ADAPTER, "subnet": plan.management_cidr}]
    if vm.rdma_address:
        nics.append({"network": plan.rdma_port_group, "adapterType": PVRDMA_ADAPTER, "subnet": plan.rdma_cidr})
    return {
        "name": vm.name, "role": vm.role, "host": vm.host, "cpus": vm.cpus, "memoryGb": vm.memory_gb,
        "diskGb": vm.disk_gb, "managementAddress": vm.management_address, "rdmaAddress": vm.rdma_address,
        "vgpuProfile": vm.vgpu_profile, "nics": nics,
    }
