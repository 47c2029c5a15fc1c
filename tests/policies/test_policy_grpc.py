"""The whole pack served over gRPC, started and driven the way the Pulumi CLI does (tools/policy_check.py)."""

import json
import os
import subprocess
import sys

import plan_fixtures as F
import pytest
from policy_helpers import PACK, ROOT, policy_check

from rules import ALL_POLICIES
from tools.mockrun import PLACEHOLDER

M, A = "mandatory", "advisory"
H, W, CP = F.H, F.W, F.CP

EXPECTED = {
    "lab": set(),
    "preview-unknowns": set(),
    "broken-fabric": {
        ("vsphere-vds-no-lacp", F.VDS, M),
        ("vsphere-rdma-mtu", F.VDS, M),
        ("vsphere-rdma-mtu", F.vmk(H[1]), M),
        ("vsphere-pvrdma-vds-single-uplink", F.VDS, M),
        ("vsphere-rdma-host-ready", F.FABRIC, M),  # one host's ruleset off, another without the vmk option
    },
    "broken-vms": {
        ("vsphere-pvrdma-hardware-version", F.vm(W[1]), M),
        ("vsphere-vgpu-memory-reserved", F.vm(W[2]), M),
        ("vsphere-vm-sizing", F.vm(W[3]), A),
        ("vsphere-workers-identical", F.vm(W[3]), M),
        ("vsphere-vm-sizing", F.vm(CP[1]), A),
        ("vsphere-vm-one-nic-per-subnet", F.vm(CP[2]), M),
        ("vsphere-pvrdma-nic-on-distributed-port-group", F.VMS, M),
    },
    "broken-openshift": {
        ("openshift-three-control-plane-nodes", F.OPENSHIFT, M),
        ("openshift-lb-required-ports", F.OPENSHIFT, M),
        ("openshift-lb-no-bootstrap-after-install", F.OPENSHIFT, A),
        ("spectrum-ecn-min-below-max", F.SWITCH, M),
        ("spectrum-pfc-priority-matches-hosts", F.SWITCH, M),
    },
    "broken-workloads": {
        ("k8s-rdma-pod-ipc-lock", F.RDMA_JOB, M),  # no IPC_LOCK, and privileged
        ("k8s-gpu-limits", F.GPU_JOB, M),
        ("secrets-k8s-secret-data-is-secret", F.LICENSING_SECRET, M),
        ("secrets-credentials-are-secret", F.SWITCH_COMMAND, M),
        ("secrets-credentials-are-secret", F.VCENTER_PROVIDER, M),
        ("command-connect-timeout", F.SWITCH_COMMAND, A),
        ("command-ssh-host-key-pinned", F.SWITCH_COMMAND, A),
    },
}
COUNTS = {"broken-fabric": 6, "broken-workloads": 8}  # where one rule speaks twice


@pytest.fixture(scope="module")
def stack_files(tmp_path_factory):
    """Each test stack (tests/plan_fixtures.py) as the JSON file tools/policy_check.py reads."""
    directory = tmp_path_factory.mktemp("policy-stacks")
    return {name: F.write(directory, name) for name in F.STACKS}


@pytest.fixture(scope="module")
def reports(stack_files):
    return {name: policy_check.check(policy_check.load_stack(stack_files[name]), PACK) for name in EXPECTED}


@pytest.mark.parametrize("fixture", list(EXPECTED))
def test_each_stack_gets_exactly_its_violations(reports, fixture):
    report = reports[fixture]
    got = {(v.policy, v.resource, v.level) for v in report.verdicts}
    assert got == EXPECTED[fixture]
    assert len(report.verdicts) == COUNTS.get(fixture, len(EXPECTED[fixture]))


def test_messages_cross_the_wire_intact(reports):
    by_key = {(v.policy, v.resource): v for v in reports["broken-openshift"].verdicts}
    ecn = by_key[("spectrum-ecn-min-below-max", F.SWITCH)]
    assert ecn.message == (f"switch '{F.SWITCH}' starts ECN marking at 1500 KB but its maximum is 150 KB; the minimum must "
                           "be below the maximum (the guide uses 150 / 1500)")
    assert ecn.description.startswith("The switch's ECN minimum threshold is below its maximum.")
    assert ecn.urn == F.find(F.lab(), F.SWITCH)["urn"]  # the program's own URN, as planned
    host = sorted(v.message for v in reports["broken-fabric"].verdicts if v.policy == "vsphere-rdma-host-ready")
    assert host == [
        f"host {H[2]} does not enable the pvrdma firewall ruleset; PVRDMA traffic (port 28250) would be blocked",
        f"host {H[3]} does not set the advanced option Net.PVRDMAVmknic; PVRDMA needs it to name the RDMA vmk"]


def test_secret_markers_reach_the_pack(reports):
    # lab carries the same passwords as secrets and passes; in broken-workloads they are plain text
    secret_verdicts = [v for v in reports["broken-workloads"].verdicts
                       if v.policy == "secrets-credentials-are-secret"]
    assert {v.message.split(" reaches")[0] for v in secret_verdicts} == {"connection.password", "vcenter:password"}
    assert not any(PLACEHOLDER in v.message for r in reports.values() for v in r.verdicts)


