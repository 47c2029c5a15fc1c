"""The whole pack served over gRPC, started and driven the way the Pulumi CLI does (tools/policy_check.py)."""

import json
import os
import subprocess
import sys

import pytest

from policy_helpers import FIXTURES, PACK, ROOT, policy_check
from rules import ALL_POLICIES

M, A = "mandatory", "advisory"

EXPECTED = {
    "lab.json": set(),
    "preview-unknowns.json": set(),
    "broken-fabric.json": {
        ("vsphere-vds-no-lacp", "lab-fabric-vds", M),
        ("vsphere-rdma-mtu", "lab-fabric-vds", M),
        ("vsphere-rdma-mtu", "lab-fabric-vmk-esx02", M),
        ("vsphere-pvrdma-vds-single-uplink", "lab-fabric-vds", M),
        ("vsphere-rdma-host-ready", "lab-fabric", M),  # esx03 ruleset off, esx04 no vmk option
    },
    "broken-vms.json": {
        ("vsphere-pvrdma-hardware-version", "w02", M),
        ("vsphere-vgpu-memory-reserved", "w03", M),
        ("vsphere-vm-sizing", "w04", A),
        ("vsphere-workers-identical", "w04", M),
        ("vsphere-vm-sizing", "m02", A),
        ("vsphere-vm-one-nic-per-subnet", "m03", M),
        ("vsphere-pvrdma-nic-on-distributed-port-group", "lab-vms", M),
    },
    "broken-openshift.json": {
        ("openshift-three-control-plane-nodes", "pod1", M),
        ("openshift-lb-required-ports", "pod1", M),
        ("openshift-lb-no-bootstrap-after-install", "pod1", A),
        ("spectrum-ecn-min-below-max", "sw1", M),
        ("spectrum-pfc-priority-matches-hosts", "sw1", M),
    },
    "broken-workloads.json": {
        ("k8s-rdma-pod-ipc-lock", "addons-nccl-roce", M),  # no IPC_LOCK, and privileged
        ("k8s-gpu-limits", "addons-nvidia-smi", M),
        ("secrets-k8s-secret-data-is-secret", "addons-licensing", M),
        ("secrets-credentials-are-secret", "sw1-apply", M),
        ("secrets-credentials-are-secret", "lab-vms-vgpu-w01", M),
        ("command-connect-timeout", "sw1-apply", A),
    },
}
COUNTS = {"broken-fabric.json": 6, "broken-workloads.json": 7}  # where one rule speaks twice


@pytest.fixture(scope="module")
def reports():
    return {name: policy_check.check(policy_check.load_stack(FIXTURES / name), PACK) for name in EXPECTED}


@pytest.mark.parametrize("fixture", list(EXPECTED))
def test_each_stack_gets_exactly_its_violations(reports, fixture):
    report = reports[fixture]
    got = {(v.policy, v.resource, v.level) for v in report.verdicts}
    assert got == EXPECTED[fixture]
    assert len(report.verdicts) == COUNTS.get(fixture, len(EXPECTED[fixture]))


def test_messages_cross_the_wire_intact(reports):
    by_key = {(v.policy, v.resource): v for v in reports["broken-openshift.json"].verdicts}
    ecn = by_key[("spectrum-ecn-min-below-max", "sw1")]
    assert ecn.message == ("switch 'sw1' starts ECN marking at 1500 KB but its maximum is 150 KB; the minimum must "
                           "be below the maximum (the guide uses 150 / 1500)")
    assert ecn.description.startswith("The switch's ECN minimum threshold is below its maximum.")
    assert ecn.urn == "urn:pulumi:lab::gpu-lab::gpu-lab:switch:SpectrumSwitch::sw1"
    host = sorted(v.message for v in reports["broken-fabric.json"].verdicts if v.policy == "vsphere-rdma-host-ready")
    assert host == [
        "host esx03 does not enable the pvrdma firewall ruleset; PVRDMA traffic (port 28250) would be blocked",
        "host esx04 does not set the advanced option Net.PVRDMAVmknic; PVRDMA needs it to name the RDMA vmk"]


def test_secret_markers_reach_the_pack(reports):
    # lab.json carries the same passwords as secrets and passes; in broken-workloads they are plain text
    secret_verdicts = [v for v in reports["broken-workloads.json"].verdicts
                       if v.policy == "secrets-credentials-are-secret"]
    assert {v.message.split(" reaches")[0] for v in secret_verdicts} == {"connection.password", "password"}
    assert not any("switch-pass" in v.message or "vc-pass" in v.message
                   for r in reports.values() for v in r.verdicts)


