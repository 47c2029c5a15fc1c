"""The dependencies the program declares grow with the lab, not with its square.

Each declared dependency is work for the SDK (it walks the transitive dependencies of every edge it
adds) and a URN in the resource's `dependencies` and `propertyDependencies` in the stack's state,
which the engine writes out after every step. Measured on the lab stack scaled to 4, 64 and 512
workers (tools/bench/lab.py), as `make bench` does.
"""

from __future__ import annotations

import pytest

from tools.bench.lab import scaled_lab
from tools.mockrun import Recorded, run_program

SIZES = (4, 64, 512)
STATE_URNS_PER_RESOURCE = 10
"""At most this many dependency URNs per resource, on average, would go into the state."""


def state_urns(r: Recorded) -> int:
    """URNs the engine writes for a resource: its `dependencies` and each `propertyDependencies` list."""
    return len(r.dependencies) + sum(len(urns) for urns in r.property_dependencies.values())


@pytest.fixture(scope="module")
def counts() -> dict[int, tuple[int, int, int]]:
    """workers -> (resources, declared dependency edges, state URNs)."""
    out = {}
    for workers in SIZES:
        resources = run_program(scaled_lab(workers), stack=f"edges{workers}").resources
        out[workers] = (len(resources), sum(len(r.dependencies) for r in resources),
                        sum(state_urns(r) for r in resources))
    return out


def test_dependency_edges_grow_linearly_with_the_lab(counts):
    per_resource = {w: edges / resources for w, (resources, edges, _) in counts.items()}
    # linear: the edges per resource level off as the lab grows (every add-on object listing every
    # node and VM made them grow with the worker count: 9.0, 49.6 and 307 at these sizes)
    assert per_resource[512] <= 1.5 * per_resource[64], per_resource
    assert per_resource[64] <= 3 * per_resource[4], per_resource


def test_the_state_carries_few_dependency_urns_per_resource(counts):
    resources, _, urns = counts[512]
    assert urns / resources < STATE_URNS_PER_RESOURCE, (urns, resources)
