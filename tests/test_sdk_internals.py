"""The Pulumi SDK internals in components/sdk_internals.py (the live run's) and tools/sdk_access.py
(the tools' and tests'), and the pulumi-policy internals in tools/policy_sdk_access.py (the tools' and
tests'; the pack's own are pinned by tests/policies/test_pulumi_policy_internals.py), still exist and
behave as relied on.

Each failure names the symbol, the installed SDK version and the version the module was checked
against, so an SDK upgrade that moves one of them fails here, not somewhere deep in `make plan`.
The facts pinned are the Python SDK's own (pulumi/pulumi `sdk/python/lib/pulumi/runtime/`).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import inspect
import time
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s
import pulumi_policy.deserialize as policy_wire
import pytest
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.stack import Stack

from components import sdk_internals
from components.addons.kube import KUBERNETES_PLUGIN_VERSION, FlatCustomResource
from rules.pulumi_policy_internals import CHECKED_VERSION as POLICY_CHECKED_VERSION
from tools import mockrun, policy_sdk_access, sdk_access

INSTALLED = {name: importlib.metadata.version(name) for name in ("pulumi", "pulumi_kubernetes", "pulumi_policy")}


def sdk_changed(symbol: str, what: str) -> None:
    pytest.fail(
        f"Pulumi SDK internal `{symbol}` changed in pulumi {INSTALLED['pulumi']}: {what}. "
        f"components/sdk_internals.py was checked against pulumi {sdk_internals.CHECKED_AGAINST['pulumi']}; "
        "find the new way (or a public API) and update it.",
        pytrace=False,
    )


def policy_sdk_changed(symbol: str, what: str) -> None:
    pytest.fail(
        f"pulumi-policy internal `{symbol}` changed in pulumi-policy {INSTALLED['pulumi_policy']}: {what}. "
        f"tools/policy_sdk_access.py was checked against pulumi-policy {POLICY_CHECKED_VERSION}; "
        "find the new way (or a public API) and update it.",
        pytrace=False,
    )


def parameters(function) -> list[str]:
    return list(inspect.signature(function).parameters)


# ---------------------------------------------------------------- names and signatures


def pinned_rpc_function(name: str, expected: list[str], was: str, *, leading_only: bool = False) -> None:
    """`pulumi.runtime.rpc.<name>` exists and takes `expected` (or starts with it: `leading_only`)."""
    function = getattr(rpc, name, None)
    if function is None:
        sdk_changed(f"pulumi.runtime.rpc.{name}", "it is gone")
    found = parameters(function)
    if (found[:len(expected)] if leading_only else found) != expected:
        sdk_changed(f"pulumi.runtime.rpc.{name}", f"parameters are now {found}, was {was}")


def test_deserialize_properties_is_there_with_its_signature():
    pinned_rpc_function("deserialize_properties", ["props_struct"], "(props_struct, keep_unknowns, ...)",
                        leading_only=True)


def test_is_rpc_secret_is_there_with_its_signature():
    pinned_rpc_function("is_rpc_secret", ["value"], "(value)")


def test_unwrap_rpc_secret_is_there_and_unwraps_the_wire_form():
    pinned_rpc_function("unwrap_rpc_secret", ["value"], "(value)")
    # The engine's secret wire form (sdk/go/common/resource/sig in pulumi/pulumi).
    wrapped = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": "s3cret"}
    if sdk_internals.unwrap_secret(wrapped) != "s3cret" or sdk_internals.unwrap_secret("plain") != "plain":
        sdk_changed("pulumi.runtime.rpc.unwrap_rpc_secret", "no longer returns a wrapped secret's value")


def test_unknown_is_still_the_preview_placeholder_string():
    placeholder = getattr(rpc, "UNKNOWN", None)
    if not isinstance(placeholder, str):
        sdk_changed("pulumi.runtime.rpc.UNKNOWN", f"it is now {placeholder!r}, was a string")
    # pulumi.dynamic's Check and Diff decode with keep_unknowns (sdk/python/lib/pulumi/dynamic/__main__.py).
    struct = rpc.struct_pb2.Struct()
    struct.update({"id": placeholder})
    value = rpc.deserialize_properties(struct, keep_unknowns=True)["id"]
    if not sdk_internals.is_unknown(value):
        sdk_changed("pulumi.output.Unknown", f"an unknown value now deserializes as {value!r}")
    assert sdk_internals.is_unknown(placeholder)
    assert not sdk_internals.is_unknown("vm-62") and not sdk_internals.is_unknown(None)


def test_the_wire_signatures_are_still_the_engines():
    # sdk/go/common/resource/sig in pulumi/pulumi; the tests build wire values from them
    engine = {"_special_sig_key": "4dabf18193072939515e22adb298388d",
              "_special_secret_sig": "1b47061264138c4ac30d75fd1eb44270",
              "_special_asset_sig": "c44067f5952c0a294b673a41bacd8c17"}
    for name, value in engine.items():
        if getattr(rpc, name, None) != value:
            sdk_changed(f"pulumi.runtime.rpc.{name}", f"it is now {getattr(rpc, name, None)!r}, was {value!r}")
    assert (sdk_access.SIG_KEY, sdk_access.SECRET_SIG, sdk_access.ASSET_SIG) == tuple(engine.values())
    assert sdk_access.UNKNOWN == rpc.UNKNOWN == "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def test_wrap_rpc_secret_is_there_and_is_the_wire_form_the_decoding_reads():
    pinned_rpc_function("wrap_rpc_secret", ["value"], "(value)")
    wrapped = sdk_access.wrap_secret("s3cret")
    if wrapped != {sdk_access.SIG_KEY: sdk_access.SECRET_SIG, "value": "s3cret"}:
        sdk_changed("pulumi.runtime.rpc.wrap_rpc_secret", f"wraps a secret as {wrapped!r}")
    assert sdk_access.is_secret_value(wrapped) and sdk_access.unwrap_secret(wrapped) == "s3cret"
    assert sdk_access.unwrap_secret("plain") == "plain"


def test_deserialize_properties_still_keeps_unknowns_when_asked():
    found = parameters(rpc.deserialize_properties)
    if found[:2] != ["props_struct", "keep_unknowns"]:
        sdk_changed("pulumi.runtime.rpc.deserialize_properties", f"parameters are now {found}, was "
                    "(props_struct, keep_unknowns, ...)")
    struct = rpc.struct_pb2.Struct()
    struct.update({"id": sdk_access.UNKNOWN, "name": "w1"})
    kept = sdk_access.deserialize_properties(struct, keep_unknowns=True)
    if not isinstance(kept["id"], sdk_access.Unknown) or kept["name"] != "w1":
        sdk_changed("pulumi.runtime.rpc.deserialize_properties", f"with keep_unknowns decoded {kept!r}")
    assert "id" not in sdk_access.deserialize_properties(struct)  # the default drops an unknown


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
        exported["seen"] = sdk_access.stack_exports()

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
    seen = {name: sdk_access.resolved(output) for name, output in outputs.items()}
    if seen != {"secret": ("HIDDEN", True), "plain": ("shown", False)}:
        sdk_changed("pulumi.runtime.sync_await._sync_await", f"Output.future()/is_secret() gave {seen!r}")


def test_registered_inputs_decode_with_secrets_still_marked():
    def program():
        pulumi.CustomResource("sdkcheck:index:Thing", "thing",
                              {"plain": "value", "secret": pulumi.Output.secret("hidden")})

    recorder = run_under_mocks(program)
    inputs = sdk_access.deserialize_properties(recorder.requests["thing"].object)
    if set(inputs) != {"plain", "secret"} or inputs["plain"] != "value":
        sdk_changed("pulumi.runtime.rpc.deserialize_properties", f"decoded {inputs!r}")
    if not sdk_access.is_secret_value(inputs["secret"]) or inputs["secret"].get("value") != "hidden":
        sdk_changed("pulumi.runtime.rpc.is_rpc_secret", f"does not recognise the secret {inputs['secret']!r}")
    if sdk_access.is_secret_value(inputs["plain"]):
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
    assert sdk_access.deserialize_properties(flat.object) == scc
    assert flat.version == typed.version == KUBERNETES_PLUGIN_VERSION, (
        f"pulumi_kubernetes {INSTALLED['pulumi_kubernetes']} sends version {typed.version!r}, "
        f"pulumi-plugin.json says {KUBERNETES_PLUGIN_VERSION!r}")
    assert flat.provider == typed.provider


# ---------------------------------------------------------------- program patches (install_program_patches)


def test_run_pulumi_func_still_looks_wait_for_rpcs_up_in_its_module():
    # The patch replaces the module attribute; it only takes effect while run_pulumi_func (what
    # the real entry point and pulumi.runtime.test both end in) finds the function by that name.
    from pulumi.runtime import stack

    if not inspect.iscoroutinefunction(getattr(stack, "wait_for_rpcs", None)):
        sdk_changed("pulumi.runtime.stack.wait_for_rpcs", "it is gone or no longer a coroutine function")
    if parameters(sdk_internals._sdk_wait_for_rpcs) != ["await_all_outstanding_tasks"]:
        sdk_changed("pulumi.runtime.stack.wait_for_rpcs",
                    f"parameters are now {parameters(sdk_internals._sdk_wait_for_rpcs)}, was (await_all_outstanding_tasks)")
    if "wait_for_rpcs" not in stack.run_pulumi_func.__code__.co_names:
        sdk_changed("pulumi.runtime.stack.run_pulumi_func", "no longer calls wait_for_rpcs by its module name")


def test_tracked_outputs_are_still_a_set_of_futures_under_a_lock():
    from pulumi.runtime.settings import SETTINGS

    if not isinstance(getattr(SETTINGS, "outputs", None), set) or not hasattr(SETTINGS.lock, "acquire"):
        sdk_changed("pulumi.runtime.settings.SETTINGS.outputs",
                    "the tracked Output tasks are no longer a set guarded by SETTINGS.lock")
    if "_track" not in vars(pulumi.Output) or "SETTINGS" not in pulumi.Output._track.__code__.co_names:
        sdk_changed("pulumi.Output._track", "Outputs no longer register their task in SETTINGS.outputs")
    if not hasattr(sdk_internals._get_rpc_manager(), "rpcs"):
        sdk_changed("pulumi.runtime.settings._get_rpc_manager", "the RPC manager has no `rpcs` list")


def test_log_debug_keeps_its_signature_and_is_the_only_level_dropped(monkeypatch):
    import pulumi.log

    if parameters(sdk_internals._sdk_log_debug) != parameters(sdk_internals._no_debug_log):
        sdk_changed("pulumi.log.debug", f"parameters are now {parameters(sdk_internals._sdk_log_debug)}")
    monkeypatch.setattr(pulumi.log, "debug", pulumi.log.debug)  # restored after the test
    for level in ("info", "warn", "error"):
        monkeypatch.setattr(pulumi.log, level, getattr(pulumi.log, level))
    before = {level: getattr(pulumi.log, level) for level in ("info", "warn", "error")}
    monkeypatch.delenv(sdk_internals.SDK_DEBUG_ENV, raising=False)
    sdk_internals.install_program_patches()
    assert pulumi.log.debug is sdk_internals._no_debug_log
    assert {level: getattr(pulumi.log, level) for level in before} == before
    monkeypatch.setenv(sdk_internals.SDK_DEBUG_ENV, "1")
    sdk_internals.install_program_patches()
    assert pulumi.log.debug is sdk_internals._sdk_log_debug


@pytest.fixture
def patched_wait(monkeypatch):
    from pulumi.runtime import stack

    monkeypatch.setattr(stack, "wait_for_rpcs", sdk_internals._wait_for_rpcs)


def test_patched_wait_still_waits_for_every_output_even_those_made_while_waiting(patched_wait):
    # Outputs that start only after others finish (apply chains the program never awaits) must
    # all complete before the run ends, as with the SDK's own wait.
    seen = []

    def program():
        async def slow(step):
            await asyncio.sleep(0.001 * (step % 3))
            seen.append(step)
            return step

        def chain(value):
            if value % 40 != 39:
                pulumi.Output.from_input(slow(value + 1)).apply(chain)
            return value

        for start in range(0, 200, 40):
            pulumi.Output.from_input(slow(start)).apply(chain)

    run_under_mocks(program)
    if sorted(seen) != list(range(200)):
        sdk_changed("pulumi.runtime.settings.SETTINGS.outputs",
                    f"the patched wait_for_rpcs returned with {200 - len(seen)} of 200 Outputs unfinished")


def test_patched_wait_raises_an_apply_failure_like_the_sdk(monkeypatch):
    from pulumi.runtime import stack

    def program():
        pulumi.Output.from_input("x").apply(lambda _: 1 / 0)
        pulumi.CustomResource("sdkcheck:index:Thing", "thing", {"plain": "value"})

    raised = {}
    for name, wait in (("sdk", sdk_internals._sdk_wait_for_rpcs), ("patched", sdk_internals._wait_for_rpcs)):
        monkeypatch.setattr(stack, "wait_for_rpcs", wait)
        with pytest.raises(Exception) as caught:
            run_under_mocks(program)
        raised[name] = type(caught.value)
    assert raised == {"sdk": ZeroDivisionError, "patched": ZeroDivisionError}


def test_patched_wait_is_linear_where_the_sdk_is_quadratic(monkeypatch):
    # The point of the patch. Outputs that finish one at a time while many are pending (the
    # real engine answering registrations one by one): the SDK re-arms asyncio.wait over every
    # pending task at each completion. 2 000 such Outputs: the SDK about 2 s on this machine,
    # the patch a few ms; the ratio, not the absolute time, is asserted.
    from pulumi.runtime import stack

    def program():
        loop = asyncio.get_event_loop()
        gates = [loop.create_future() for _ in range(2000)]

        async def gated(i):
            await gates[i]
            if i + 1 < len(gates):
                # the next Output finishes a millisecond later, once the waiting loop has taken this one
                # and waits again: one completion per wake-up, whatever order asyncio keeps its callbacks in
                loop.call_later(0.001, gates[i + 1].set_result, None)
            return i

        for i in range(len(gates)):
            pulumi.Output.from_input(gated(i))
        loop.call_soon(gates[0].set_result, None)

    # CPU time, not wall time (the millisecond gaps are spent asleep); up to three rounds against a
    # loaded machine.
    rounds = []
    for _ in range(3):
        seconds = {}
        for name, wait in (("sdk", sdk_internals._sdk_wait_for_rpcs), ("patched", sdk_internals._wait_for_rpcs)):
            monkeypatch.setattr(stack, "wait_for_rpcs", wait)
            started = time.process_time()
            run_under_mocks(program)
            seconds[name] = time.process_time() - started
        rounds.append(seconds)
        if seconds["patched"] * 5 <= seconds["sdk"]:
            break
    else:
        sdk_changed("pulumi.runtime.stack.wait_for_rpcs",
                    f"the SDK's own wait is no longer much slower ({rounds}); the patch may be unneeded")


def test_patches_apply_only_on_the_checked_sdk_version_else_the_sdks_own_run_with_one_warning(monkeypatch):
    import pulumi.log
    from pulumi.runtime import stack

    monkeypatch.setattr(stack, "wait_for_rpcs", stack.wait_for_rpcs)  # restored after the test
    monkeypatch.setattr(pulumi.log, "debug", pulumi.log.debug)
    monkeypatch.setattr(pulumi.runtime.resource, "_get_stack_trace", pulumi.runtime.resource._get_stack_trace)
    monkeypatch.delenv(sdk_internals.SDK_DEBUG_ENV, raising=False)
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, *a, **k: warnings.append(msg))
    monkeypatch.setattr(sdk_internals, "_warned_versions", set())

    assert sdk_internals.sdk_version() == sdk_internals.CHECKED_AGAINST["pulumi"]
    assert sdk_internals.install_program_patches() is True
    assert stack.wait_for_rpcs is sdk_internals._wait_for_rpcs and pulumi.log.debug is sdk_internals._no_debug_log
    assert pulumi.runtime.resource._get_stack_trace is sdk_internals._program_stack_trace
    assert warnings == []

    monkeypatch.setattr(sdk_internals, "sdk_version", lambda: "3.999.0")
    assert sdk_internals.install_program_patches() is False
    assert sdk_internals.install_program_patches() is False
    assert stack.wait_for_rpcs is sdk_internals._sdk_wait_for_rpcs
    assert pulumi.log.debug is sdk_internals._sdk_log_debug
    assert pulumi.runtime.resource._get_stack_trace is sdk_internals._sdk_get_stack_trace
    assert len(warnings) == 1 and "pulumi 3.999.0 is installed" in warnings[0] \
        and sdk_internals.CHECKED_AGAINST["pulumi"] in warnings[0]


def test_the_dynamic_provider_server_still_serves_with_four_threads():
    # What widen_dynamic_provider_server stands in for: pulumi/dynamic/__main__.py, main().
    import pulumi.dynamic

    source = (Path(pulumi.dynamic.__file__).parent / "__main__.py").read_text()
    assert f"futures.ThreadPoolExecutor(max_workers={sdk_internals.DYNAMIC_SERVER_WORKERS})" in source
    assert "class DynamicResourceProviderServicer" in source


def test_widening_applies_only_in_the_provider_server_of_the_checked_sdk(monkeypatch):
    import concurrent.futures
    import sys
    import threading
    import types

    assert sdk_internals.widen_dynamic_provider_server(64) is False  # pytest's __main__ is no server
    server = types.ModuleType("__main__")
    server.DynamicResourceProviderServicer = type("DynamicResourceProviderServicer", (), {})
    server.main = lambda: None
    monkeypatch.setitem(sys.modules, "__main__", server)
    import grpc

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=sdk_internals.DYNAMIC_SERVER_WORKERS)
    grpc_server = grpc.server(pool)  # as pulumi.dynamic's main builds it (never started here)
    try:
        monkeypatch.setattr(sdk_internals, "sdk_version", lambda: "3.999.0")
        assert sdk_internals.widen_dynamic_provider_server(64) is False
        assert pool._max_workers == 4
        monkeypatch.setattr(sdk_internals, "sdk_version", lambda: sdk_internals.CHECKED_AGAINST["pulumi"])
        assert sdk_internals.widen_dynamic_provider_server(64) is True
        together = threading.Barrier(8, timeout=20)  # eight tasks inside at once: more than four threads
        results = [f.result(timeout=30) for f in [pool.submit(together.wait) for _ in range(8)]]
        assert sorted(results) == list(range(8))  # each waiter got its own index: all eight met
    finally:
        del grpc_server
        pool.shutdown(wait=False)


def test_the_provider_server_still_reports_a_failure_through_its_module_traceback():
    # What one_line_errors_in_the_provider_server stands in for: pulumi/dynamic/__main__.py,
    # _abort_with_traceback, which sends traceback.format_exc() looked up in its module at call time.
    import pulumi.dynamic

    source = (Path(pulumi.dynamic.__file__).parent / "__main__.py").read_text()
    if "def _abort_with_traceback" not in source or "traceback.format_exc()" not in source \
            or "\nimport traceback\n" not in source:
        sdk_changed("pulumi.dynamic.__main__._abort_with_traceback", "it no longer sends traceback.format_exc()")


def test_one_line_errors_apply_only_in_the_provider_server_of_the_checked_sdk(monkeypatch):
    import sys
    import traceback
    import types

    class OneLine(RuntimeError):
        pass

    assert sdk_internals.one_line_errors_in_the_provider_server(OneLine) is False  # pytest's __main__ is no server
    server = types.ModuleType("__main__")
    server._abort_with_traceback = lambda *args: None
    server.traceback = traceback
    monkeypatch.setitem(sys.modules, "__main__", server)
    monkeypatch.setattr(sdk_internals, "sdk_version", lambda: "3.999.0")
    assert sdk_internals.one_line_errors_in_the_provider_server(OneLine) is False
    assert server.traceback is traceback
    monkeypatch.setattr(sdk_internals, "sdk_version", lambda: sdk_internals.CHECKED_AGAINST["pulumi"])
    assert sdk_internals.one_line_errors_in_the_provider_server(OneLine) is True
    try:
        raise OneLine("host 'esx01', graphics type: create failed in X: permission denied")
    except OneLine:
        assert server.traceback.format_exc() == "host 'esx01', graphics type: create failed in X: permission denied"
    try:
        raise ValueError("a bug")
    except ValueError:
        assert "Traceback" in server.traceback.format_exc() and "ValueError: a bug" in server.traceback.format_exc()
    assert server.traceback.print_exc is traceback.print_exc  # everything else is the module's own


def _traced(get_stack_trace):
    """A registration's stack trace as the SDK takes it: three __init__ frames up from the call (Resource,
    CustomResource, the concrete class; pulumi/runtime/resource.py `_get_stack_trace`), called from code
    compiled as the program's entry point."""
    class Resource:
        def __init__(self) -> None:
            self.trace = get_stack_trace()

    class Custom(Resource):
        def __init__(self) -> None:
            super().__init__()

    class Concrete(Custom):
        def __init__(self) -> None:
            super().__init__()

    program: dict = {}
    exec(compile("def register(make):\n    return make()\n", str(sdk_internals.PROGRAM), "exec"), program)
    return [frame.pc.uri for frame in program["register"](lambda: Concrete()).trace.frames]


