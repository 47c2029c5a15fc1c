"""VM rules on the compliant lab and on one-property mutations of it."""

import pytest
from plan_fixtures import planned_vm
from policy_helpers import find, props, violations

from rules import compute


def test_compliant_lab_passes_every_vm_rule(lab):
    for policy in compute.POLICIES:
        assert violations(policy, lab) == [], policy.name


# ---------------------------------------------------------------- hardware version


def test_old_hardware_on_a_pvrdma_vm_is_refused(lab):
    props(lab, "vms-w02")["hardwareVersion"] = 11
    assert violations(compute.pvrdma_hardware_version, lab) == [
        ("vms-w02", "VM 'w02' has a PVRDMA NIC on hardware version 11; PVRDMA needs 13 or later")]


def test_unset_hardware_version_keeps_the_template_s_and_passes(lab):
    # Without hardwareVersion the provider keeps the template's version (it refuses downgrades), and a
    # VirtualMachine's inputs cannot say which that is: the VM alone is not a violation.
    del props(lab, "vms-w04")["hardwareVersion"]
    props(lab, "vms")["hardwareVersion"] = None
    assert violations(compute.pvrdma_hardware_version, lab) == []


def test_template_too_old_for_pvrdma_is_refused_when_the_version_is_left_to_it(lab):
    props(lab, "vms")["hardwareVersion"] = None
    props(lab, "vms")["templateHardwareVersion"] = 11
    found = violations(compute.pvrdma_hardware_version, lab)
    assert [name for name, _ in found] == ["vms"] * 4
    assert found[0][1] == ("VM 'w01' has a PVRDMA NIC and keeps its template's hardware version 11; "
                           "PVRDMA needs 13 or later: set vsphere.hardwareVersion or upgrade the template")


def test_old_template_is_fine_when_the_vms_are_upgraded(lab):
    props(lab, "vms")["templateHardwareVersion"] = 11  # hardwareVersion 14 is set on the component
    assert violations(compute.pvrdma_hardware_version, lab) == []


def test_unknown_template_version_proves_nothing(lab):
    props(lab, "vms")["hardwareVersion"] = None
    props(lab, "vms").pop("templateHardwareVersion", None)  # the mocks' template lookup has none
    assert violations(compute.pvrdma_hardware_version, lab) == []


def test_vms_without_pvrdma_may_run_old_hardware(lab):
    props(lab, "vms-m01")["hardwareVersion"] = 10
    assert violations(compute.pvrdma_hardware_version, lab) == []


def test_hardware_threshold_comes_from_config(lab):
    found = violations(compute.pvrdma_hardware_version, lab, {"minHardwareVersion": 15})
    assert [name for name, _ in found] == ["vms-w01", "vms-w02", "vms-w03", "vms-w04"]


# ---------------------------------------------------------------- NIC adapter types


def test_adapter_type_the_provider_refuses_is_a_violation(lab):
    # pulumi-vsphere accepts e1000, e1000e, sriov, vmxnet3, vmxnet3vrdma (terraform-provider-vsphere,
    # vsphere/internal/virtualdevice/virtual_machine_network_interface_subresource.go); "vrdma" is refused.
    props(lab, "vms-w03")["networkInterfaces"][1]["adapterType"] = "vrdma"
    assert violations(compute.nic_adapter_type, lab) == [
        ("vms-w03", "VM 'w03' NIC 1 has adapter type 'vrdma'; pulumi-vsphere accepts e1000, e1000e, sriov, "
                     "vmxnet3, vmxnet3vrdma (PVRDMA is vmxnet3vrdma)")]


def test_every_provider_adapter_type_passes(lab):
    nics = props(lab, "vms-w03")["networkInterfaces"]
    for adapter in ("e1000", "e1000e", "sriov", "vmxnet3", "vmxnet3vrdma"):
        nics[1]["adapterType"] = adapter
        assert violations(compute.nic_adapter_type, lab) == []


# ---------------------------------------------------------------- vGPU memory


def test_vgpu_vm_without_full_reservation_is_refused(lab):
    props(lab, "vms-w03").update(memoryReservationLockedToMax=False, memoryReservation=8192)
    assert violations(compute.vgpu_memory_reserved, lab) == [(
        "vms-w03", "VM 'w03' has a vGPU but reserves 8192 of its 24576 MiB; set memoryReservation to the "
                    "full memory (or memoryReservationLockedToMax: true)")]


