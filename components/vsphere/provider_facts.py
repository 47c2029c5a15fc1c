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

FORCE_NEW: dict[str, tuple[str, ...]] = {
    # vsphere/resource_vsphere_virtual_machine.go: replace_trigger is ForceNew (the clone block: VM_CLONE_IN_PLACE)
    VIRTUAL_MACHINE: ("replaceTrigger",),
    # vsphere/resource_vsphere_distributed_virtual_switch.go: datacenter_id, folder
    "vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch": ("datacenterId", "folder"),
    # vsphere/resource_vsphere_distributed_port_group.go: distributed_virtual_switch_uuid
    "vsphere:index/distributedPortGroup:DistributedPortGroup": ("distributedVirtualSwitchUuid",),
    # vsphere/resource_vsphere_vnic.go: host, netstack
    "vsphere:index/vnic:Vnic": ("host", "netstack"),
    # vsphere/resource_vsphere_compute_cluster_vm_anti_affinity_rule.go: compute_cluster_id
    "vsphere:index/computeClusterVmAntiAffinityRule:ComputeClusterVmAntiAffinityRule": ("computeClusterId",),
}
"""Per bridged vSphere type, the inputs whose change replaces the resource (ForceNew in its schema)."""