def test_the_sdk_still_takes_stack_traces_from_the_frames_under_the_third_init():
    frames = _traced(sdk_internals._sdk_get_stack_trace)
    assert frames[0] == Path(__file__).as_uri()  # the lambda: the first frame under Concrete.__init__
    assert sdk_internals.PROGRAM.as_uri() in frames and frames[-1] != sdk_internals.PROGRAM.as_uri()


def test_the_stack_trace_sent_ends_at_the_program_entry_point():
    # the frames below __main__.py (here pytest's; under the engine the language host's, asyncio's and the
    # SDK's run loop) are not sent, so the state does not carry them
    sdk, ours = _traced(sdk_internals._sdk_get_stack_trace), _traced(sdk_internals._program_stack_trace)
    assert ours == sdk[:sdk.index(sdk_internals.PROGRAM.as_uri()) + 1]
    assert len(ours) == 2 < len(sdk)


# ---------------------------------------------------------------- pulumi-policy (tools/policy_sdk_access.py)


def test_installed_pulumi_policy_is_the_version_the_accessors_were_checked_against():
    if INSTALLED["pulumi_policy"] != POLICY_CHECKED_VERSION:
        policy_sdk_changed("pulumi_policy", "another version is installed: re-check each accessor")


def test_serialize_properties_writes_the_engines_wire_forms():
    from pulumi_policy import Secret

    if parameters(policy_wire.serialize_properties) != ["props"]:
        policy_sdk_changed("pulumi_policy.deserialize.serialize_properties",
                           f"parameters are now {parameters(policy_wire.serialize_properties)}, was (props)")
    wire = policy_sdk_access.serialize_properties(
        {"password": Secret("s3cret"), "source": pulumi.StringAsset("listen api"), "mtu": 9000, "names": ["a"]})
    expected = {"password": {sdk_access.SIG_KEY: sdk_access.SECRET_SIG, "value": "s3cret"},
                "source": {sdk_access.SIG_KEY: sdk_access.ASSET_SIG, "text": "listen api"}, "mtu": 9000, "names": ["a"]}
    if wire != expected:
        policy_sdk_changed("pulumi_policy.deserialize.serialize_properties", f"wrote {wire!r}")


