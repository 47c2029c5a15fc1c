"""CPython garbage-collector settings for the program's process while it registers resources.

The program declares every resource before the event loop sends any of them, so the live heap
grows to about two million tracked objects (Outputs, futures, protobuf structs) that all stay
alive to the end. With the default thresholds (700, 10, 10) the cyclic collector keeps
re-scanning that growing heap: about half of the run at 512 workers. `relax_gc()` moves what is
alive at that point (interpreter, SDK modules) out of the collector's sight with `gc.freeze()`
and collects only the youngest generation, every 50 000 allocations: short-lived cycles
(asyncio tasks and futures) are still freed, the long-lived graph is never re-scanned, and
reference counting frees all acyclic garbage at once as always.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# gen0 every 50k allocations; the older generations after 1000 younger collections, i.e. not
# within a run. Measured with `make bench` (README, Benchmark): peak memory as with the defaults.
REGISTRATION_THRESHOLDS = (50_000, 1000, 1000)


def relax_gc() -> None:
    """Collector settings for a process about to register a whole stack (idempotent)."""
    gc.freeze()
    gc.set_threshold(*REGISTRATION_THRESHOLDS)


@contextmanager
def relaxed_gc() -> Iterator[None]:
    """relax_gc() for a block, then the previous settings (for runs inside a longer process)."""
    previous = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    relax_gc()
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        if not frozen_before:
            gc.unfreeze()
