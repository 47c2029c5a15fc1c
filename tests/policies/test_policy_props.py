"""The property-reading helpers, the secret-marker shim, and the fixture files."""

import json

import builders
import plan_fixtures
import pytest
from google.protobuf import json_format
from policy_helpers import policy_check
from pulumi_policy import Secret

from rules import props as P
from tools import plan, policy_sdk_access
from tools.mockrun import PLACEHOLDER, redact_secrets
from tools.policy_sdk_access import UNKNOWN_STRING_VALUE, unknown_checking_proxy

WIRE_SECRET = {P.SIG_KEY: P.SECRET_SIG, "value": "s3cret"}


def test_engine_signatures_match_the_sdk():
    # a secret as tools/policy_check sends it: the SDK's deserializer unwraps it, the pack's keeps it a Secret
    wire = policy_check.mark({"password": "s3cret", "mtu": 9000}, ["password"], ["mtu"], "r")
    assert policy_sdk_access.sdk_deserialize_properties(wire)["password"] == "s3cret"
    assert isinstance(P.decode(wire)["password"], Secret)
    # an unknown as it sends it: the SDK's proxy refuses to read it
    with pytest.raises(policy_sdk_access.UnknownValueError):
        unknown_checking_proxy(P.decode(wire))["mtu"]


def test_decode_keeps_secrets_where_the_sdk_drops_them():
    wire = {"connection": {"host": "h", "password": WIRE_SECRET}, "list": [WIRE_SECRET]}
    assert policy_sdk_access.sdk_deserialize_properties(wire)["connection"]["password"] == "s3cret"  # the SDK: secret-ness gone
    ours = P.decode(wire)
    assert isinstance(ours["connection"]["password"], Secret)
    assert ours["connection"]["password"].value == "s3cret"
    assert isinstance(ours["list"][0], Secret)
    assert ours["connection"]["host"] == "h"


def test_keep_secret_markers_patches_the_servicer_module(monkeypatch):
    sdk = policy_sdk_access.servicer_module()

    original = sdk.deserialize_properties
    monkeypatch.setattr(sdk, "deserialize_properties", original)  # restored after the test
    P.keep_secret_markers()
    patched = sdk.deserialize_properties
    assert patched is not original
    assert isinstance(patched({"p": WIRE_SECRET})["p"], Secret)
    # remediation keeps the SDK's own secret-preserving path
    assert patched({"p": WIRE_SECRET}, True)["p"] == "s3cret"
    P.keep_secret_markers()
    assert sdk.deserialize_properties is patched, "installing twice must not stack wrappers"


def test_keep_secret_markers_refuses_an_sdk_it_does_not_know(monkeypatch):
    sdk = policy_sdk_access.servicer_module()

    monkeypatch.delattr(sdk, "deserialize_properties")
    with pytest.raises(RuntimeError, match="secret detection would silently stop working"):
        P.keep_secret_markers()


def test_plain_turns_unknowns_into_UNKNOWN_without_raising():
    raw = {"a": UNKNOWN_STRING_VALUE, "b": [1, UNKNOWN_STRING_VALUE], "c": {"d": Secret(UNKNOWN_STRING_VALUE)}}
    data = P.plain(unknown_checking_proxy(raw))
    assert data["a"] is P.UNKNOWN
    assert data["b"] == [1, P.UNKNOWN]
    assert isinstance(data["c"]["d"], Secret) and data["c"]["d"].value is P.UNKNOWN
    assert P.dig(data, "c.d") is P.UNKNOWN
    assert P.dig(data, "a.x") is P.UNKNOWN
    assert P.dig(data, "b[1]") is P.UNKNOWN
    assert P.dig(data, "missing.x", "dflt") == "dflt"


def test_numbers_arrive_as_floats_and_read_as_ints():
    wire = json_format.MessageToDict(policy_check.to_struct({"mtu": 9000, "text": "9000"}))
    assert wire["mtu"] == 9000.0 and isinstance(wire["mtu"], float)
    assert P.as_int(wire["mtu"]) == 9000 and P.as_int(wire["text"]) == 9000
    assert P.as_int(True) is P.UNKNOWN and P.as_int("jumbo") is P.UNKNOWN and P.as_int(None) is None
    assert P.number_text(1.0) == "1" and P.number_text(1.5) == "1.5"


def test_urn_type_chain():
    urn = "urn:pulumi:lab::gpu-lab::gpu-lab:vsphere:RoceFabric$vsphere:index/vnic:Vnic::lab-fabric-vmk-a"
    assert P.type_chain(urn) == ["gpu-lab:vsphere:RoceFabric", "vsphere:index/vnic:Vnic"]
    assert P.under_component(urn, "gpu-lab:vsphere:RoceFabric")
    assert not P.under_component(urn, "vsphere:index/vnic:Vnic")


