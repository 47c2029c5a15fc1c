"""tools.up_gate: the up workflow stops on every disruptive effect (replace, delete, reboot, migrate,
network) in make diff's verdict and in the real preview's steps, unless the dispatch input names it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools import up_gate

VM = "vsphere:index/virtualMachine:VirtualMachine"
VM_URN = f"urn:pulumi:lab::gpu-lab::gpu-lab:vsphere:LabVms${VM}::vms-w01"
PG_URN = ("urn:pulumi:lab::gpu-lab::gpu-lab:vsphere:RoceFabric$vsphere:index/distributedPortGroup:"
          "DistributedPortGroup::roce-management-pg")


def _vm(**inputs):
    base = {"name": "w01", "numCpus": 4, "memory": 24576, "datastoreId": "datastore-a", "resourcePoolId": "rp",
            "networkInterfaces": [{"networkId": "pg-1", "adapterType": "vmxnet3"}]}
    return {"type": VM, "urn": VM_URN, "inputs": {**base, **inputs}}


def _update(old, new, keys):
    return {"op": "update", "urn": old["urn"], "oldState": old, "newState": new,
            "detailedDiff": {k: {"kind": "update", "inputDiff": True} for k in keys}, "diffReasons": keys}


# The shape of `pulumi preview --json` (pulumi/pulumi pkg/display/json.go, PreviewDigest and PreviewStep:
# op, urn, oldState/newState with their inputs, detailedDiff keyed by property path, diffReasons).
PREVIEW = {"steps": [
    {"op": "same", "urn": "urn:pulumi:lab::gpu-lab::command:remote:Command::a"},
    {"op": "update", "urn": "urn:pulumi:lab::gpu-lab::command:remote:Command::b", "diffReasons": ["create"]},
    {"op": "create-replacement", "urn": "urn:pulumi:lab::gpu-lab::command:remote:Command::c",
     "replaceReasons": ["triggers"]},
    {"op": "replace", "urn": "urn:pulumi:lab::gpu-lab::command:remote:Command::c", "replaceReasons": ["triggers"]},
    {"op": "delete-replaced", "urn": "urn:pulumi:lab::gpu-lab::command:remote:Command::c"},
    {"op": "delete", "urn": "urn:pulumi:lab::gpu-lab::command:remote:Command::d"},
]}


def _write(tmp_path, document, name="preview.json"):
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def test_preview_steps_that_replace_or_delete_stop_the_update(tmp_path, capsys):
    path = _write(tmp_path, PREVIEW)
    assert up_gate.main(["preview", str(path)]) == 1
    captured = capsys.readouterr()
    assert "replace: urn:pulumi:lab::gpu-lab::command:remote:Command::c (replace of triggers)" in captured.out
    assert "delete: urn:pulumi:lab::gpu-lab::command:remote:Command::d (delete)" in captured.out
    assert "::b" not in captured.out  # a Command's rerun is not gated
    assert "stopped on replace, delete" in captured.err and "allow_effects" in captured.err
    assert up_gate.main(["preview", str(path), "--allow", "replace"]) == 1  # delete still stops
    assert up_gate.main(["preview", str(path), "--allow", "replace,delete"]) == 0


@pytest.mark.parametrize(("old", "new", "keys", "effects"), [
    # terraform-provider-vsphere powers a VM off for more CPUs without cpu_hot_add_enabled
    (_vm(), _vm(numCpus=8), ["numCpus"], ["reboot"]),
    # ... but not with it: an update the lab does not feel
    (_vm(cpuHotAddEnabled=True), _vm(cpuHotAddEnabled=True, numCpus=8), ["numCpus"], []),
    # resourceVSphereVirtualMachineUpdateLocation: a storage vMotion
    (_vm(), _vm(datastoreId="datastore-b"), ["datastoreId"], ["migrate"]),
    (_vm(), _vm(resourcePoolId="rp2"), ["resourcePoolId"], ["migrate"]),
    # a NIC's network
    (_vm(), _vm(networkInterfaces=[{"networkId": "pg-2", "adapterType": "vmxnet3"}]),
     ["networkInterfaces[0].networkId"], ["network"]),
    # both at once, named together
    (_vm(), _vm(numCpus=2, datastoreId="datastore-b"), ["numCpus", "datastoreId"], ["reboot", "migrate"]),
])
def test_a_preview_update_tells_reboot_migration_and_network_from_its_keys(tmp_path, capsys, old, new, keys, effects):
    step = _update(old, new, keys)
    assert up_gate.preview_step_effects(step) == effects
    path = _write(tmp_path, {"steps": [step]})
    assert up_gate.main(["preview", str(path)]) == (1 if effects else 0)
    out = capsys.readouterr().out
    if effects:
        assert f"{', '.join(effects)}: {VM_URN} (update of {', '.join(sorted(keys))})" in out
        assert up_gate.main(["preview", str(path), "--allow", ",".join(effects)]) == 0


def test_a_port_group_vlan_in_the_preview_is_network(tmp_path):
    old = {"type": "vsphere:index/distributedPortGroup:DistributedPortGroup", "urn": PG_URN, "inputs": {"vlanId": 7}}
    new = {**old, "inputs": {"vlanId": 0}}
    assert up_gate.preview_step_effects(_update(old, new, ["vlanId"])) == ["network"]


def test_a_vgpu_profile_change_in_the_preview_is_a_reboot():
    old = {"type": "pulumi-python:dynamic:Resource", "urn": "urn:pulumi:lab::gpu-lab::pulumi-python:dynamic:Resource::v",
           "inputs": {"kind": "vsphere-vm-roll", "vgpuProfile": "grid_v100-16c"}}
    new = {**old, "inputs": {"kind": "vsphere-vm-roll", "vgpuProfile": "grid_v100-8c"}}
    assert up_gate.preview_step_effects(_update(old, new, ["vgpuProfile"])) == ["reboot"]


def test_make_diffs_verdict_names_resources_and_effects(tmp_path, capsys):
    path = tmp_path / "diff.json"
    path.write_text(json.dumps({"changes": [{"type": "t", "name": "n", "op": "update", "keys": [], "effects": []}]}))
    assert up_gate.main(["diff", str(path)]) == 0
    for effect in ("reboot", "migrate", "network"):
        path.write_text(json.dumps({"changes": [
            {"type": VM, "name": "vms-w01", "op": "update", "keys": ["k"], "effects": [effect]},
            {"type": "command:remote:Command", "name": "c", "op": "update", "keys": ["create"], "effects": ["rerun"]}]}))
        assert up_gate.main(["diff", str(path)]) == 1
        out = capsys.readouterr().out
        assert f"{effect}: {VM} vms-w01 (update of k)" in out and " c " not in out
        assert up_gate.main(["diff", str(path), "--allow", effect]) == 0
    path.write_text(json.dumps({"changes": [{"type": "t", "name": "n", "op": "delete", "keys": [], "effects": []}]}))
    assert up_gate.main(["diff", str(path)]) == 1
    assert up_gate.main(["diff", str(tmp_path / "missing.json")]) == 2


def test_a_refused_step_stops_whatever_is_allowed(tmp_path, capsys):
    path = _write(tmp_path, {"changes": [{"type": VM, "name": "vms-m03", "op": "delete", "keys": [],
                                          "effects": ["delete", "refused"]}],
                             "refused": [{"type": VM, "name": "vms-m03", "op": "delete", "reason": "protected"}]},
                  "diff.json")
    assert up_gate.main(["diff", str(path), "--allow", ",".join(up_gate.GATED)]) == 1
    captured = capsys.readouterr()
    assert f"delete, refused: {VM} vms-m03 (delete)" in captured.out and "protect" in captured.err


def test_an_unknown_effect_in_the_dispatch_input_is_bad_input(tmp_path, capsys):
    path = _write(tmp_path, PREVIEW)
    assert up_gate.main(["preview", str(path), "--allow", "replace,everything"]) == 2
    assert "unknown effect 'everything'" in capsys.readouterr().err


def _workflow(name):
    import yaml

    from tools.up_gate import __file__ as here

    data = yaml.safe_load((__import__("pathlib").Path(here).parents[1] / ".github" / "workflows" / name).read_text())
    return data.get("on", data.get(True)), data["jobs"]


def test_pull_requests_show_make_diff_against_their_base_in_the_summary():
    _, jobs = _workflow("preview.yml")
    job = jobs["day-2-diff"]
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    assert "make diff STACK=lab BASE=${{ github.event.pull_request.base.sha }}" in runs
    assert "GITHUB_STEP_SUMMARY" in runs and job["steps"][0]["with"]["fetch-depth"] == 0
    assert job["runs-on"] == "ubuntu-latest"  # offline: no lab runner, no secrets


def test_up_gates_on_the_built_commit_and_the_real_preview_then_records_the_commit():
    on, jobs = _workflow("up.yml")
    allow = on["workflow_dispatch"]["inputs"]["allow_effects"]
    assert allow["type"] == "string" and allow["default"] == ""
    # the input reaches the gate through the environment, never spliced into the script; the offline
    # diff's gate is in scripts/up-steps.sh (tests/tools/test_up_steps.py runs it)
    steps = jobs["up"]["steps"]
    gates = [step for step in steps if "tools.up_gate" in step.get("run", "") or "up-steps.sh offline-diff" in
             step.get("run", "")]
    assert len(gates) == 2
    for step in gates:
        assert step["env"]["ALLOW"] == "${{ github.event_name == 'workflow_dispatch' && inputs.allow_effects || '' }}"
        assert "inputs." not in step["run"]
    script = (Path(__file__).resolve().parents[2] / "scripts" / "up-steps.sh").read_text()
    assert 'pulumi stack tag get "$TAG" --stack "$STACK"' in script and "TAG=gpu-lab:commit" in script
    assert '-m tools.up_gate diff build/up-diff/diff.json --allow "${ALLOW:-}"' in script
    assert '--allow "$ALLOW"' in gates[1]["run"]
    runs = [step.get("run", "") for step in steps]
    order = [next(i for i, run in enumerate(runs) if needle in run) for needle in (
        "scripts/up-steps.sh offline-diff",
        "pulumi preview --stack lab --policy-pack policies --policy-pack-config policies/config.up.json",
        "tools.up_gate preview preview.json", "pulumi up --stack lab --yes", "pulumi stack tag set gpu-lab:commit")]
    assert order == sorted(order)


# ---------------------------------------------------------------- effect:glob, rerun-acceptance, restart

JOB = "kubernetes:kubeflow.org/v2beta1:MPIJob"
DIFF = {"changes": [
    {"type": VM, "name": "vms-w01", "op": "replace", "keys": ["clone"], "effects": ["replace"]},
    {"type": "kubernetes:batch/v1:Job", "name": "addons-job-ib-write-bw-server", "op": "replace", "keys": ["spec"],
     "effects": ["replace"]},
    {"type": JOB, "name": "addons-mpijob-nccl-allreduce-rdma", "op": "replace", "keys": ["spec"],
     "effects": ["rerun-acceptance"]},
]}


def test_an_allowance_scoped_by_a_glob_lets_only_those_resources_through(tmp_path, capsys):
    path = _write(tmp_path, DIFF, "diff.json")
    # the acceptance re-run is no gated effect; the Job's replace is allowed; the VM's is not
    assert up_gate.main(["diff", str(path), "--allow", "replace:addons-job-*"]) == 1
    err = capsys.readouterr().err
    assert "stopped on replace (1 resource(s) not allowed)" in err
    assert up_gate.main(["diff", str(path), "--allow", "replace:addons-job-*,replace:vms-w0?"]) == 0
    assert up_gate.main(["diff", str(path), "--allow", "replace"]) == 0  # a bare effect: every resource
    assert [name for name, _ in up_gate.from_diff(DIFF)] == [
        f"{VM} vms-w01 (replace of clone)", "kubernetes:batch/v1:Job addons-job-ib-write-bw-server (replace of spec)"]


@pytest.mark.parametrize("item", ["replace:", "everything:addons-*", ":vms-*", "rerun-acceptance"])
def test_a_bad_allowance_item_is_bad_input_with_the_form(tmp_path, capsys, item):
    assert up_gate.main(["diff", str(_write(tmp_path, DIFF, "diff.json")), "--allow", item]) == 2
    assert "each item is EFFECT or EFFECT:GLOB" in capsys.readouterr().err


def _mpijob(workers: int, nodes: list[str], batches: int = 100) -> dict:
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
            "metadata": {"name": "nccl", "labels": {"gpu-lab.io/acceptance": "nccl"}},
            "spec": {"mpiReplicaSpecs": {
                "Launcher": {"template": {"spec": {"containers": [
                    {"command": ["mpirun", "--allow-run-as-root", "-np", str(workers), "--batches", str(batches)]}]}}},
                "Worker": {"replicas": workers, "template": {"spec": {"affinity": {"nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "In", "values": nodes}]}]}}}}}}}}}


def test_the_real_previews_replacement_of_an_acceptance_job_for_a_new_worker_is_no_gated_effect():
    urn = f"urn:pulumi:lab::gpu-lab::{JOB}::addons-mpijob-nccl"
    old = {"type": JOB, "inputs": _mpijob(4, ["w01", "w02", "w03", "w04"])}

    def step(new):
        return {"op": "replace", "urn": urn, "oldState": old, "newState": {"type": JOB, "inputs": new}}
    assert up_gate.preview_step_effects(step(_mpijob(5, ["w01", "w02", "w03", "w04", "w05"]))) == []
    # anything else changed with it (here the benchmark's own arguments) is a replacement as before
    assert up_gate.preview_step_effects(step(_mpijob(5, ["w01", "w02", "w03", "w04", "w05"], 50))) == ["replace"]


def test_a_gpu_operator_upgrade_in_the_preview_is_a_restart():
    release = "kubernetes:helm.sh/v3:Release"
    old = {"type": release, "urn": f"urn:pulumi:lab::gpu-lab::{release}::addons-gpu-operator",
           "inputs": {"chart": "gpu-operator", "version": "v26.7.0", "values": {}}}
    new = {**old, "inputs": {**old["inputs"], "version": "v26.8.0"}}
    assert up_gate.preview_step_effects(_update(old, new, ["version"])) == ["restart"]


@pytest.mark.parametrize("type_, old, new, keys, effects", [
    ("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy", {"spec": {"ofedDriver": {"version": "1"}}},
     {"spec": {"ofedDriver": {"version": "2"}}}, ["spec.ofedDriver.version"], ["restart"]),
    ("kubernetes:nvidia.com/v1:ClusterPolicy", {"spec": {"driver": {"version": "1"}}},
     {"spec": {"driver": {"version": "2"}}}, ["spec.driver.version"], ["restart"]),
    ("kubernetes:apps/v1:DaemonSet", {"spec": {"template": {"spec": {"containers": [{"image": "a"}]}}}},
     {"spec": {"template": {"spec": {"containers": [{"image": "b"}]}}}}, ["spec.template.spec.containers[0].image"],
     ["restart"]),
    # OnDelete: the new template waits for each pod to be deleted (kubernetes.io, "Perform a Rolling Update on a
    # DaemonSet", DaemonSet update strategy)
    ("kubernetes:apps/v1:DaemonSet", {"spec": {"template": {"spec": {}}, "updateStrategy": {"type": "OnDelete"}}},
     {"spec": {"template": {"spec": {"nodeName": "x"}}, "updateStrategy": {"type": "OnDelete"}}},
     ["spec.template.spec.nodeName"], []),
    ("kubernetes:apps/v1:DaemonSet", {"metadata": {"labels": {"a": "1"}}}, {"metadata": {"labels": {"a": "2"}}},
     ["metadata.labels.a"], []),
    ("kubernetes:helm.sh/v3:Release", {"skipAwait": False}, {"skipAwait": True}, ["skipAwait"], []),
])
def test_what_restarts_an_add_ons_pods(type_, old, new, keys, effects):
    urn = f"urn:pulumi:lab::gpu-lab::{type_}::x"
    step = _update({"type": type_, "urn": urn, "inputs": old}, {"type": type_, "urn": urn, "inputs": new}, keys)
    assert up_gate.preview_step_effects(step) == effects
