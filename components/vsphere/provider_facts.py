"""What pulumi-vsphere does with an input change, written once: the components (`ignore_changes`,
what a roll replaces) and `make diff` (tools/diff/rules.py) both read it from here.

pulumi-vsphere v4.17 bridges terraform-provider-vsphere v2.16.1 (commit 6e5d67ea, the `upstream` of
pulumi-vsphere v4.17.0). Pulumi names come from pulumi-vsphere's provider/cmd/pulumi-resource-vsphere/
schema.json: snake_case becomes camelCase and list blocks are plural (network_interface ->
networkInterfaces, disk -> disks). Each fact names the terraform-provider-vsphere file it follows.
Nothing here imports the SDK: the policy pack and the tools read it as plain data.
"""

from __future__ import annotations

VIRTUAL_MACHINE = "vsphere:index/virtualMachine:VirtualMachine"
DISTRIBUTED_VIRTUAL_SWITCH = "vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch"
DISTRIBUTED_PORT_GROUP = "vsphere:index/distributedPortGroup:DistributedPortGroup"
VNIC = "vsphere:index/vnic:Vnic"
VM_ANTI_AFFINITY_RULE = "vsphere:index/computeClusterVmAntiAffinityRule:ComputeClusterVmAntiAffinityRule"
VM_GROUP = "vsphere:index/computeClusterVmGroup:ComputeClusterVmGroup"
HOST_GROUP = "vsphere:index/computeClusterHostGroup:ComputeClusterHostGroup"
VM_HOST_RULE = "vsphere:index/computeClusterVmHostRule:ComputeClusterVmHostRule"

VM_REBOOT_KEYS = frozenset({
    # vsphere/virtual_machine_config_structure.go: read with getWithRestart/getBoolWithRestart (and
    # getCoresPerSocket), which set reboot_required when they changed
    "guestId", "alternateGuestName", "efiSecureBootEnabled", "enableDiskUuid", "hvMode", "eptRviMode",
    "enableLogging", "vbsEnabled", "vvtdEnabled", "toolsUpgradePolicy", "runToolsScriptsAfterPowerOn",
    "runToolsScriptsAfterResume", "runToolsScriptsBeforeGuestStandby", "runToolsScriptsBeforeGuestShutdown",
    "runToolsScriptsBeforeGuestReboot", "numCoresPerSocket", "memoryHotAddEnabled", "cpuHotAddEnabled",
    "cpuHotRemoveEnabled", "swapPlacementPolicy", "firmware", "nestedHvEnabled", "cpuPerformanceCountersEnabled",
    # the same file, expandVAppConfig: any vapp change
    "vapp",
    # vsphere/resource_vsphere_virtual_machine.go: getEvcMode (evc_mode changed), applyVirtualDevices ->
    # NormalizeBus (SCSI/SATA/NVMe/IDE bus layout), the PCI passthrough, vTPM and video card devices
    "evcMode", "scsiType", "scsiControllerCount", "scsiBusSharing", "sataControllerCount", "nvmeControllerCount",
    "ideControllerCount", "pciDeviceIds", "vtpm", "videoCard",
})
"""A VM's inputs whose change alone power-cycles a running VM (Update shuts the VM down when
reboot_required is set and the VM is not powered off). The conditional ones (CPU and memory without
hot add, extra_config, hardware version, disks, NICs) are decided by tools/diff/rules.py,
`vm_reboot_reasons`, each citing the function it follows."""

VM_DISK_REBOOT_FIELDS = frozenset({"unitNumber", "controllerType", "diskMode", "writeThrough", "diskSharing"})
"""vsphere/internal/virtualdevice/virtual_machine_disk_subresource.go: a changed unit number or
controller (SetRestart), disk_mode, write_through or disk_sharing (GetWithRestart) of an existing disk."""

VM_CLONE_IN_PLACE = ("clone.timeout", "clone.customize.networkInterfaces")
"""vsphere/resource_vsphere_virtual_machine.go, resourceVSphereVirtualMachineCustomizeDiff: every other
changed key under clone.0 forces a new VM."""

FIRST_BOOT_INPUTS = [
    "clone",  # template and customization: a change would replace the VM (VM_CLONE_IN_PLACE)
    "extraConfig",  # ignition, cloud-init, static network kernel arguments: read at first boot, a change reboots
    # the template's guest OS, firmware and SCSI type follow the template; guest_id and firmware changes
    # reboot (getWithRestart in virtual_machine_config_structure.go), and a template change must not
    "guestId",
    "firmware",
    "scsiType",
]
"""What only a VM's first boot reads, which LabVms ignores after create (`ignore_changes`). Changing
them would do harm and no good on a running VM: pulumi-vsphere replaces a VM on any change under
`clone` (template, customization; VM_CLONE_IN_PLACE) and reboots it on a changed `extra_config`
(vsphere/virtual_machine_config_structure.go, expandExtraConfig: extra_config_reboot_required
defaults to true, force_power_off too), while the guest reads ignition, cloud-init and kernel
arguments only at first boot. So they reach new VMs only; `pulumi up --replace <urn>` rolls them to
an old one (docs/day2.md)."""