def test_policy_check_reads_plan_json_names():
    stack = policy_check.parse_stack({"resources": [
        {"type": "command:remote:Command", "name": "c", "urn": "urn:pulumi:lab::gpu-lab::command:remote:Command::c",
         "parent": None, "custom": True, "inputs": {"connection": {"password": "[secret]"}},
         "secretInputs": ["connection.password"]}]})
    [c] = stack.resources
    assert c.properties["connection"]["password"] == {P.SIG_KEY: P.SECRET_SIG, "value": "[secret]"}


def test_policy_check_takes_mock_unknowns_as_the_engine_sentinel():
    from tools.sdk_access import Unknown

    wire = policy_check.mark({"a": Unknown(), "b": [Unknown()], "c": {P.SIG_KEY: P.SECRET_SIG, "value": Unknown()}},
                             [], [], "r")
    assert wire == {"a": UNKNOWN_STRING_VALUE, "b": [UNKNOWN_STRING_VALUE],
                    "c": {P.SIG_KEY: P.SECRET_SIG, "value": UNKNOWN_STRING_VALUE}}


def test_policy_check_sends_assets_in_their_wire_form():
    import pulumi

    wire = policy_check.mark({"source": pulumi.StringAsset("listen api")}, [], [], "r")
    assert wire == {"source": {P.SIG_KEY: "c44067f5952c0a294b673a41bacd8c17", "text": "listen api"}}
    policy_check.to_struct(wire)  # and it fits a protobuf Struct


def test_policy_check_builds_urns_from_the_parent_chain():
    lab = plan_fixtures.lab()
    for r in lab["resources"]:
        del r["urn"]  # a hand-written input names parents only
    stack = policy_check.parse_stack(lab)
    urns = {r.name: r.urn for r in stack.resources}
    assert urns["roce"] == "urn:pulumi:lab::gpu-lab::gpu-lab:vsphere:RoceFabric::roce"
    assert urns["roce-vds"] == ("urn:pulumi:lab::gpu-lab::gpu-lab:vsphere:RoceFabric$"
                                "vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch::roce-vds")
    command = next(r for r in stack.resources if r.name == plan_fixtures.SWITCH_COMMAND)
    assert command.parent == urns[builders.SWITCH]
    # the program marks the whole connection secret; the marker wraps it, password included
    connection = command.properties["connection"]
    assert connection[P.SIG_KEY] == P.SECRET_SIG and connection["value"]["password"] == PLACEHOLDER


def test_policy_check_marks_dotted_keys_and_rejects_bad_paths():
    wire = policy_check.mark({"data": {"a.b": "x"}, "l": [1, 2]}, ['data["a.b"]'], ["l[1]"], "r")
    assert wire == {"data": {"a.b": {P.SIG_KEY: P.SECRET_SIG, "value": "x"}}, "l": [1, UNKNOWN_STRING_VALUE]}
    # plan.json writes dotted keys unquoted
    assert policy_check.mark({"data": {"a.b": "x"}}, ["data.a.b"], [], "r") == {
        "data": {"a.b": {P.SIG_KEY: P.SECRET_SIG, "value": "x"}}}
    with pytest.raises(policy_check.CheckError, match="does not exist"):
        policy_check.mark({"a": 1}, ["b"], [], "r")
    with pytest.raises(policy_check.CheckError, match="names 2 resources"):
        policy_check.parse_stack([{"type": "t:m:A", "name": "x"}, {"type": "t:m:B", "name": "x"},
                                  {"type": "t:m:C", "name": "y", "parent": "x"}])


def _redacted(value, secret_paths):
    """The fixture's values with its secrets written as plan.json writes them."""
    return redact_secrets(policy_check.mark(value, secret_paths, [], "fixture"))


def test_the_policy_fixture_is_what_make_plan_writes(tmp_path):
    # `make plan` (tools.plan) on the same stack, in its own run: the fixture is its plan.json with
    # the secrets' placeholder values kept
    stack_file = builders.write_stack_file(tmp_path, plan_fixtures.policy_stack_config(), "lab")
    assert plan.main(["--stack", "lab", "--stack-file", str(stack_file), "--out", str(tmp_path), "--no-policy"]) == 0
    planned = json.loads((tmp_path / "plan.json").read_text())["resources"]
    fixture = plan_fixtures.lab()["resources"]
    assert [(r["type"], r["name"], r["urn"], r["parent"]) for r in planned] == [
        (r["type"], r["name"], r["urn"], r.get("parent")) for r in fixture]
    for p, f in zip(planned, fixture, strict=True):
        assert p["secretInputs"] == f.get("secretPaths", []), p["name"]
        assert p["inputs"] == _redacted(f["properties"], f.get("secretPaths", [])), p["name"]