def test_unknown_values_produce_no_preview_diagnostics(reports):
    # the SDK turns an unhandled unknown into an advisory "can't run policy ... during preview"
    assert reports["preview-unknowns"].verdicts == []


def test_the_server_describes_every_policy(reports):
    report = reports["lab"]
    assert report.pack["name"] == "gpu-lab"
    assert {(p["name"], p["enforcementLevel"]) for p in report.policies} == {
        (p.name, p.enforcement_level.value) for p in ALL_POLICIES}
    stack_policies = {p["name"] for p in report.policies if p["type"] == "stack"}
    assert "vsphere-rdma-host-ready" in stack_policies and "vsphere-vds-no-lacp" not in stack_policies


def _lab():
    return policy_check.parse_stack(F.lab())


def test_policy_config_reaches_the_pack_through_configure():
    report = policy_check.check(_lab(), PACK, {"vsphere-rdma-mtu": {"minMtu": 9100},
                                               "command-connect-timeout": "mandatory",
                                               "spectrum-ecn-min-below-max": "disabled"})
    mtu = [v for v in report.verdicts if v.policy == "vsphere-rdma-mtu"]
    assert sorted(v.resource for v in mtu) == sorted([F.FABRIC, F.VDS, *map(F.vmk, H)])
    assert {v.level for v in mtu} == {M}
    assert all("set 9100 or more" in v.message for v in mtu)


def test_enforcement_level_overrides_apply():
    stack = policy_check.parse_stack(F.broken_vms())
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


def test_the_command_line_writes_json_and_sets_the_exit_status(tmp_path, stack_files):
    out = tmp_path / "report.json"
    cmd = [sys.executable, str(ROOT / "tools" / "policy_check.py")]
    env = dict(os.environ)
    bad = subprocess.run(cmd + [str(stack_files["broken-openshift"]), "--out", str(out)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 1, bad.stderr
    assert f"MANDATORY spectrum-ecn-min-below-max  {F.SWITCH} (gpu-lab:switch:SpectrumSwitch)" in bad.stdout
    data = json.loads(out.read_text())
    assert data["summary"] == {"mandatory": 4, "advisory": 1}
    assert len(data["policies"]) == len(ALL_POLICIES)

    good = subprocess.run(cmd + [str(stack_files["lab"])], capture_output=True, text=True, env=env, timeout=120)
    assert good.returncode == 0, good.stderr
    assert "0 mandatory and 0 advisory violation(s)" in good.stdout

    broken_input = tmp_path / "bad.json"
    broken_input.write_text(json.dumps([{"type": "x:y:Z", "name": "a", "properties": {},
                                         "secretPaths": ["nope"]}]))
    failed = subprocess.run(cmd + [str(broken_input)], capture_output=True, text=True, env=env, timeout=120)
    assert failed.returncode == 2
    assert "property path 'nope' does not exist" in failed.stderr


PROVIDER_PROBE = """from pulumi_policy import EnforcementLevel, PolicyPack, ResourceValidationPolicy


def report_provider(args, report_violation):
    p = args.provider
    if p is not None:
        report_violation(f"{p.resource_type} {p.name} {p.urn} {dict(p.props)}")


PolicyPack("probe", enforcement_level=EnforcementLevel.ADVISORY, policies=[
    ResourceValidationPolicy(name="provider-probe", description="reports args.provider", validate=report_provider)])
"""


def test_a_resource_s_explicit_provider_reaches_the_pack_as_the_cli_sends_it(tmp_path):
    # The CLI sends the provider resource with each resource's Analyze request (pulumi/pulumi
    # pkg/resource/deploy/step_generator.go analyzeAll, AnalyzerResource.Provider); pulumi_policy
    # hands it to a rule as args.provider.
    (tmp_path / "PulumiPolicy.yaml").write_text(f"runtime:\n  name: python\n  options:\n"
                                                f"    virtualenv: {sys.prefix}\n")
    (tmp_path / "__main__.py").write_text(PROVIDER_PROBE)
    stack = policy_check.parse_stack([
        {"type": "pulumi:providers:pulumi-python", "name": "pyvmomi", "properties": {"region": "none"}},
        {"type": "pulumi-python:dynamic:Resource", "name": "served", "provider": "pyvmomi", "properties": {}},
        {"type": "pulumi-python:dynamic:Resource", "name": "default", "properties": {}},
    ])
    report = policy_check.check(stack, tmp_path)
    assert [(v.resource, v.message) for v in report.verdicts] == [(
        "served", "pulumi:providers:pulumi-python pyvmomi "
        "urn:pulumi:lab::gpu-lab::pulumi:providers:pulumi-python::pyvmomi {'region': 'none'}")]


def test_a_provider_that_is_not_a_provider_resource_is_refused():
    with pytest.raises(policy_check.CheckError, match="resource 'b' provider: 'a' is not a provider resource"):
        policy_check.parse_stack([{"type": "x:y:Z", "name": "a"}, {"type": "x:y:Z", "name": "b", "provider": "a"}])
