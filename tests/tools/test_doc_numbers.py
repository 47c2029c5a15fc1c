"""The numbers the docs quote that a test can compute: resource counts per stack and size.

docs/benchmark.md's "Resource counts" table is computed here from the program under mocks, the way
its tools count (tools/bench.py: the resources the program registers; tools/bench_up.py: the same
for the sim stack scaled, and the engine's summary adds the stack itself), so a change to the program
that adds or removes resources fails here until the table says so. Measurements elsewhere in the docs
keep the count they were taken with and say so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tools.mockrun import run_program, stack_config

REPO = Path(__file__).resolve().parents[2]
BENCHMARK = REPO / "docs" / "benchmark.md"
ROW = re.compile(r"^\| (?P<what>[^|]+?) \| (?P<workers>\d+) \| (?P<resources>\d+) \|$")


def quoted_counts() -> dict[tuple[str, int], int]:
    """(what, workers) -> resources, from the table under the heading "Resource counts"."""
    text = BENCHMARK.read_text()
    section = text.split("\n## Resource counts", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = ROW.match(line.strip())
        if match:
            rows[(match["what"].strip("` "), int(match["workers"]))] = int(match["resources"])
    return rows


def count(what: str, workers: int) -> int:
    if what == "make bench (lab scaled)":
        from tools.bench_lab import scaled_lab

        return len(run_program(scaled_lab(workers), stack=f"bench{workers}").resources)
    if what == "tools.bench_up (sim scaled)":
        from tools.bench_preview import simbench_config

        sim = yaml.safe_load((REPO / "Pulumi.sim.yaml").read_text())
        return len(run_program(simbench_config(sim, workers)["config"], stack="simbench").resources)
    stack = what.removeprefix("Pulumi.").removesuffix(".yaml")
    config = stack_config(stack)
    assert len(config["gpu-lab:vsphere"]["workers"]["names"]) == workers, "the row's workers are the stack's"
    from tools.stackfile import offline_secrets

    return len(run_program(config, stack=stack, secrets=offline_secrets(config)).resources)


def test_the_table_is_there():
    rows = quoted_counts()
    assert {what for what, _ in rows} == {"make bench (lab scaled)", "tools.bench_up (sim scaled)",
                                          "Pulumi.lab.yaml", "Pulumi.sim.yaml"}
    assert {w for what, w in rows if what.startswith(("make", "tools"))} == {4, 64, 512}


@pytest.mark.parametrize("what, workers", sorted(quoted_counts()))
def test_the_resource_counts_the_docs_quote(what, workers):
    assert count(what, workers) == quoted_counts()[(what, workers)]


def test_the_sim_stack_count_quoted_for_its_up():
    # docs/commands.md: `scripts/sim-preview.sh --up` creates the whole sim stack; the engine counts
    # the stack itself too
    text = (REPO / "docs" / "commands.md").read_text()
    [quoted] = re.findall(r"all (\d+) resources\s+created", text)
    assert int(quoted) == quoted_counts()[("Pulumi.sim.yaml", 3)] + 1