def test_unknown_values_produce_no_preview_diagnostics(reports):
    # the SDK turns an unhandled unknown into an advisory "can't run policy ... during preview"
    assert reports["preview-unknowns.json"].verdicts == []


def test_the_server_describes_every_policy(reports):
    report = reports["lab.json"]
    assert report.pack["name"] == "gpu-lab"
    assert {(p["name"], p["enforcementLevel"]) for p in report.policies} == {
        (p.name, p.enforcement_level.value) for p in ALL_POLICIES}
    stack_policies = {p["name"] for p in report.policies if p["type"] == "stack"}
    assert "vsphere-rdma-host-ready" in stack_policies and "vsphere-vds-no-lacp" not in stack_policies


def _lab():
    return policy_check.load_stack(FIXTURES / "lab.json")


def test_policy_config_reaches_the_pack_through_configure():
    report = policy_check.check(_lab(), PACK, {"vsphere-rdma-mtu": {"minMtu": 9100},
                                               "command-connect-timeout": "mandatory",
                                               "spectrum-ecn-min-below-max": "disabled"})
    mtu = [v for v in report.verdicts if v.policy == "vsphere-rdma-mtu"]
    assert sorted(v.resource for v in mtu) == ["lab-fabric", "lab-fabric-vds", "lab-fabric-vmk-esx01",
                                               "lab-fabric-vmk-esx02", "lab-fabric-vmk-esx03",
                                               "lab-fabric-vmk-esx04"]
    assert {v.level for v in mtu} == {M}
    assert all("set 9100 or more" in v.message for v in mtu)


def test_enforcement_level_overrides_apply():
    stack = policy_check.load_stack(FIXTURES / "broken-vms.json")
    report = policy_check.check(stack, PACK, {"all": "advisory", "vsphere-vm-sizing": "mandatory"})
    levels = {(v.policy, v.level) for v in report.verdicts}
    assert ("vsphere-vm-sizing", M) in levels
    assert ("vsphere-pvrdma-hardware-version", A) in levels
    assert policy_check.check(stack, PACK, {"all": "disabled"}).verdicts == []


class _Recorder(policy_check.PackProcess):
    started: list = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _Recorder.started.append(self)


def test_invalid_config_fails_the_check_and_stops_the_pack(monkeypatch):
    _Recorder.started.clear()
    monkeypatch.setattr(policy_check, "PackProcess", _Recorder)
    with pytest.raises(policy_check.CheckError, match=r"vsphere-rdma-mtu: minMtu: 'big' is not of type 'integer'"):
        policy_check.check(_lab(), PACK, {"vsphere-rdma-mtu": {"minMtu": "big"}})
    [process] = _Recorder.started
    assert process.proc.poll() is not None, "the pack process must be stopped"


def test_a_pack_that_cannot_start_is_reported(tmp_path):
    (tmp_path / "PulumiPolicy.yaml").write_text(f"runtime:\n  name: python\n  options:\n"
                                                f"    virtualenv: {sys.prefix}\n")
    (tmp_path / "__main__.py").write_text("raise SystemExit('pack exploded on purpose')\n")
    with pytest.raises(policy_check.CheckError, match="did not report its port"):
        policy_check.check(_lab(), tmp_path)


def test_the_command_line_writes_json_and_sets_the_exit_status(tmp_path):
    out = tmp_path / "report.json"
    cmd = [sys.executable, str(ROOT / "tools" / "policy_check.py")]
    env = dict(os.environ)
    bad = subprocess.run(cmd + [str(FIXTURES / "broken-openshift.json"), "--out", str(out)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 1, bad.stderr
    assert "MANDATORY spectrum-ecn-min-below-max  sw1 (gpu-lab:switch:SpectrumSwitch)" in bad.stdout
    data = json.loads(out.read_text())
    assert data["summary"] == {"mandatory": 4, "advisory": 1}
    assert len(data["policies"]) == len(ALL_POLICIES)

    good = subprocess.run(cmd + [str(FIXTURES / "lab.json")], capture_output=True, text=True, env=env, timeout=120)
    assert good.returncode == 0, good.stderr
    assert "0 mandatory and 0 advisory violation(s)" in good.stdout

    broken_input = tmp_path / "bad.json"
    broken_input.write_text(json.dumps([{"type": "x:y:Z", "name": "a", "properties": {},
                                         "secretPaths": ["nope"]}]))
    failed = subprocess.run(cmd + [str(broken_input)], capture_output=True, text=True, env=env, timeout=120)
    assert failed.returncode == 2
    assert "property path 'nope' does not exist" in failed.stderr