ROLLED_VM_SETTINGS: dict[str, tuple[str, ...]] = {
    # virtual_machine_config_structure.go, expandCPUCountConfig: more vCPUs without cpu hot add, or fewer,
    # set reboot_required
    "cpus": ("numCpus",),
    # the same file, expandMemorySizeConfig: more memory without memory hot add, or less
    "memoryMb": ("memory",),
    # follows the memory on a vGPU VM (all of it reserved, locked to the memory size)
    "memoryReservationMb": ("memoryReservation", "memoryReservationLockedToMax"),
    # resource_vsphere_virtual_machine.go, Update: upgrades the hardware version of a powered-off VM
    "hardwareVersion": ("hardwareVersion",),
    # no pulumi-vsphere input: a PCI passthrough device with a vmiop backing, which the roll adds
    "vgpuProfile": (),
}
"""A cluster node's VM settings that need the VM powered off: each NodeRoll key
(components/dynamic/roll.py, in the order it applies them) and the pulumi-vsphere inputs it covers. The
roll applies them one drained node at a time, and the VM keeps those inputs under `ignore_changes`
(components/vsphere/vms.py): pulumi-vsphere would power every VM of a group off at once. A key's first
input carries its value (`make diff` compares it with the roll's)."""

FORCE_NEW: dict[str, tuple[str, ...]] = {
    # replace_trigger is ForceNew (the clone block: VM_CLONE_IN_PLACE)
    VIRTUAL_MACHINE: ("replaceTrigger",),
    DISTRIBUTED_VIRTUAL_SWITCH: ("datacenterId", "folder"),
    DISTRIBUTED_PORT_GROUP: ("distributedVirtualSwitchUuid",),
    VNIC: ("host", "netstack"),
    VM_ANTI_AFFINITY_RULE: ("computeClusterId",),
    VM_GROUP: ("computeClusterId", "name"),
    HOST_GROUP: ("computeClusterId", "name"),
    VM_HOST_RULE: ("computeClusterId",),
}
"""Per bridged vSphere type, the inputs whose change replaces the resource (ForceNew in its schema,
SOURCES names the file)."""

SOURCES: dict[str, str] = {
    VIRTUAL_MACHINE: "vsphere/resource_vsphere_virtual_machine.go",
    DISTRIBUTED_VIRTUAL_SWITCH: "vsphere/resource_vsphere_distributed_virtual_switch.go",
    DISTRIBUTED_PORT_GROUP: "vsphere/resource_vsphere_distributed_port_group.go",
    VNIC: "vsphere/resource_vsphere_vnic.go",
    VM_ANTI_AFFINITY_RULE: "vsphere/resource_vsphere_compute_cluster_vm_anti_affinity_rule.go",
    VM_GROUP: "vsphere/resource_vsphere_compute_cluster_vm_group.go",
    HOST_GROUP: "vsphere/resource_vsphere_compute_cluster_host_group.go",
    VM_HOST_RULE: "vsphere/resource_vsphere_compute_cluster_vm_host_rule.go",
}
"""The terraform-provider-vsphere file whose schema and Update each type's facts follow."""

MIGRATE_INPUTS: dict[str, tuple[str, ...]] = {
    # resource_vsphere_virtual_machine.go, resourceVSphereVirtualMachineUpdateLocation: a changed
    # resource_pool_id, host_system_id or datastore_id relocates the running VM (compute or storage
    # vMotion); so does datastore_cluster_id or a disk's datastore_id
    # (internal/virtualdevice/virtual_machine_disk_subresource.go, DiskMigrateRelocateOperation)
    VIRTUAL_MACHINE: ("resourcePoolId", "hostSystemId", "datastoreId", "datastoreClusterId", "disks[*].datastoreId"),
}
"""Inputs whose in-place update moves a running VM: a vMotion the lab feels (vGPU VMs pause or stop,
every VM of the change moves at once)."""

NETWORK_INPUTS: dict[str, tuple[str, ...]] = {
    # resource_vsphere_virtual_machine.go via virtual_machine_network_interface_subresource.go: a NIC's
    # network_id (its backing), or a NIC added or removed
    VIRTUAL_MACHINE: ("networkInterfaces[*].networkId",),
    # resource_vsphere_distributed_virtual_switch.go with distributed_virtual_switch_structure.go: the
    # member hosts and their uplink pNICs (`host`, `devices`), the uplink names, and the default teaming
    # order (distributed_virtual_port_setting_structure.go)
    DISTRIBUTED_VIRTUAL_SWITCH: ("hosts", "uplinks", "activeUplinks", "standbyUplinks"),
    # resource_vsphere_distributed_port_group.go with the port settings of
    # distributed_virtual_port_setting_structure.go: the port group's VLAN and uplink teaming
    DISTRIBUTED_PORT_GROUP: ("vlanId", "vlanRanges", "portPrivateSecondaryVlanId", "activeUplinks",
                             "standbyUplinks"),
    # resource_vsphere_vnic.go, resourceVsphereNicUpdate -> updateVNic: a vmk's port group or switch port
    # and its addresses
    VNIC: ("portgroup", "distributedSwitchPort", "distributedPortGroup", "ipv4", "ipv6"),
}
"""Inputs whose in-place update moves a running VM's or host's traffic: the lab loses or changes
connectivity while the update applies (a NIC on another VLAN, an uplink swapped on every host)."""
