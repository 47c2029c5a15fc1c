"""What the program sends to pulumi-vsphere, held against what the provider accepts.

The program's own mocks accept any property and any value; the provider does not. Each fact
below comes from the provider: property names from the pulumi_vsphere Python SDK's input
classes (pulumi_vsphere/_inputs.py and the resource modules, the SDK pinned in
requirements.txt), allowed values from the validators in terraform-provider-vsphere, which
pulumi-vsphere wraps (paths cited per test).
"""

from __future__ import annotations

import inspect

import builders
import pulumi_vsphere
import pytest

from components.vsphere import vms as lab_vms
from tools.mockrun import run_program

VM = "vsphere:index/virtualMachine:VirtualMachine"
VDS = "vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch"
PORT_GROUP = "vsphere:index/distributedPortGroup:DistributedPortGroup"
VNIC = "vsphere:index/vnic:Vnic"
ANTI_AFFINITY = "vsphere:index/computeClusterVmAntiAffinityRule:ComputeClusterVmAntiAffinityRule"
VM_GROUP = "vsphere:index/computeClusterVmGroup:ComputeClusterVmGroup"
HOST_GROUP = "vsphere:index/computeClusterHostGroup:ComputeClusterHostGroup"
VM_HOST_RULE = "vsphere:index/computeClusterVmHostRule:ComputeClusterVmHostRule"
PLACEMENT = {VM_GROUP, HOST_GROUP, VM_HOST_RULE}
"""Only with vsphere.workers.hosts; the anti-affinity rules only without it."""

# terraform-provider-vsphere, vsphere/internal/virtualdevice/virtual_machine_network_interface_subresource.go,
# networkInterfaceSubresourceTypeAllowedValues (StringInSlice, case-sensitive). The description text
# next to it says "vrdma"; the validator refuses that.
PROVIDER_ADAPTER_TYPES = {"e1000", "e1000e", "sriov", "vmxnet3", "vmxnet3vrdma"}
# pulumi_vsphere 4.18.2, virtual_machine.py, hardware_version: "Allows versions within ranges: 4, 7-11,
# 13-15, 17-22"; PVRDMA needs 13 or later (VMware vSphere Networking, "PVRDMA Support").
PROVIDER_HARDWARE_VERSIONS = {4, *range(7, 12), *range(13, 16), *range(17, 23)}
# terraform-provider-vsphere, vsphere/distributed_virtual_switch_helper.go, dvsVersions.
PROVIDER_DVS_VERSIONS = {"5.0.0", "5.1.0", "5.5.0", "6.0.0", "6.5.0", "6.6.0", "7.0.0", "7.0.2", "7.0.3",
                         "8.0.0", "8.0.3"}
# terraform-provider-vsphere, vsphere/host_virtual_switch_structure.go,
# linkDiscoveryProtocolConfigProtocolAllowedValues / ...OperationAllowedValues.
PROVIDER_LLDP_PROTOCOLS = {"cdp", "lldp"}
PROVIDER_LLDP_OPERATIONS = {"none", "listen", "advertise", "both"}
# terraform-provider-vsphere, vsphere/resource_vsphere_vnic.go, netstack description.
PROVIDER_NETSTACKS = {"defaultTcpipStack", "vmotion", "provisioning"}

# Input class of each resource and of the nested blocks the program fills.
ARGS = {
    VM: pulumi_vsphere.VirtualMachineArgs,
    VDS: pulumi_vsphere.DistributedVirtualSwitchArgs,
    PORT_GROUP: pulumi_vsphere.DistributedPortGroupArgs,
    VNIC: pulumi_vsphere.VnicArgs,
    ANTI_AFFINITY: pulumi_vsphere.ComputeClusterVmAntiAffinityRuleArgs,
    VM_GROUP: pulumi_vsphere.ComputeClusterVmGroupArgs,
    HOST_GROUP: pulumi_vsphere.ComputeClusterHostGroupArgs,
    VM_HOST_RULE: pulumi_vsphere.ComputeClusterVmHostRuleArgs,
}
NESTED = {
    (VM, "networkInterfaces"): pulumi_vsphere.VirtualMachineNetworkInterfaceArgs,
    (VM, "disks"): pulumi_vsphere.VirtualMachineDiskArgs,
    (VM, "clone"): pulumi_vsphere.VirtualMachineCloneArgs,
    (VM, "clone.customize"): pulumi_vsphere.VirtualMachineCloneCustomizeArgs,
    (VM, "clone.customize.linuxOptions"): pulumi_vsphere.VirtualMachineCloneCustomizeLinuxOptionsArgs,
    (VM, "clone.customize.networkInterfaces"): pulumi_vsphere.VirtualMachineCloneCustomizeNetworkInterfaceArgs,
    (VDS, "hosts"): pulumi_vsphere.DistributedVirtualSwitchHostArgs,
    (VNIC, "ipv4"): pulumi_vsphere.VnicIpv4Args,
}


