"""The Pulumi SDK internals in components/sdk_internals.py still exist and behave as relied on.

Each failure names the symbol, the installed SDK version and the version the module was checked
against, so an SDK upgrade that moves one of them fails here, not somewhere deep in `make plan`.
The facts pinned are the Python SDK's own (pulumi/pulumi `sdk/python/lib/pulumi/runtime/`).
"""

from __future__ import annotations

import importlib.metadata
import inspect

import pulumi
import pulumi_kubernetes as k8s
import pytest
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.stack import Stack

from components import sdk_internals
from components.addons.kube import KUBERNETES_PLUGIN_VERSION, FlatCustomResource
from tools import mockrun

INSTALLED = {name: importlib.metadata.version(name) for name in ("pulumi", "pulumi_kubernetes")}


def sdk_changed(symbol: str, what: str) -> None:
    pytest.fail(
        f"Pulumi SDK internal `{symbol}` changed in pulumi {INSTALLED['pulumi']}: {what}. "
        f"components/sdk_internals.py was checked against pulumi {sdk_internals.CHECKED_AGAINST['pulumi']}; "
        "find the new way (or a public API) and update it.",
        pytrace=False,
    )


def parameters(function) -> list[str]:
    return list(inspect.signature(function).parameters)


# ---------------------------------------------------------------- names and signatures


def test_deserialize_properties_is_there_with_its_signature():
    function = getattr(rpc, "deserialize_properties", None)
    if function is None:
        sdk_changed("pulumi.runtime.rpc.deserialize_properties", "it is gone")
    if parameters(function)[:1] != ["props_struct"]:
        sdk_changed("pulumi.runtime.rpc.deserialize_properties",
                    f"parameters are now {parameters(function)}, was (props_struct, keep_unknowns, ...)")


def test_is_rpc_secret_is_there_with_its_signature():
    function = getattr(rpc, "is_rpc_secret", None)
    if function is None:
        sdk_changed("pulumi.runtime.rpc.is_rpc_secret", "it is gone")
    if parameters(function) != ["value"]:
        sdk_changed("pulumi.runtime.rpc.is_rpc_secret", f"parameters are now {parameters(function)}, was (value)")


def test_the_root_stack_keeps_its_exports_in_outputs():
    if "outputs" not in inspect.get_annotations(Stack):
        sdk_changed("pulumi.runtime.stack.Stack.outputs", "Stack no longer declares an `outputs` dict")
    if "value" not in parameters(Stack.output):
        sdk_changed("pulumi.runtime.stack.Stack.output", f"parameters are now {parameters(Stack.output)}")


def test_mock_resource_args_still_carry_no_parent():
    # Why mockrun reads the RegisterResource request (and so needs deserialize_properties): the
    # public MockResourceArgs have no parent URN. The day they do, the recording can move to
    # Mocks.new_resource and this internal can go.
    if "parent" in parameters(pulumi.runtime.MockResourceArgs.__init__):
        sdk_changed("pulumi.runtime.MockResourceArgs", "it now has a parent: record from Mocks.new_resource instead")


# ---------------------------------------------------------------- behaviour


class _Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args):
        return {}


class _Recorder(MockMonitor):
    def __init__(self) -> None:
        super().__init__(_Mocks())
        self.requests = {}

    def RegisterResource(self, request):
        self.requests[request.name] = request
        return super().RegisterResource(request)


def run_under_mocks(program):
    """`program` under set_mocks, to completion; the recorder holds its registration requests."""
    recorder = _Recorder()
    mockrun.run_under_mocks(program, recorder, stack="test")
    return recorder


def test_stack_exports_are_what_the_program_exported():
    exported = {}

    def program():
        exported["plain"] = "value"
        exported["secret"] = pulumi.Output.secret("hidden")
        for name, value in exported.items():
            pulumi.export(name, value)
        exported["seen"] = sdk_internals.stack_exports()

    run_under_mocks(program)
    seen = exported.pop("seen")
    if seen.keys() != exported.keys() or any(seen[k] is not exported[k] for k in exported):
        sdk_changed("pulumi.runtime.stack.Stack.outputs", f"held {seen!r} after pulumi.export of {exported!r}")


def test_resolved_waits_for_the_value_and_its_secretness():
    outputs = {}

    def program():
        outputs["secret"] = pulumi.Output.secret("hidden").apply(str.upper)
        outputs["plain"] = pulumi.Output.from_input("shown")

    run_under_mocks(program)
    seen = {name: sdk_internals.resolved(output) for name, output in outputs.items()}
    if seen != {"secret": ("HIDDEN", True), "plain": ("shown", False)}:
        sdk_changed("pulumi.runtime.sync_await._sync_await", f"Output.future()/is_secret() gave {seen!r}")


def test_registered_inputs_decode_with_secrets_still_marked():
    def program():
        pulumi.CustomResource("sdkcheck:index:Thing", "thing",
                              {"plain": "value", "secret": pulumi.Output.secret("hidden")})

    recorder = run_under_mocks(program)
    inputs = sdk_internals.deserialize_properties(recorder.requests["thing"].object)
    if set(inputs) != {"plain", "secret"} or inputs["plain"] != "value":
        sdk_changed("pulumi.runtime.rpc.deserialize_properties", f"decoded {inputs!r}")
    if not sdk_internals.is_secret_value(inputs["secret"]) or inputs["secret"].get("value") != "hidden":
        sdk_changed("pulumi.runtime.rpc.is_rpc_secret", f"does not recognise the secret {inputs['secret']!r}")
    if sdk_internals.is_secret_value(inputs["plain"]):
        sdk_changed("pulumi.runtime.rpc.is_rpc_secret", "calls a plain string secret")


def test_flat_custom_resource_registers_like_the_kubernetes_classes():
    # pulumi-kubernetes registers a CustomResource as `kubernetes:<apiVersion>:<kind>` with the
    # plugin version of its package (pulumi/pulumi-kubernetes sdk/python/.../apiextensions/CustomResource.py).
    scc = {"apiVersion": "security.openshift.io/v1", "kind": "SecurityContextConstraints",
           "metadata": {"name": "x"}, "allowPrivilegedContainer": True}

    def program():
        provider = k8s.Provider("k8s", kubeconfig="unused")
        opts = pulumi.ResourceOptions(provider=provider)
        k8s.apiextensions.CustomResource("typed", api_version="example.com/v1", kind="Thing", spec={}, opts=opts)
        FlatCustomResource("flat", scc, opts)

    recorder = run_under_mocks(program)
    typed, flat = recorder.requests["typed"], recorder.requests["flat"]
    assert typed.type == "kubernetes:example.com/v1:Thing"
    assert flat.type == "kubernetes:security.openshift.io/v1:SecurityContextConstraints"
    assert sdk_internals.deserialize_properties(flat.object) == scc
    assert flat.version == typed.version == KUBERNETES_PLUGIN_VERSION, (
        f"pulumi_kubernetes {INSTALLED['pulumi_kubernetes']} sends version {typed.version!r}, "
        f"pulumi-plugin.json says {KUBERNETES_PLUGIN_VERSION!r}")
    assert flat.provider == typed.provider