def test_the_sdks_own_decoding_still_drops_secretness():
    # what the pack's decode stands in for, and what the tests compare it with
    if parameters(policy_wire.deserialize_properties)[:2] != ["props", "proxy_secrets"]:
        policy_sdk_changed("pulumi_policy.deserialize.deserialize_properties",
                           f"parameters are now {parameters(policy_wire.deserialize_properties)}, was "
                           "(props, proxy_secrets)")
    decoded = policy_sdk_access.sdk_deserialize_properties(
        {"password": {sdk_access.SIG_KEY: sdk_access.SECRET_SIG, "value": "s3cret"}, "mtu": 9000})
    if decoded != {"password": "s3cret", "mtu": 9000}:
        policy_sdk_changed("pulumi_policy.deserialize.deserialize_properties", f"decoded {decoded!r}")


def test_the_unknown_checking_proxy_still_refuses_an_unknown():
    proxied = policy_sdk_access.unknown_checking_proxy({"mtu": policy_sdk_access.UNKNOWN_STRING_VALUE, "name": "w1",
                                                        "nested": {"id": policy_sdk_access.UNKNOWN_STRING_VALUE}})
    if proxied["name"] != "w1":
        policy_sdk_changed("pulumi_policy.proxy.unknown_checking_proxy", "no longer reads a known value")
    for read in (lambda: proxied["mtu"], lambda: proxied["nested"]["id"]):
        with pytest.raises(policy_sdk_access.UnknownValueError):
            read()


def test_the_servicer_module_still_looks_its_deserializer_up_as_a_global():
    sdk = policy_sdk_access.servicer_module()
    if sdk.__name__ != "pulumi_policy.policy" or not callable(getattr(sdk, "deserialize_properties", None)) \
            or not hasattr(sdk, "_PolicyAnalyzerServicer"):
        policy_sdk_changed("pulumi_policy.policy", "the servicer's module no longer holds deserialize_properties")
