"""The pulumi-policy internals the pack relies on (policies/rules/pulumi_policy_internals.py).

These fail, naming the symbol, when an upgraded pulumi-policy moves or reshapes one of them.
"""

import copy

import plan_fixtures
import pytest
from google.protobuf import struct_pb2
from policy_helpers import args_for, policy_check
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy

from rules import ALL_POLICIES
from rules import pulumi_policy_internals as internals
from rules.declare import judges


def test_installed_pulumi_policy_is_the_version_the_internals_were_checked_against():
    assert internals.sdk_version() == internals.CHECKED_VERSION, (
        f"pulumi-policy {internals.sdk_version()} is installed; re-check every internal listed in "
        f"policies/rules/pulumi_policy_internals.py, then set CHECKED_VERSION"
    )


def test_every_internal_is_there_with_the_expected_shape():
    assert internals.check_sdk() == []


def test_a_missing_internal_is_named(monkeypatch):
    import pulumi_policy.policy as sdk

    monkeypatch.delattr(sdk._PolicyAnalyzerServicer, "_get_provider_resource")
    assert internals.check_sdk() == [
        "pulumi_policy.policy._PolicyAnalyzerServicer._get_provider_resource(self, request)"]
    with pytest.raises(RuntimeError, match=r"_PolicyAnalyzerServicer\._get_provider_resource"):
        internals.install()


def test_declared_types_cover_every_violation_of_the_fixtures():
    """A rule runs only for the types it declares, so every type it reports on must be declared.

    The broken fixtures make each resource rule but one fire at least once (test_policy_grpc.py);
    the lab fixture with a misspelt PVRDMA adapter (the provider's own description says "vrdma")
    makes the last one fire."""
    misspelt = plan_fixtures.lab()
    vm = next(r for r in misspelt["resources"] if r["type"] == "vsphere:index/virtualMachine:VirtualMachine")
    vm["properties"]["networkInterfaces"][0]["adapterType"] = "vrdma"
    stacks = [policy_check.parse_stack(build()) for build in plan_fixtures.STACKS.values()]
    stacks.append(policy_check.parse_stack(misspelt))
    fired: set[str] = set()
    for stack in stacks:
        for policy in ALL_POLICIES:
            if not isinstance(policy, ResourceValidationPolicy):
                continue
            for r in stack.resources:
                found = []
                policy.validate(args_for(r), lambda msg, urn=None, f=found: f.append(msg))
                if found:
                    fired.add(policy.name)
                    assert judges(policy, r.type), f"{policy.name} reports on {r.type} but does not declare it"
    resource_rules = {p.name for p in ALL_POLICIES if isinstance(p, ResourceValidationPolicy)}
    assert fired == resource_rules, f"no fixture makes {sorted(resource_rules - fired)} fire"


def test_policies_by_type_narrows_only_inside_an_analyze_request():
    policies = internals.PoliciesByType(ALL_POLICIES, judges)
    assert list(policies) == ALL_POLICIES
    internals.request_memo.resource_type = "vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch"
    try:
        names = [p.name for p in policies]
    finally:
        internals.request_memo.resource_type = None
    # in the pack's order; the credentials rule judges every type
    assert names == ["vsphere-vds-no-lacp", "vsphere-rdma-mtu", "vsphere-pvrdma-vds-single-uplink",
                     "secrets-credentials-are-secret"]
    assert list(policies) == ALL_POLICIES


@pytest.fixture
def servicer_class(monkeypatch):
    """The SDK's servicer with the pack's patches installed, all undone after the test."""
    import pulumi_policy.policy as sdk

    for name in ("deserialize_properties", "json_format", "unknown_checking_proxy"):
        monkeypatch.setattr(sdk, name, getattr(sdk, name))
    for name in vars(sdk._PolicyAnalyzerServicer).copy():
        if not name.startswith("__"):
            monkeypatch.setattr(sdk._PolicyAnalyzerServicer, name, getattr(sdk._PolicyAnalyzerServicer, name))
    internals.install()
    return lambda policies: sdk._PolicyAnalyzerServicer("t", "0.0.1", policies, EnforcementLevel.ADVISORY)


def _request(props: dict) -> analyzer_pb2.AnalyzeRequest:
    s = struct_pb2.Struct()
    s.update(props)
    return analyzer_pb2.AnalyzeRequest(type="t:index:T", urn="urn:pulumi:s::p::t:index:T::r", name="r", properties=s)


def test_remediate_answers_empty_when_no_rule_remediates_and_still_remediates_when_one_does(servicer_class):
    calls = []

    def validate(args, report):
        calls.append("validate")

    def remediate(args):
        calls.append("remediate")
        return {"fixed": True}

    advisory = ResourceValidationPolicy("adv", "advisory only", validate=validate, remediate=remediate)
    assert servicer_class([advisory]).Remediate(_request({"a": 1}), None) == analyzer_pb2.RemediateResponse()
    assert calls == []

    level = ResourceValidationPolicy("fix", "remediates", validate=validate, remediate=remediate,
                                     enforcement_level=EnforcementLevel.REMEDIATE)
    response = servicer_class([advisory, level]).Remediate(_request({"a": 1}), None)
    assert calls == ["remediate"]
    assert [r.policyName for r in response.remediations] == ["fix"]
    assert dict(response.remediations[0].properties)["fixed"] is True


def test_analyze_keeps_secrets_and_runs_each_rule_once(servicer_class):
    seen = []

    def validate(args, report):
        seen.append(copy.copy(args.props["password"]))

    policy = ResourceValidationPolicy("p", "sees a secret", validate=validate)
    wire = {"password": {internals.SIG_KEY: internals.SECRET_SIG, "value": "s3cret"}}
    servicer_class([policy]).Analyze(_request(wire), None)
    assert len(seen) == 1 and type(seen[0]).__name__ == "Secret"


def test_another_pulumi_policy_version_keeps_the_sdks_own_behaviour_with_one_warning():
    # a process of its own: the pack's modules are patched for good once install() ran here
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import pulumi_policy.policy as sdk\n"
        "from rules import pulumi_policy_internals as internals\n"
        "original = (sdk.deserialize_properties, sdk._PolicyAnalyzerServicer.Analyze, sdk.unknown_checking_proxy)\n"
        "internals.sdk_version = lambda: '1.99.0'\n"
        "print(internals.install(), internals.install())\n"
        "print(original == (sdk.deserialize_properties, sdk._PolicyAnalyzerServicer.Analyze, sdk.unknown_checking_proxy))\n"
        "internals.sdk_version = lambda: internals.CHECKED_VERSION\n"
        "print(internals.install(), sdk.deserialize_properties is original[0])\n"
    )
    policies = Path(internals.__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", script], cwd=policies, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["False False", "True", "True False"]
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "pulumi-policy 1.99.0 is installed" in warnings[0] \
        and internals.CHECKED_VERSION in warnings[0]
