"""tools/bench_up: the critical path it compares `pulumi up` with, from the program's own registrations."""

from __future__ import annotations

import copy

import yaml

from tools.bench_preview import REPO
from tools.bench_up import CREATE_CALLS, DELAYS, critical_path, method_delay_flag
from tools.mockrun import run_program


def sim_run():
    config = yaml.safe_load((REPO / "Pulumi.sim.yaml").read_text())["config"]
    return run_program(copy.deepcopy(config), stack="sim")


def test_the_critical_path_runs_switch_port_group_worker_and_vgpu():
    seconds, chain = critical_path(sim_run().resources, scale=1)
    # switch (2 s) + port group (2 s) + clone, reconfigure, power on (145 s) + vGPU's shutdown,
    # reconfigure, power on (37.5 s)
    assert seconds == 186.5
    assert chain[0] == "roce-vds" and chain[1].endswith("-pg") and chain[-1].endswith("-vgpu")
    assert critical_path(sim_run().resources, scale=0.1)[0] == 18.65


def test_every_delayed_call_has_a_source_and_every_create_call_a_delay():
    assert all(ms > 0 and source for ms, source in DELAYS.values())
    assert {m for calls in CREATE_CALLS.values() for m in calls} <= set(DELAYS)
    assert method_delay_flag(0.5).split(",")[0] == "CloneVM_Task:60000"
