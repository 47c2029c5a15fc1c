"""CPython garbage-collector settings for the program's process while it registers resources.

The program declares every resource before the event loop sends any of them, so the live heap
grows to about two million tracked objects (Outputs, futures, protobuf structs) that all stay
alive to the end. With the default thresholds (700, 10, 10) the cyclic collector keeps
re-scanning that growing heap: half of the CPU time at 512 workers. Raised thresholds still
left a quarter of it in young-generation collections, since nearly every young object
survives. `relax_gc()` therefore moves what is alive (interpreter, SDK modules) out of the
collector's sight with `gc.freeze()` and switches cyclic collection off for the rest of the
registration; reference counting still frees all acyclic garbage at once. Peak memory at 512
workers rises by about 5 % (README, Benchmark).
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