def property_names(args_class) -> set[str]:
    """The wire (camelCase) names of an SDK input class's properties."""
    return {getattr(member.fget, "_pulumi_name", name) for name, member in inspect.getmembers(args_class)
            if isinstance(member, property)}


def required_names(args_class) -> set[str]:
    """Wire names of the properties the SDK input class requires (its keyword arguments without default)."""
    wire = {name: getattr(member.fget, "_pulumi_name", name) for name, member in inspect.getmembers(args_class)
            if isinstance(member, property)}
    params = inspect.signature(args_class.__init__).parameters
    return {wire[p] for p, d in params.items() if d.default is inspect.Parameter.empty and p in wire}


@pytest.fixture(scope="module")
def lab():
    return run_program(builders.lab_stack())


@pytest.fixture(scope="module")
def lab_customized():
    """The lab without OpenShift: the VMs are customized by vSphere (the clone.customize block)."""
    config = builders.lab_stack()
    for key in ("gpu-lab:openshift", "gpu-lab:addons"):
        config.pop(key, None)
    return run_program(config)


@pytest.fixture(scope="module")
def lab_placed():
    """The lab with each worker's host written (vsphere.workers.hosts): placement rules per host."""
    config = builders.lab_stack()
    config["gpu-lab:vsphere"]["workers"]["hosts"] = ["esx01", "esx02", "esx03", "esx01"]
    return run_program(config)


RUNS = ["lab", "lab_customized", "lab_placed"]
TYPES_SENT = {"lab": set(ARGS) - PLACEMENT, "lab_customized": set(ARGS) - PLACEMENT,
              "lab_placed": set(ARGS) - {ANTI_AFFINITY}}


def unknown_keys(resource_type: str, props: dict, prefix: str = "") -> list[str]:
    known = property_names(NESTED[(resource_type, prefix)] if prefix else ARGS[resource_type])
    found = []
    for key, value in props.items():
        path = f"{prefix}.{key}" if prefix else key
        if key not in known:
            found.append(path)
            continue
        nested = [value] if isinstance(value, dict) else value if isinstance(value, list) else []
        if (resource_type, path) in NESTED:
            for item in nested:
                found += unknown_keys(resource_type, item, path)
    return found


@pytest.mark.parametrize("run_name", RUNS)
def test_every_property_the_program_sends_is_one_the_provider_has(run_name, request):
    run = request.getfixturevalue(run_name)
    checked = set()
    for r in run.resources:
        if r.type in ARGS:
            assert unknown_keys(r.type, r.plain()) == [], f"{r.name} ({r.type})"
            checked.add(r.type)
    assert checked == TYPES_SENT[run_name]


def missing_required(resource_type: str, props: dict, prefix: str = "") -> list[str]:
    args_class = NESTED[(resource_type, prefix)] if prefix else ARGS[resource_type]
    missing = [f"{prefix}.{k}" if prefix else k for k in required_names(args_class) if props.get(k) in (None, "")]
    for kind, path in NESTED:
        parent, _, key = path.rpartition(".")
        if kind != resource_type or parent != prefix:
            continue
        value = props.get(key)
        for item in value if isinstance(value, list) else [value] if isinstance(value, dict) else []:
            missing += missing_required(resource_type, item, path)
    return missing


@pytest.mark.parametrize("run_name", RUNS)
def test_every_property_the_provider_requires_is_sent(run_name, request):
    # Required = the SDK input class's keyword arguments without a default (e.g. VirtualMachineArgs
    # resource_pool_id, VirtualMachineNetworkInterfaceArgs network_id, VirtualMachineDiskArgs label).
    run = request.getfixturevalue(run_name)
    for r in run.resources:
        if r.type in ARGS:
            assert missing_required(r.type, r.plain()) == [], f"{r.name} ({r.type})"


def test_the_customization_block_is_checked_too(lab_customized):
    vm = next(r.plain() for r in lab_customized.of_type(VM) if r.plain()["name"] == "w01")
    assert vm["clone"]["customize"]["linuxOptions"]["hostName"] == "w01"


