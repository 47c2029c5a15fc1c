"""CPython garbage-collector settings for the program's process while it registers resources.

The program declares every resource before the event loop sends any of them, so the live heap
grows to millions of tracked objects (Outputs, futures, protobuf structs) that all stay alive
until the end; few of them form garbage cycles. With the default thresholds the cyclic collector
keeps re-scanning that growing heap and takes close to half of the run at 512 workers.
`relax_gc()` moves everything alive at that point (the imported SDKs) out of the collector's
sight with `gc.freeze()` and makes collections rare; reference counting still frees all
acyclic garbage at once, and cycles are still collected, just seldom.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Young collections every 100k allocations instead of 700; older generations after 50 and 100
# younger ones. Chosen with `make bench` (tools/bench.py): flat time per resource from 64 to 512
# workers at the same peak memory.
REGISTRATION_THRESHOLDS = (100_000, 50, 100)


def relax_gc() -> None:
    """Collector settings for a process that is about to register the whole stack (idempotent)."""
    gc.collect()  # start from a clean heap, then keep the import-time objects out of every scan
    gc.freeze()
    import os
    t = os.environ.get("BENCH_GC_T")
    if t == "off":
        gc.disable()
    else:
        gc.set_threshold(*(tuple(int(x) for x in t.split(",")) if t else REGISTRATION_THRESHOLDS))


@contextmanager
def relaxed_gc() -> Iterator[None]:
    """relax_gc() for the duration of a block, then the previous settings (for runs inside tests)."""
    previous = gc.get_threshold()
    relax_gc()
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.enable()
        gc.unfreeze()
