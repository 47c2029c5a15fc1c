"""tools/bench/up.py: the critical path it compares `pulumi up` with."""

from __future__ import annotations

from tools.bench.up import CREATE_CALLS, DELAYS, critical_path, method_delay_flag
from tools.mockrun import Recorded

VM = "vsphere:index/virtualMachine:VirtualMachine"
DYNAMIC = "pulumi-python:dynamic:Resource"


def res(name: str, type_: str, *deps: str, parent: str = "", kind: str = "") -> Recorded:
    return Recorded(type=type_, name=name, urn=f"urn::{name}", parent_urn=parent and f"urn::{parent}",
                    custom=type_ != "gpu-lab:vsphere:LabVms", inputs={"kind": kind} if kind else {},
                    dependencies=[f"urn::{d}" for d in deps])


def test_the_longest_chain_weighted_by_each_create_s_calls():
    resources = [
        res("vds", "vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch"),
        res("pg", "vsphere:index/distributedPortGroup:DistributedPortGroup", "vds"),
        res("vms", "gpu-lab:vsphere:LabVms"),
        res("cp", VM, parent="vms"),                        # 145 s, no dependencies
        res("w1", VM, "pg", parent="vms"),                  # 2 + 2 + 145 s
        res("w1-vgpu", DYNAMIC, "w1", kind="vsphere-vm-vgpu"),  # + 37.5 s
        res("graphics", DYNAMIC, kind="vsphere-host-graphics"),
        # Waiting for a component waits for everything under it, w1 included.
        res("after-vms", DYNAMIC, "vms", kind="vsphere-host-graphics"),
    ]
    seconds, chain = critical_path(resources, scale=1)
    assert (seconds, chain) == (186.5, ["vds", "pg", "w1", "w1-vgpu"])
    assert critical_path(resources, scale=0.1)[0] == 18.65
    resources[-1].dependencies.append("urn::w1-vgpu")
    assert critical_path(resources, scale=1) == (188.5, ["vds", "pg", "w1", "w1-vgpu", "after-vms"])


def test_every_delayed_call_has_a_source_and_every_create_call_a_delay():
    assert all(ms > 0 and source for ms, source in DELAYS.values())
    assert {m for calls in CREATE_CALLS.values() for m in calls} <= set(DELAYS)
    assert method_delay_flag(0.5).split(",")[0] == "CloneVM_Task:60000"


def test_a_new_worker_s_roll_gives_it_its_vgpu_profile():
    roll = res("w1-roll", DYNAMIC, "w1", kind="vsphere-vm-roll")
    roll.inputs["vgpuProfile"] = "grid_v100-8c"
    cp_roll = res("cp-roll", DYNAMIC, "cp", kind="vsphere-vm-roll")  # no profile: nothing to change
    resources = [res("vds", "vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch"),
                 res("pg", "vsphere:index/distributedPortGroup:DistributedPortGroup", "vds"),
                 res("cp", VM), res("w1", VM, "pg"), roll, cp_roll]
    assert critical_path(resources, scale=1) == (186.5, ["vds", "pg", "w1", "w1-roll"])
    assert critical_path(resources[:4] + [cp_roll], scale=1)[0] == 149.0


def test_parts_of_a_split_lab_run_at_once_each_with_its_own_event_log(tmp_path, monkeypatch):
    """--stacks N: N copies of the stack, each `up` at the same time (a barrier every one must reach
    before any returns), each with its own event log and its own directory for the state it keeps."""
    import threading

    from tools.bench import up as bench_up

    parts = [tmp_path / f"tree{i}" for i in range(3)]
    together = threading.Barrier(len(parts), timeout=10)
    calls = []

    def fake_up(work, scale, parallel, env, event_log, keep, hosts):
        calls.append((work, event_log, keep, hosts))
        together.wait()  # raises BrokenBarrierError if the parts ran one after another
        return bench_up.UpRun(created=227, wall=100 + len(calls), output="")

    monkeypatch.setattr(bench_up, "up_seconds", fake_up)
    runs = bench_up.run_parts(parts, 1.0, 1024, {}, tmp_path, hosts=16)
    assert [run.created for run, _ in runs] == [227] * 3
    assert sorted(work for work, *_ in calls) == parts
    assert len({log for _, log, _, _ in calls}) == len({keep for *_, keep, _ in calls}) == 3
    assert {hosts for *_, hosts in calls} == {16}


def test_a_part_s_stack_holds_the_hosts_asked_for():
    import builders

    from tools.bench.preview import simbench_config

    config = simbench_config({"config": builders.lab_stack()}, 64, 16)["config"]["gpu-lab:vsphere"]
    assert [h["name"] for h in config["workerHosts"]] == [f"DC0_C0_H{i}" for i in range(16)]
    assert len(config["workers"]["names"]) == 64
