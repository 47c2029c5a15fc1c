"""The only place the project touches Pulumi SDK internals: parts with no public equivalent.

Checked against pulumi 3.272.0 (Python SDK). tests/test_sdk_internals.py pins each name, its
signature and the behaviour relied on, and names the installed SDK version when one changes.
Everything else goes through the public API: `pulumi.runtime.set_mocks` and
`@pulumi.runtime.test` run the program offline and wait for all its outstanding work,
`pulumi.runtime.reset_options` drops the previous run's root Stack, `pulumi.CustomResource`
registers a Kubernetes object the typed classes cannot carry.

- `stack_exports()`: what the program passed to `pulumi.export`, i.e. the root Stack's `outputs`
  dict (`pulumi.runtime.stack.Stack.outputs`). Public API only writes exports; the engine reads
  them when the Stack registers its outputs at the end of a real run. Under `set_mocks` the root
  Stack registers (empty) outputs before the program starts, so neither the mock monitor nor a
  public getter ever sees them.
- `deserialize_properties(struct)`, `is_secret_value(value)`: `pulumi.runtime.rpc`'s decoding of
  a registration's property Struct, keeping secrets as the wire protocol's marked dicts. The
  recording monitor reads the RegisterResource request itself because the public
  `MockResourceArgs` carry no parent URN, which the plan's tree needs; `pulumi.runtime.rpc` is not
  among `pulumi.runtime`'s exports.
- `unwrap_secret(value)`, `is_unknown(value)`: what `components/vsphere/dynamic.py`'s providers
  make of the properties `pulumi.dynamic` hands them, raw from the wire: a secret may still be
  wrapped (`pulumi.runtime.rpc.unwrap_rpc_secret`), and a value not known during preview is a
  `pulumi.output.Unknown`: `pulumi.dynamic`'s Check and Diff decode their inputs with
  `keep_unknowns`, which turns the wire's `pulumi.runtime.rpc.UNKNOWN` string into one (the
  string itself is accepted too). The dynamic provider interface has no public helper for
  either.
- `resolved(output)`: an Output's value and secretness, awaited from outside the SDK's event loop
  (tests that build one component and inspect its Outputs). The public way is to assert inside an
  `apply` of a `@pulumi.runtime.test` function; `pulumi.runtime.sync_await._sync_await` is what that
  decorator itself uses.
- `config_set_in_process()`: the config `pulumi.runtime.set_all_config` set in this process
  (`pulumi.runtime.config.CONFIG`, a context variable). `pulumi.Config` only looks keys up; the
  engine's own config arrives through the public `get_config_env`, but tests and `make plan` set
  theirs with `set_all_config`, which only this variable holds.
- `install_program_patches()`, run once at the top of `__main__.py` (so under the real engine and
  under `make plan`'s mocks alike), replaces two SDK functions the real preview spends most of
  the program's event-loop time in (README, Benchmark). Only on the SDK version they were checked
  against (`CHECKED_AGAINST`): on any other, the SDK's own functions run and the program logs one
  warning naming the installed version. Each stands in for the upstream function named below
  (pulumi/pulumi, sdk/python/lib/pulumi/runtime/stack.py `wait_for_rpcs`, and sdk/python/lib/
  pulumi/log.py `debug`):
  - `pulumi.runtime.stack.wait_for_rpcs`, which `run_pulumi_func` calls after the program body.
    After the RPCs drain, the SDK waits for the tracked Outputs (`SETTINGS.outputs`) with
    `asyncio.wait(FIRST_COMPLETED)` in a loop: every completion re-arms a callback on every task
    still pending, quadratic in the Outputs a large stack leaves outstanding. `_wait_for_rpcs`
    keeps the SDK's own function for the RPC half and watches each Output once: a done-callback
    per task, the tasks awaited in the order they finish (so the first failure is re-raised the
    moment it happens, as before), Outputs created meanwhile picked up at each wake-up, and the
    RPC/Output cycle repeated until both are empty, as the SDK does.
  - `pulumi.log.debug`, which the SDK calls several times per registration step (`resource.py`,
    `rpc_manager.py`, `invoke.py`) and which is a blocking `Log` RPC to the engine on the event
    loop's thread: half of the program's wall time in a 128-worker preview. The engine gives a
    program no sign that debug output is wanted (`pulumi preview --debug` only changes what the
    CLI displays, `-v`/`--logflow` reach plugins, not the program), so SDK debug messages are
    dropped unless GPU_LAB_SDK_DEBUG=1 is set (then `--debug` shows them again). Info, warnings
    and errors (`pulumi.log.info/warn/error`) are untouched.
- `widen_dynamic_provider_server(workers)`, run in the dynamic provider's own process when our
  providers' module loads there: `python -m pulumi.dynamic` serves every request of a provider
  with `grpc.server(futures.ThreadPoolExecutor(max_workers=4))` (pulumi/pulumi,
  sdk/python/lib/pulumi/dynamic/__main__.py, `main`), whatever the engine's `--parallel` says, so
  at most four pyvmomi resources of a lab are created at once: a vGPU profile takes three VM
  tasks, and 64 workers' profiles queued through four slots for 600 s (docs/benchmark.md). The
  executor reads its `_max_workers` each time it is handed a request (CPython's
  `ThreadPoolExecutor._adjust_thread_count`), so raising it on the server's executor lets more
  requests run at once. Only on the checked SDK version, and only in that process.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.metadata
import os
import sys
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pulumi.log
import pulumi.runtime.resource
import pulumi.runtime.stack
from pulumi.output import Unknown as _Unknown
from pulumi.runtime import config as _runtime_config
from pulumi.runtime import get_root_resource
from pulumi.runtime import rpc as _rpc
from pulumi.runtime.settings import SETTINGS, _get_rpc_manager
from pulumi.runtime.sync_await import _sync_await

CHECKED_AGAINST = {"pulumi": "3.272.0"}


def stack_exports() -> dict[str, Any]:
    """The values given to `pulumi.export` in this run, by name (Inputs, not resolved)."""
    root = get_root_resource()
    if root is None:
        raise RuntimeError("no root Stack: run the program under pulumi.runtime.set_mocks first")
    return dict(root.outputs)  # type: ignore[attr-defined]  # Stack's; AttributeError, not {}, if it goes


def config_set_in_process() -> dict[str, str]:
    """Every "namespace:key" -> value that `pulumi.runtime.set_all_config` set in this process."""
    return dict(_runtime_config.CONFIG.get())


def deserialize_properties(struct: Any) -> dict[str, Any]:
    """A registration request's `object` Struct as Python values; secrets stay marked."""
    return _rpc.deserialize_properties(struct)


