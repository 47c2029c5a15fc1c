"""Garbage-collector settings for a process that registers a whole stack: every resource is declared
before any is sent, so about two million objects stay alive to the end and the cyclic collector would
re-scan them over and over (half the CPU at 512 workers). Measurements: docs/benchmark.md.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


def relax_gc() -> None:
    """Collector settings for a process about to register a whole stack (idempotent)."""
    gc.freeze()
    gc.disable()


@contextmanager
def relaxed_gc() -> Iterator[None]:
    """relax_gc() for a block, then the previous settings (for runs inside a longer process)."""
    was_enabled = gc.isenabled()
    frozen_before = gc.get_freeze_count()
    relax_gc()
    try:
        yield
    finally:
        # Everything made during the block sits in the youngest generation; the first collection
        # after enable() would scan it all (2 s at 512 workers). freeze() + unfreeze() moves it to
        # the oldest generation instead, where the usual full collections reclaim it later.
        gc.freeze()
        if not frozen_before:
            gc.unfreeze()
        if was_enabled:
            gc.enable()
