"""tools.diff: the engine's and the providers' rules, each on a small before/after pair, then the
program run twice under mocks (tools.mockrun.run_program) and the `make diff` command line.

Each rule's test names the source the rule encodes (repository, file, function); tools/diff/
cites the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tools import diff
from tools.diff import UNKNOWN, Planned, create_urn, steps_between

REPO = Path(__file__).resolve().parents[2]
PROJECT, STACK = "gpu-lab", "test"


def res(name: str, type_: str = "command:remote:Command", inputs: dict | None = None, *, parent: str = "",
        custom: bool = True, outputs: dict | None = None, **options) -> Planned:
    inputs = inputs or {}
    return Planned(urn=create_urn(name, type_, parent, PROJECT, STACK), type=type_, name=name, parent=parent,
                   custom=custom, provider=options.pop("provider", ""), id=f"{name}-id", inputs=inputs,
                   outputs={**inputs, **(outputs or {})}, **options)


def one(base: list[Planned], new: list[Planned]) -> dict:
    entries = [s.entry() for s in steps_between(base, new) if s.op in diff.OPS]
    assert len(entries) == 1, entries
    return entries[0]


def op_effects(old: Planned, new: Planned) -> tuple[str, list[str]]:
    entry = one([old], [new])
    return entry["op"], entry["effects"]


# ---------------------------------------------------------------- pulumi-command v1.2.1


CMD = {"connection": {"host": "127.0.0.1"}, "create": "apply", "delete": "revert", "triggers": ["a"]}


def test_command_triggers_replace_and_the_new_create_runs():
    # provider/pkg/provider/common/inputs.go: triggers is the one replaceOnChanges input
    entry = one([res("c", inputs=CMD)], [res("c", inputs={**CMD, "triggers": ["b"]})])
    assert entry == {"type": "command:remote:Command", "name": "c", "op": "replace", "keys": ["triggers"],
                     "effects": ["replace", "rerun"]}


def test_command_other_inputs_update_and_run_create_without_an_update_script():
    # remote/commandController.go Update: `update` if set, else `create`
    assert op_effects(res("c", inputs=CMD), res("c", inputs={**CMD, "create": "apply v2"})) == ("update", ["rerun"])
    with_update = {**CMD, "update": "reapply"}
    assert op_effects(res("c", inputs=with_update),
                      res("c", inputs={**with_update, "connection": {"host": "127.0.0.2"}})) == ("update", ["rerun"])


def test_command_update_runs_nothing_when_neither_script_is_set():
    only_delete = {"connection": {"host": "127.0.0.1"}, "delete": "revert"}
    assert op_effects(res("c", inputs=only_delete),
                      res("c", inputs={**only_delete, "delete": "revert v2"})) == ("update", [])


def test_command_create_reruns_and_delete_deletes():
    assert one([], [res("c", inputs=CMD)])["effects"] == ["rerun"]
    assert one([], [res("c", inputs={"delete": "x"})])["effects"] == []
    assert one([res("c", inputs=CMD)], [])["op"] == "delete" and one([res("c", inputs=CMD)], [])["effects"] == ["delete"]


COPY = {"connection": {"host": "127.0.0.1"}, "remotePath": "/srv/a", "triggers": ["h1"],
        "source": {"asset": "StringAsset", "size": 1, "sha256": "aa"}}


def test_copy_to_remote_copies_again_only_for_a_new_source_or_path():
    # remote/copyController.go Update: needCopy = hash or remotePath changed; copy.go: triggers replace
    t = "command:remote:CopyToRemote"
    assert op_effects(res("f", t, COPY), res("f", t, {**COPY, "connection": {"host": "127.0.0.2"}})) == ("update", [])
    assert op_effects(res("f", t, COPY), res("f", t, {**COPY, "source": {**COPY["source"], "sha256": "bb"}})) == (
        "update", ["rerun"])
    assert op_effects(res("f", t, COPY), res("f", t, {**COPY, "triggers": ["h2"]})) == ("replace", ["replace", "rerun"])


# ---------------------------------------------------------------- terraform-provider-vsphere v2.16.1

VM_T = "vsphere:index/virtualMachine:VirtualMachine"
VM = {"name": "w01", "numCpus": 4, "memory": 16384, "annotation": "",
      "clone": {"templateUuid": "t1", "timeout": 30, "customize": {"networkInterfaces": [{}], "linuxOptions": {
          "hostName": "w01"}}},
      "extraConfig": {"guestinfo.ignition.config.data": "abc", "guestinfo.afterburn.initrd.network-kargs": "ip=1"}}


def vm(**changes) -> Planned:
    return res("vms-w01", VM_T, {**VM, **changes})


@pytest.mark.parametrize(("changes", "expected"), [
    # resourceVSphereVirtualMachineCustomizeDiff: any clone.0 change forces a new VM ...
    ({"clone": {**VM["clone"], "templateUuid": "t2"}}, ("replace", ["replace"])),
    ({"clone": {**VM["clone"], "customize": {**VM["clone"]["customize"], "linuxOptions": {"hostName": "x"}}}},
     ("replace", ["replace"])),
    # ... except clone.0.timeout and clone.0.customize.0.network_interface
    ({"clone": {**VM["clone"], "timeout": 60}}, ("update", [])),
    ({"clone": {**VM["clone"], "customize": {**VM["clone"]["customize"], "networkInterfaces": [{"ipv4Address": "1"}]}}},
     ("update", [])),
    # virtual_machine_config_structure.go: replace_trigger is ForceNew
    ({"replaceTrigger": "2"}, ("replace", ["replace"])),
    # expandExtraConfig: a reboot unless extra_config_reboot_required is false
    ({"extraConfig": {**VM["extraConfig"], "guestinfo.ignition.config.data": "new"}}, ("update", ["reboot"])),
    ({"extraConfig": {}, "extraConfigRebootRequired": False}, ("update", [])),
    # expandCPUCountConfig / expandMemorySizeConfig: hot add decides, less memory always reboots
    ({"numCpus": 8}, ("update", ["reboot"])),
    ({"memory": 8192}, ("update", ["reboot"])),
    # getWithRestart: guest_id, firmware, ...; annotation is a plain update
    ({"firmware": "bios"}, ("update", ["reboot"])),
    ({"annotation": "day 2"}, ("update", [])),
])
def test_virtual_machine_force_new_and_reboot_list(changes, expected):
    assert op_effects(vm(), vm(**changes)) == expected


def test_virtual_machine_hot_add_avoids_the_reboot_only_when_it_was_already_on():
    hot = vm(cpuHotAddEnabled=True, memoryHotAddEnabled=True)
    assert op_effects(hot, vm(cpuHotAddEnabled=True, memoryHotAddEnabled=True, numCpus=8, memory=32768)) == (
        "update", [])
    # switching hot add on is itself a restart (getBoolWithRestart)
    assert op_effects(vm(), vm(cpuHotAddEnabled=True, numCpus=8)) == ("update", ["reboot"])


@pytest.mark.parametrize(("type_", "inputs", "changed", "op"), [
    ("vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch", {"datacenterId": "dc", "maxMtu": 9000},
     {"datacenterId": "dc2"}, "replace"),
    ("vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch", {"datacenterId": "dc", "maxMtu": 9000},
     {"maxMtu": 1500}, "update"),
    ("vsphere:index/distributedPortGroup:DistributedPortGroup", {"distributedVirtualSwitchUuid": "u", "vlanId": 1},
     {"distributedVirtualSwitchUuid": "v"}, "replace"),
    ("vsphere:index/distributedPortGroup:DistributedPortGroup", {"distributedVirtualSwitchUuid": "u", "vlanId": 1},
     {"vlanId": 2}, "update"),
    ("vsphere:index/vnic:Vnic", {"host": "h", "netstack": "defaultTcpipStack", "mtu": 9000}, {"netstack": "vmotion"},
     "replace"),
    ("vsphere:index/vnic:Vnic", {"host": "h", "netstack": "defaultTcpipStack", "mtu": 9000}, {"mtu": 1500}, "update"),
    ("vsphere:index/computeClusterVmAntiAffinityRule:ComputeClusterVmAntiAffinityRule",
     {"computeClusterId": "c", "virtualMachineIds": ["a", "b"]}, {"virtualMachineIds": ["a", "b", "c"]}, "update"),
    ("vsphere:index/computeClusterVmAntiAffinityRule:ComputeClusterVmAntiAffinityRule",
     {"computeClusterId": "c", "virtualMachineIds": ["a", "b"]}, {"computeClusterId": "d"}, "replace"),
])
def test_bridged_force_new_inputs(type_, inputs, changed, op):
    # resource_vsphere_{distributed_virtual_switch,distributed_port_group,vnic,compute_cluster_vm_anti_affinity_rule}.go
    assert op_effects(res("x", type_, inputs), res("x", type_, {**inputs, **changed}))[0] == op


# ---------------------------------------------------------------- pulumi-kubernetes

JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "n", "labels": {"a": "1"}},
       "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i:1"}]}}}}


@pytest.mark.parametrize(("type_", "before", "after", "op"), [
    # provider/pkg/provider/diff.go: Job .spec.template replaces, labels update
    ("kubernetes:batch/v1:Job", JOB, {**JOB, "spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "i:2"}]}}}}, "replace"),
    ("kubernetes:batch/v1:Job", JOB, {**JOB, "metadata": {**JOB["metadata"], "labels": {"a": "2"}}}, "update"),
    # .metadata.name / .namespace replace every kind, a custom resource's spec updates
    ("kubernetes:kubeflow.org/v2beta1:MPIJob", {"metadata": {"name": "m"}, "spec": {"x": 1}},
     {"metadata": {"name": "m2"}, "spec": {"x": 1}}, "replace"),
    ("kubernetes:kubeflow.org/v2beta1:MPIJob", {"metadata": {"name": "m"}, "spec": {"x": 1}},
     {"metadata": {"name": "m"}, "spec": {"x": 2}}, "update"),
    # a Secret's data and a ConfigMap's data replace without enableSecretMutable / enableConfigMapMutable
    ("kubernetes:core/v1:Secret", {"metadata": {"name": "s"}, "data": {"k": "a"}},
     {"metadata": {"name": "s"}, "data": {"k": "b"}}, "replace"),
    ("kubernetes:core/v1:ConfigMap", {"metadata": {"name": "c"}, "data": {"k": "a"}},
     {"metadata": {"name": "c"}, "data": {"k": "b"}}, "replace"),
    ("kubernetes:core/v1:ServiceAccount", {"metadata": {"name": "s", "labels": {}}},
     {"metadata": {"name": "s", "labels": {"x": "y"}}}, "update"),
    # helm_release.go Diff: only .name and .namespace replace
    ("kubernetes:helm.sh/v3:Release", {"name": "r", "chart": "c", "values": {"a": 1}},
     {"name": "r", "chart": "c", "values": {"a": 2}}, "update"),
    ("kubernetes:helm.sh/v3:Release", {"name": "r", "chart": "c"}, {"name": "r2", "chart": "c"}, "replace"),
])
def test_kubernetes_force_new_fields(type_, before, after, op):
    assert op_effects(res("k", type_, before), res("k", type_, after))[0] == op


def test_a_secret_updates_in_place_with_enable_secret_mutable():
    provider = res("k8s", "pulumi:providers:kubernetes", {"kubeconfig": "x", "enableSecretMutable": True})
    before = res("s", "kubernetes:core/v1:Secret", {"metadata": {"name": "s"}, "data": {"k": "a"}}, provider=provider.urn)
    after = res("s", "kubernetes:core/v1:Secret", {"metadata": {"name": "s"}, "data": {"k": "b"}}, provider=provider.urn)
    assert one([provider, before], [provider, after])["op"] == "update"


def kubeconfig(server: str, user: str = "admin") -> str:
    return yaml.safe_dump({"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                           "clusters": [{"name": "k", "cluster": {"server": server}}],
                           "users": [{"name": "u", "user": {"token": user}}]})


def k8s_provider(config: str) -> Planned:
    r = res("k8s", "pulumi:providers:kubernetes", {"kubeconfig": config})
    r.facts["activeCluster"] = diff._active_cluster(r.inputs)
    return r


def test_kubernetes_provider_diff_config_replaces_only_for_another_cluster():
    # provider.go DiffConfig: a replace when the active cluster of the kubeconfig changed
    old = k8s_provider(kubeconfig("https://api.a:6443"))
    assert op_effects(old, k8s_provider(kubeconfig("https://api.a:6443", user="other"))) == ("update", [])
    assert op_effects(old, k8s_provider(kubeconfig("https://api.b:6443"))) == ("replace", ["replace"])


def test_a_replaced_provider_replaces_its_resources_and_an_unknown_kubeconfig_replaces_the_provider():
    # step_generator.go providerChanged: the new provider's DiffConfig decides; DiffConfig: a computed
    # kubeconfig replaces. The kubeconfig comes from a Command whose triggers change.
    ign = res("ignition", inputs=CMD, outputs={"stdout": "kubeconfig-text"})
    provider = res("k8s", "pulumi:providers:kubernetes", {"kubeconfig": "kubeconfig-text"},
                   property_dependencies={"kubeconfig": [ign.urn]})
    ns = res("ns", "kubernetes:core/v1:Namespace", {"metadata": {"name": "n"}}, provider=provider.urn)
    new_ign = res("ignition", inputs={**CMD, "triggers": ["b"]}, outputs={"stdout": "kubeconfig-text"})
    steps = {s.name: (s.op, s.keys) for s in steps_between([ign, provider, ns], [new_ign, provider, ns])}
    assert steps == {"ignition": ("replace", ["triggers"]), "k8s": ("replace", ["kubeconfig"]), "ns": ("replace", [])}


# ---------------------------------------------------------------- our dynamic providers


def dynamic(name: str, provider, **inputs) -> Planned:
    from pulumi.dynamic.dynamic import serialize_provider

    r = res(name, diff.DYNAMIC_TYPE, {"kind": provider.kind, "server": "vc", "user": "u",
                                      "password": {diff.SECRET: "p"}, **inputs})
    r.provider_pickle = serialize_provider(provider)
    return r


def test_dynamic_resources_are_diffed_by_their_own_provider():
    # components/dynamic/provider.py _SettingProvider.diff: target keys replace, the value updates
    from components.dynamic.host_settings import AdvancedOptionProvider
    from components.dynamic.vgpu import VgpuProfileProvider

    option = AdvancedOptionProvider()
    before = dynamic("opt", option, hostName="h", key="Net.PVRDMAVmknic", value="vmk1")
    assert op_effects(before, dynamic("opt", option, hostName="h", key="Net.PVRDMAVmknic", value="vmk2")) == (
        "update", [])
    assert op_effects(before, dynamic("opt", option, hostName="h2", key="Net.PVRDMAVmknic", value="vmk1")) == (
        "replace", ["replace"])
    # the connection a state written before 0.2 keeps in the resource (now its provider's) is no change
    old_state = dynamic("opt", option, hostName="h", key="Net.PVRDMAVmknic", value="vmk1")
    old_state.inputs.update(server="vc", user="u", password={diff.SECRET: "q"})
    assert steps_between([old_state], [before]) == []
    # a lab built before the roll held the vGPU drops its vGPU resource: the delete (today's provider code,
    # unpickled by module and name) leaves the vGPU on the VM, so it is no effect on the lab
    old = dynamic("vms-w01-vgpu", VgpuProfileProvider(), vmId="vm-1", vmName="w01", profile="grid_v100-8c")
    (retired,) = steps_between([old], [])
    assert (retired.op, retired.effects) == ("delete", [])
    assert any("leaves the vGPU on its VM" in note for note in retired.notes)
    from components.dynamic.roll import NodeRollProvider

    roll = NodeRollProvider()
    base = {"vmId": "vm-1", "vmName": "w01", "cpus": 4, "memoryMb": 1024, "vgpuProfile": "grid_v100-8c"}
    before = dynamic("roll", roll, **base)
    for key, value in (("cpus", 8), ("memoryMb", 2048), ("vgpuProfile", "grid_v100-16c"), ("hardwareVersion", 20)):
        after = dynamic("roll", roll, **{**base, key: value})
        assert op_effects(before, after) == ("update", ["reboot"]), key
    # its drain timeout: an update, no reboot; another VM: replaced, no reboot (a new roll)
    assert op_effects(before, dynamic("roll", roll, vmId="vm-1", vmName="w01", cpus=4, memoryMb=1024,
                                      vgpuProfile="grid_v100-8c", drainTimeoutS=60)) == ("update", [])
    assert op_effects(before, dynamic("roll", roll, vmId="vm-2", vmName="w01", cpus=4, memoryMb=1024,
                                      vgpuProfile="grid_v100-8c")) == ("replace", ["replace"])


def test_a_replaced_vm_makes_its_rolls_target_unknown_and_so_replaced():
    from components.dynamic.roll import NodeRollProvider

    machine = res("vms-w01", VM_T, VM, outputs={"moid": "vm-4242"})
    roll = dynamic("roll", NodeRollProvider(), vmId="vm-4242", vmName="w01", cpus=4, memoryMb=1024,
                   vgpuProfile="p")
    roll.property_dependencies = {"vmId": [machine.urn]}
    replaced = res("vms-w01", VM_T, {**VM, "clone": {**VM["clone"], "templateUuid": "t2"}}, outputs={"moid": "vm-4242"})
    steps = {s.name: (s.op, s.effects) for s in steps_between([machine, roll], [replaced, roll])}
    # the new roll finds the new VM as the stack made it: no power cycle of its own
    assert steps == {"vms-w01": ("replace", ["replace"]), "roll": ("replace", ["replace"])}


# ---------------------------------------------------------------- the engine's options


def test_ignore_changes_paths_incl_nested_keys():
    # step_generator.go processIgnoreChanges: the old value at each path
    changed = {"extraConfig": {**VM["extraConfig"], "guestinfo.ignition.config.data": "new"}}
    assert one([vm()], [vm(**changed)])["effects"] == ["reboot"]
    assert steps_between([vm()], [res("vms-w01", VM_T, {**VM, **changed}, ignore_changes=["extraConfig"])]) == []
    nested = res("vms-w01", VM_T, {**VM, **changed}, ignore_changes=['extraConfig["guestinfo.ignition.config.data"]'])
    assert steps_between([vm()], [nested]) == []
    other = res("vms-w01", VM_T, {**VM, "extraConfig": {**VM["extraConfig"], "guestinfo.afterburn.initrd.network-kargs":
                                                        "ip=2"}},
                ignore_changes=['extraConfig["guestinfo.ignition.config.data"]'])
    assert one([vm()], [other])["effects"] == ["reboot"]
    # connection.password style paths, and an unknown value ignored too
    cmd = res("c", inputs={**CMD, "connection": {"host": "127.0.0.1", "password": UNKNOWN}},
              ignore_changes=["connection.password"])
    assert steps_between([res("c", inputs={**CMD, "connection": {"host": "127.0.0.1", "password": "a"}})], [cmd]) == []


def test_replace_on_changes_and_components():
    # applyReplaceOnChanges: a changed path under the option's path replaces
    forced = res("x", "vsphere:index/vnic:Vnic", {"mtu": 1500}, replace_on_changes=["mtu"])
    assert op_effects(res("x", "vsphere:index/vnic:Vnic", {"mtu": 9000}), forced) == ("replace", ["replace"])
    # diff(): a component (no provider) is an update when its inputs differ, nothing more
    assert op_effects(res("sw", "gpu-lab:switch:SpectrumSwitch", {"ecnMinKb": 150}, custom=False),
                      res("sw", "gpu-lab:switch:SpectrumSwitch", {"ecnMinKb": 160}, custom=False)) == ("update", [])


def test_protect_refuses_a_replace_and_a_delete():
    # generateStepsFromDiff: new.Protect && old.Protect refuses a replace; DeleteStep.Apply refuses a delete
    old = res("c", inputs=CMD, protect=True)
    steps = steps_between([old], [res("c", inputs={**CMD, "triggers": ["b"]}, protect=True)])
    assert [(s.op, bool(s.refused)) for s in steps] == [("replace", True)]
    assert [(s.op, bool(s.refused)) for s in steps_between([old], [])] == [("delete", True)]
    # unprotecting and replacing in one update is allowed
    steps = steps_between([old], [res("c", inputs={**CMD, "triggers": ["b"]})])
    assert [(s.op, s.refused) for s in steps] == [("replace", "")]
    document = diff.document(steps_between([old], []), "0" * 40, STACK)
    # the refusal is an effect too (diff.json's changes carry it, the up gate stops on it)
    assert document["changes"] == [{"type": "command:remote:Command", "name": "c", "op": "delete", "keys": [],
                                    "effects": ["delete", "refused"]}]
    assert document["refused"][0]["op"] == "delete"


def test_retain_on_delete_and_deleted_with_destroy_nothing():
    # step.go DeleteStep.Apply: RetainOnDelete and a deletedWith resource being deleted skip the provider's Delete
    assert one([res("c", inputs=CMD, retain_on_delete=True)], [])["effects"] == []
    parent = res("vm", VM_T, VM)
    child = res("vgpu", "command:remote:Command", CMD, deleted_with=parent.urn)
    assert {e["name"]: e["effects"] for e in [s.entry() for s in steps_between([parent, child], [])]} == {
        "vm": ["delete"], "vgpu": []}


def test_aliases_keep_a_moved_resource_and_without_one_it_is_deleted_and_created():
    # step_generator.go generateAliases / collapseAliasToUrn
    old = res("switch-config", inputs=CMD)
    renamed = res("sw01-config", inputs=CMD, aliases=[{"name": "switch-config"}])
    steps = steps_between([old], [renamed])
    assert [(s.op, s.moved_from) for s in steps] == [("same", old.urn)]
    assert diff.document(steps, "0" * 40, STACK)["changes"] == []
    assert sorted(e["op"] for e in [s.entry() for s in steps_between([old], [res("sw01-config", inputs=CMD)])]) == [
        "create", "delete"]


def test_a_child_follows_its_parents_alias():
    # inheritedChildAlias: the child under the parent's old URN, the parent's name prefix renamed
    old_parent = res("sw", "gpu-lab:switch:SpectrumSwitch", {}, custom=False)
    old_child = res("sw-config", inputs=CMD, parent=old_parent.urn)
    new_parent = res("leaf", "gpu-lab:switch:SpectrumSwitch", {}, custom=False, aliases=[{"name": "sw"}])
    new_child = res("leaf-config", inputs=CMD, parent=new_parent.urn)
    assert diff.document(steps_between([old_parent, old_child], [new_parent, new_child]), "0" * 40, STACK)[
        "changes"] == []
    # a parent of another type moves the child's URN: without aliases it is a delete and a create
    other = res("sw", "gpu-lab:switch:Leaf", {}, custom=False)
    moved = res("sw-config", inputs=CMD, parent=other.urn)
    ops = sorted((s.type, s.op) for s in steps_between([old_parent, old_child], [other, moved]))
    assert ops == [("command:remote:Command", "create"), ("command:remote:Command", "delete"),
                   ("gpu-lab:switch:Leaf", "create"), ("gpu-lab:switch:SpectrumSwitch", "delete")]


def test_moving_to_the_explicit_dynamic_provider_changes_nothing_another_provider_replaces():
    # step_generator.go providerChanged; components/dynamic/provider.py explicit_provider: pulumi-python has
    # no DiffConfig, so moving from the default provider keeps the resources
    from components.dynamic.host_settings import FirewallRulesetProvider

    before = dynamic("fw", FirewallRulesetProvider(), hostName="h", ruleset="pvrdma", enabled=True)
    pyvmomi = res("pyvmomi", "pulumi:providers:pulumi-python", {})
    after = dynamic("fw", FirewallRulesetProvider(), hostName="h", ruleset="pvrdma", enabled=True)
    after.provider = pyvmomi.urn
    assert [(s.name, s.op) for s in steps_between([before], [pyvmomi, after])] == [("pyvmomi", "create")]
    k8s = res("k8s", "pulumi:providers:kubernetes", {"kubeconfig": "x"})
    ns = res("ns", "kubernetes:core/v1:Namespace", {"metadata": {"name": "n"}})
    moved = res("ns", "kubernetes:core/v1:Namespace", {"metadata": {"name": "n"}}, provider=k8s.urn)
    assert {s.name: s.op for s in steps_between([ns], [k8s, moved])} == {"k8s": "create", "ns": "replace"}


def test_paths_parse_like_the_engine():
    assert diff.parse_path('extraConfig["guestinfo.ignition.config.data"]') == (
        "extraConfig", "guestinfo.ignition.config.data")
    assert diff.parse_path("triggers[*]") == ("triggers", "*")
    assert diff.parse_path("spec.containers[0].image") == ("spec", "containers", 0, "image")
    assert diff.contains(("triggers", "*"), ("triggers", 3)) and not diff.contains(("triggers", "*"), ("triggers",))


def test_a_dependency_change_alone_is_state_only():
    # pulumi/pulumi pkg/resource/deploy/step_generator.go: the diff compares inputs (and the provider);
    # a registration whose dependencies alone changed is a `same` step that writes them into the state.
    node = res("node")
    job = res("job", "kubernetes:batch/v1:Job", {"spec": {}}, dependencies=[node.urn, "urn:k8s-provider"])
    moved_to_provider = res("job", "kubernetes:batch/v1:Job", {"spec": {}}, dependencies=["urn:k8s-provider"])
    steps = steps_between([node, job], [node, moved_to_provider])
    assert [s.entry() for s in steps if s.op in diff.OPS] == []
    document = diff.document(steps, "base", STACK)
    assert document["changes"] == []
    assert document["stateOnly"] == [{"type": "kubernetes:batch/v1:Job", "name": "job", "keys": ["dependencies"]}]
    # a recording without dependencies (a baseline) is not read as a change
    unrecorded = res("job", "kubernetes:batch/v1:Job", {"spec": {}})
    assert diff.document(steps_between([node, unrecorded], [node, moved_to_provider]), "base", STACK)["stateOnly"] == []


def test_the_harness_still_plans_the_last_release(tmp_path):
    # `make diff BASE=v<last release>` plans that release's own components/ with this checkout's tools
    # (tools/plan_tree.py): a harness that needs something the release's components lack fails there
    import json
    import subprocess
    import sys

    from tools.releases import releases

    last = releases(REPO)[-1]
    archive = subprocess.run(["git", "-C", str(REPO), "archive", last.commit], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive.stdout, check=True)
    planned = subprocess.run([sys.executable, str(REPO / "tools" / "plan_tree.py"), str(tmp_path), "lab"],
                             cwd=tmp_path, capture_output=True, text=True)
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert any(r["type"].startswith("vsphere:") for r in json.loads(planned.stdout))
