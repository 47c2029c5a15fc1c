"""The numbers the docs quote that a test can compute: resource counts per stack and size.

docs/benchmark.md's "Resource counts" table is computed here from the program under mocks, the way
its tools count (tools/bench/program.py: the resources the program registers; tools/bench/up.py: the same
for the sim stack scaled, and the engine's summary adds the stack itself), so a change to the program
that adds or removes resources fails here until the table says so. Measurements elsewhere in the docs
keep the count they were taken with and say so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_numbers import quoted_counts

from tools.mockrun import run_program, stack_config

REPO = Path(__file__).resolve().parents[2]
SCALED = ("make bench (lab scaled)", "tools.bench.up (sim scaled)")
"""The generated labs' rows; the shipped stacks' rows are checked by tests/test_real_stacks.py."""


def count(what: str, workers: int) -> int:
    if what == "make bench (lab scaled)":
        from tools.bench.lab import scaled_lab

        return len(run_program(scaled_lab(workers), stack=f"bench{workers}").resources)
    from tools.bench.preview import simbench_config

    return len(run_program(simbench_config({"config": stack_config("sim")}, workers)["config"],
                           stack="simbench").resources)


def test_the_table_is_there():
    rows = quoted_counts()
    # the shipped stacks' rows are the rest (tests/test_real_stacks.py checks them)
    assert {what for what, _ in rows} >= set(SCALED)
    assert len({what for what, _ in rows} - set(SCALED)) == 2
    assert {w for what, w in rows if what in SCALED} == {4, 64, 512}


@pytest.mark.parametrize("what, workers", sorted(k for k in quoted_counts() if k[0] in SCALED))
def test_the_resource_counts_the_docs_quote(what, workers):
    assert count(what, workers) == quoted_counts()[(what, workers)]