def test_locked_to_max_counts_as_fully_reserved(lab):
    props(lab, "vms-w03").update(memoryReservation=0, memoryReservationLockedToMax=True)
    assert violations(compute.vgpu_memory_reserved, lab) == []


def test_a_vgpu_given_by_the_nodes_roll_alone_is_enough(lab):
    for entry in props(lab, "vms")["vms"]:
        entry["vgpuProfile"] = None
    props(lab, "vms-w01")["memoryReservationLockedToMax"] = False
    del props(lab, "vms-w01")["memoryReservation"]
    [(name, message)] = violations(compute.vgpu_memory_reserved, lab)
    assert (name, message.split(";")[0]) == ("vms-w01", "VM 'w01' has a vGPU but reserves 0 of its 24576 MiB")


def test_vms_without_vgpu_need_no_reservation(lab):
    assert not props(lab, "vms-m01").get("memoryReservation") and not props(lab, "vms-m01").get(
        "memoryReservationLockedToMax")
    assert violations(compute.vgpu_memory_reserved, lab) == []


# ---------------------------------------------------------------- sizing


@pytest.mark.parametrize("vm, key, value, message", [
    ("vms-w02", "numCpus", 2, "worker VM 'w02' is below the guide's sizing: vCPUs 2 < 4"),
    ("vms-w02", "memory", 16384, "worker VM 'w02' is below the guide's sizing: memory 16384 MiB < 24576 MiB"),
    ("vms-m01", "memory", 8192,
     "control-plane VM 'm01' is below the guide's sizing: memory 8192 MiB < 16384 MiB"),
])
def test_undersized_vms_are_reported(lab, vm, key, value, message):
    props(lab, vm)[key] = value
    assert violations(compute.vm_sizing, lab) == [(vm, message)]


def test_small_disk_is_reported(lab):
    props(lab, "vms-m03")["disks"][0]["size"] = 40
    assert violations(compute.vm_sizing, lab) == [
        ("vms-m03", "control-plane VM 'm03' is below the guide's sizing: system disk 40 GB < 50 GB")]


def test_sizing_thresholds_come_from_config(lab):
    props(lab, "vms-w02")["memory"] = 16384
    assert violations(compute.vm_sizing, lab, {"workerMinMemoryGb": 16}) == []


def test_a_planned_vm_without_its_resource_is_judged_from_the_plan(lab):
    lab["resources"] = [r for r in lab["resources"] if r["name"] != "vms-w04"]
    planned_vm(lab, "w04")["memoryGb"] = 16
    assert violations(compute.vm_sizing, lab) == [
        ("vms", "worker VM 'w04' is below the guide's sizing: memory 16384 MiB < 24576 MiB")]


# ---------------------------------------------------------------- identical workers


def test_worker_with_other_cpu_count_is_refused(lab):
    props(lab, "vms-w03")["numCpus"] = 8
    assert violations(compute.workers_identical, lab) == [
        ("vms-w03", "worker 'w03' differs from 'w01': vCPUs 8 vs 4")]


def test_worker_with_other_vgpu_profile_is_refused(lab):
    props(lab, "vms-w02-roll")["vgpuProfile"] = "grid_v100-8c"
    assert violations(compute.workers_identical, lab) == [
        ("vms-w02", "worker 'w02' differs from 'w01': vGPU profile grid_v100-8c vs grid_v100-16c")]


def test_worker_with_other_nic_layout_is_refused(lab):
    props(lab, "vms-w04")["networkInterfaces"].pop()
    assert violations(compute.workers_identical, lab) == [
        ("vms-w04", "worker 'w04' differs from 'w01': NIC layout ['vmxnet3'] vs ['vmxnet3', 'vmxnet3vrdma']")]


def test_worker_differences_are_listed_together(lab):
    props(lab, "vms-w02").update(numCpus=8, memory=32768, memoryReservation=32768)
    [(name, message)] = violations(compute.workers_identical, lab)
    assert message == "worker 'w02' differs from 'w01': vCPUs 8 vs 4; memory MiB 32768 vs 24576"


def test_control_plane_vms_may_differ_from_workers(lab):
    assert find(lab, "vms-m01")["properties"]["memory"] != find(lab, "vms-w01")["properties"]["memory"]
    assert violations(compute.workers_identical, lab) == []
