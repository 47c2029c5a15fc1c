"""The program's only contact with Pulumi SDK internals: what a live run needs and the SDK offers no
public way to do. Each patch applies only on the SDK version it was checked against (CHECKED_AGAINST)
and names the upstream function it stands in for; tests/test_sdk_internals.py pins every name,
signature and behaviour relied on. Why each exists and what it measured: docs/benchmark.md and
docs/engine.md ("The SDK boundary"). Tools' and tests' access to internals: tools/sdk_access.py.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.metadata
import os
import sys
import traceback
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pulumi.log
import pulumi.runtime.resource
import pulumi.runtime.stack
from pulumi.output import Unknown as _Unknown
from pulumi.runtime import rpc as _rpc
from pulumi.runtime.settings import SETTINGS, _get_rpc_manager

CHECKED_AGAINST = {"pulumi": "3.272.0"}


def sdk_version() -> str:
    return importlib.metadata.version("pulumi")


# ---------------------------------------------------------------- what a dynamic provider receives


def unwrap_secret(value: Any) -> Any:
    """A property value as a dynamic provider received it, without the engine's secret wrapper
    (pulumi/pulumi sdk/python/lib/pulumi/runtime/rpc.py, unwrap_rpc_secret)."""
    return _rpc.unwrap_rpc_secret(value)


def is_unknown(value: Any) -> bool:
    """True for what a dynamic provider receives, during preview, for a value not yet known: an
    Unknown from the Check and Diff decoding with keep_unknowns, or the wire's rpc.UNKNOWN string."""
    return isinstance(value, _Unknown) or (isinstance(value, str) and value == _rpc.UNKNOWN)


# ---------------------------------------------------------------- the dynamic provider server


class _OneLineTraceback:
    """`traceback` as the provider server's `_abort_with_traceback` sees it (pulumi/pulumi
    sdk/python/lib/pulumi/dynamic/__main__.py), except that one error type is its message alone."""

    def __init__(self, one_line: type[BaseException]) -> None:
        self.one_line = one_line

    def __getattr__(self, name: str) -> Any:
        return getattr(traceback, name)

    def format_exc(self, *args: Any, **kwargs: Any) -> str:
        error = sys.exc_info()[1]
        if isinstance(error, self.one_line):
            return str(error)
        return traceback.format_exc(*args, **kwargs)


def one_line_errors_in_the_provider_server(one_line: type[BaseException]) -> bool:
    """In the `python -m pulumi.dynamic` process of the checked SDK version, report a `one_line` error
    to the engine as its message instead of a traceback; True when it did. Elsewhere nothing changes."""
    server = sys.modules.get("__main__")
    # Only in the SDK's provider server, and only while it still works the way it was checked.
    if not callable(getattr(server, "_abort_with_traceback", None)) \
            or getattr(server, "traceback", None) is not traceback:
        return False
    if sdk_version() != CHECKED_AGAINST["pulumi"]:
        return False
    setattr(server, "traceback", _OneLineTraceback(one_line))  # noqa: B010  (a module attribute the SDK reads)
    return True


DYNAMIC_SERVER_WORKERS = 4
"""The thread pool `python -m pulumi.dynamic` serves a provider with (its `main`, SDK 3.272.0)."""


def widen_dynamic_provider_server(workers: int) -> bool:
    """In the `python -m pulumi.dynamic` process of the checked SDK version, let its gRPC server
    (pulumi/pulumi sdk/python/lib/pulumi/dynamic/__main__.py, main) run up to `workers` requests at
    once; True when it did. Elsewhere (the program, tests, another SDK version) nothing changes."""
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
    pools[0]._max_workers = max(workers, DYNAMIC_SERVER_WORKERS)  # read per request (_adjust_thread_count)
    return True


# ---------------------------------------------------------------- program patches

SDK_DEBUG_ENV = "GPU_LAB_SDK_DEBUG"
_sdk_wait_for_rpcs = pulumi.runtime.stack.wait_for_rpcs
_sdk_log_debug = pulumi.log.debug
_sdk_get_stack_trace = pulumi.runtime.resource._get_stack_trace  # sdk/python/lib/pulumi/runtime/resource.py
PROGRAM = Path(__file__).resolve().parent.parent / "__main__.py"
"""The program's entry point: the stack trace sent with each registration starts here."""
_warned_versions: set[str] = set()


def install_program_patches() -> bool:
    """On the checked SDK version, swap in the linear Output wait, stack traces that start at the program
    and, unless GPU_LAB_SDK_DEBUG=1, silent SDK debug logs (idempotent), and return True. On any other
    version leave the SDK as it is, warn once (per process and version) and return False."""
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
    """pulumi.log.debug's signature (pulumi/pulumi sdk/python/lib/pulumi/log.py, debug); sends nothing: it is a
    blocking Log RPC per registration step, and the engine gives a program no sign that debug output is wanted."""


async def _wait_for_rpcs(await_all_outstanding_tasks: bool = True) -> None:
    """pulumi.runtime.stack.wait_for_rpcs (pulumi/pulumi sdk/python/lib/pulumi/runtime/stack.py), with each
    tracked Output watched once instead of once per completion (the SDK's loop is quadratic)."""
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