def is_secret_value(value: Any) -> bool:
    """True for a deserialized property value the program marked secret."""
    return _rpc.is_rpc_secret(value)


def unwrap_secret(value: Any) -> Any:
    """A property value as a dynamic provider received it, without the engine's secret wrapper."""
    return _rpc.unwrap_rpc_secret(value)


def is_unknown(value: Any) -> bool:
    """True for what a dynamic provider receives, during preview, for a value not yet known."""
    return isinstance(value, _Unknown) or (isinstance(value, str) and value == _rpc.UNKNOWN)


def resolved(output: Any) -> tuple[Any, bool]:
    """The Output's value and whether it is secret, waiting for both."""
    return _sync_await(output.future()), _sync_await(output.is_secret())


# ---------------------------------------------------------------- program patches

SDK_DEBUG_ENV = "GPU_LAB_SDK_DEBUG"
_sdk_wait_for_rpcs = pulumi.runtime.stack.wait_for_rpcs
_sdk_log_debug = pulumi.log.debug
_sdk_get_stack_trace = pulumi.runtime.resource._get_stack_trace
PROGRAM = Path(__file__).resolve().parent.parent / "__main__.py"
"""The program's entry point: the stack trace sent with each registration starts here."""


_warned_versions: set[str] = set()


def sdk_version() -> str:
    return importlib.metadata.version("pulumi")


DYNAMIC_SERVER_WORKERS = 4
"""The thread pool `python -m pulumi.dynamic` serves a provider with (its `main`, SDK 3.272.0)."""


def widen_dynamic_provider_server(workers: int) -> bool:
    """In the `python -m pulumi.dynamic` process of the checked SDK version, let its gRPC server run up
    to `workers` requests at once (see the module docstring); True when it did. Elsewhere (the
    program, tests, another SDK version) nothing changes."""
    server = sys.modules.get("__main__")
    if getattr(server, "DynamicResourceProviderServicer", None) is None or not callable(getattr(server, "main", None)):
        return False
    if sdk_version() != CHECKED_AGAINST["pulumi"]:
        return False
    # the server `main` made: grpc's server object keeps its executor (grpc/_server.py, _ServerState.thread_pool)
    pools = [getattr(getattr(o, "_state", None), "thread_pool", None) for o in gc.get_objects()
             if type(o).__module__ == "grpc._server" and type(o).__name__ == "_Server"]
    if len(pools) != 1 or not isinstance(pools[0], ThreadPoolExecutor) \
            or pools[0]._max_workers != DYNAMIC_SERVER_WORKERS:  # not the server as checked: leave it as it is
        return False
    pools[0]._max_workers = max(workers, DYNAMIC_SERVER_WORKERS)
    return True