@pytest.mark.parametrize("run_name", ["lab", "lab_customized"])
def test_every_adapter_type_the_program_emits_is_one_the_provider_accepts(run_name, request):
    run = request.getfixturevalue(run_name)
    emitted = {nic.get("adapterType") for r in run.of_type(VM) for nic in r.plain()["networkInterfaces"]}
    assert emitted == {lab_vms.MANAGEMENT_ADAPTER, lab_vms.PVRDMA_ADAPTER}
    assert emitted <= PROVIDER_ADAPTER_TYPES
    # each worker's second NIC is the PVRDMA one ("vmxnet3vrdma" in the provider's schema)
    adapters = {r.plain()["name"]: [nic["adapterType"] for nic in r.plain()["networkInterfaces"]]
                for r in run.of_type(VM)}
    assert {adapters[w][1] for w in builders.WORKERS} == {"vmxnet3vrdma"}


def test_hardware_version_is_left_to_the_template_unless_set(lab):
    # The provider refuses to lower a VM's hardware version (terraform-provider-vsphere,
    # vsphere/internal/helper/virtualmachine/virtual_machine_helper.go, ValidateHardwareVersion:
    # "cannot downgrade virtual machine hardware version"); a fixed default would break newer templates.
    for r in lab.of_type(VM):
        assert "hardwareVersion" not in r.plain(), r.name


def test_a_hardware_version_that_is_set_is_sent_and_the_provider_accepts_it():
    config = builders.lab_stack()
    config["gpu-lab:vsphere"]["hardwareVersion"] = 19
    run = run_program(config)
    versions = {r.plain()["hardwareVersion"] for r in run.of_type(VM)}
    assert versions == {19} and versions <= PROVIDER_HARDWARE_VERSIONS


def test_distributed_switch_values_are_ones_the_provider_accepts(lab):
    (vds,) = [r.plain() for r in lab.of_type(VDS)]
    assert vds["version"] in PROVIDER_DVS_VERSIONS
    assert vds["linkDiscoveryProtocol"] in PROVIDER_LLDP_PROTOCOLS
    assert vds["linkDiscoveryOperation"] in PROVIDER_LLDP_OPERATIONS
    # every active/standby uplink must be one of the switch's uplinks (the provider's DVS uplink policy)
    assert set(vds["activeUplinks"]) | set(vds["standbyUplinks"]) <= set(vds["uplinks"])


def test_vmk_values_are_ones_the_provider_accepts(lab):
    for r in lab.of_type(VNIC):
        vnic = r.plain()
        assert vnic["netstack"] in PROVIDER_NETSTACKS
        # portgroup (standard switch) and distributed_switch_port/distributed_port_group exclude each other
        assert "portgroup" not in vnic
        assert vnic["distributedSwitchPort"] and vnic["distributedPortGroup"]


def test_a_static_mac_is_only_sent_with_use_static_mac(lab):
    # mac_address "Can only be manually set if use_static_mac is true" (terraform-provider-vsphere,
    # virtual_machine_network_interface_subresource.go).
    for r in lab.of_type(VM):
        for nic in r.plain()["networkInterfaces"]:
            if nic.get("macAddress"):
                assert nic.get("useStaticMac") is True, r.name


def test_anti_affinity_rules_name_at_least_two_vms(lab):
    # An anti-affinity rule keeps its virtual_machine_ids apart; one VM alone has nothing to be kept from.
    rules = [r.plain() for r in lab.of_type(ANTI_AFFINITY)]
    assert rules and all(len(rule["virtualMachineIds"]) >= 2 for rule in rules)


def test_memory_locked_to_max_comes_with_a_full_reservation(lab):
    # The provider sends memoryReservationLockedToMax only when memory_reservation equals memory, and
    # silently false otherwise (terraform-provider-vsphere, vsphere/virtual_machine_config_structure.go,
    # getMemoryReservationLockedToMax): a vGPU VM would then lose its full reservation on a memory change.
    locked = [r.plain() for r in lab.of_type(VM) if r.plain().get("memoryReservationLockedToMax")]
    assert locked and all(vm["memoryReservation"] == vm["memory"] for vm in locked)


def test_a_placement_rule_names_groups_of_the_same_cluster(lab_placed):
    # vm_group_name and affinity_host_group_name name groups of the rule's cluster
    # (terraform-provider-vsphere, resource_vsphere_compute_cluster_vm_host_rule.go); mandatory false
    # is a "should" rule, which HA may break when a host fails.
    groups = {r.plain()["name"]: r.plain() for r in lab_placed.resources if r.type in (VM_GROUP, HOST_GROUP)}
    for rule in (r.plain() for r in lab_placed.of_type(VM_HOST_RULE)):
        assert rule["mandatory"] is False
        for key in ("vmGroupName", "affinityHostGroupName"):
            assert groups[rule[key]]["computeClusterId"] == rule["computeClusterId"]