def install_program_patches() -> bool:
    """On the checked SDK version, swap in the linear Output wait and, unless GPU_LAB_SDK_DEBUG=1, silent
    SDK debug logs (idempotent), and return True. On any other version leave the SDK as it is, warn once
    (per process and version) and return False."""
    installed = sdk_version()
    if installed != CHECKED_AGAINST["pulumi"]:
        pulumi.runtime.stack.wait_for_rpcs = _sdk_wait_for_rpcs
        pulumi.log.debug = _sdk_log_debug
        pulumi.runtime.resource._get_stack_trace = _sdk_get_stack_trace
        if installed not in _warned_versions:
            _warned_versions.add(installed)
            pulumi.log.warn(
                f"gpu-lab: pulumi {installed} is installed; its SDK patches (components/sdk_internals.py) were "
                f"checked against {CHECKED_AGAINST['pulumi']} only, so the SDK's own wait_for_rpcs and debug "
                "logging run (correct, slower on large stacks)")
        return False
    pulumi.runtime.stack.wait_for_rpcs = _wait_for_rpcs
    pulumi.log.debug = _sdk_log_debug if os.environ.get(SDK_DEBUG_ENV) == "1" else _no_debug_log
    pulumi.runtime.resource._get_stack_trace = _program_stack_trace
    return True


def _program_stack_trace() -> Any:
    """pulumi.runtime.resource._get_stack_trace without the frames below the program's entry point
    (the language host, asyncio, the SDK's run loop): the engine stores each resource's stack trace in
    the state, and those frames, a kilobyte a resource with this machine's paths, say nothing of where
    the program registered it."""
    trace = _sdk_get_stack_trace()
    entry = PROGRAM.as_uri()
    frames = trace.frames  # the topmost frame first
    for index in range(len(frames) - 1, -1, -1):
        if frames[index].pc.uri == entry:
            del frames[index + 1:]
            break
    return trace


def _no_debug_log(msg: str, resource: Any = None, stream_id: int | None = None, ephemeral: bool | None = None) -> None:
    """pulumi.log.debug's signature; sends nothing."""


async def _wait_for_rpcs(await_all_outstanding_tasks: bool = True) -> None:
    """pulumi.runtime.stack.wait_for_rpcs, with each tracked Output watched once instead of once per wave."""
    while True:
        await _sdk_wait_for_rpcs(await_all_outstanding_tasks=False)  # the RPC half, the SDK's own
        if not await_all_outstanding_tasks:
            return
        await _wait_for_tracked_outputs()
        if not _get_rpc_manager().rpcs:  # an Output may have started another RPC: again, as the SDK does
            return


async def _wait_for_tracked_outputs() -> None:
    """Every task in SETTINGS.outputs, and those added meanwhile, to completion; the first to fail re-raises."""
    loop = asyncio.get_running_loop()
    finished: deque[asyncio.Future] = deque()
    watched: set[asyncio.Future] = set()
    wake: list[asyncio.Future] = []

    def on_done(task: asyncio.Future) -> None:
        finished.append(task)
        if wake and not wake[0].done():
            wake[0].set_result(None)

    try:
        while True:
            with SETTINGS.lock:  # the SDK's protocol: take the tracked tasks out, new ones land in the set
                new = list(SETTINGS.outputs)
                SETTINGS.outputs.clear()
            for task in new:
                if task not in watched:
                    watched.add(task)
                    task.add_done_callback(on_done)  # already done: called on the next loop turn
            if not finished:
                if not watched:
                    return
                wake[:] = [loop.create_future()]
                await wake[0]
            while finished:
                task = finished.popleft()
                watched.discard(task)
                await task  # done: re-raises its exception (or CancelledError) here, as the SDK does
    finally:
        for task in watched:  # only when raising: the SDK also stops waiting on the rest then
            task.remove_done_callback(on_done)
