"""Time to build a lab: `pulumi up` of the sim stack against lab-vcsim with vCenter's task times,
against the critical path of the program's dependency graph.

    python -m tools.bench_up [--workers 4,64,512] [--scale 0.1] [--parallel 8,64] [--plan-only]

Each vSphere call the program's creates wait for gets a delay from a real vCenter's task time
(DELAYS, each with where the figure comes from), applied by lab-vcsim's -method-delay (the call
takes that long, as the task would). The critical path is the longest chain of the dependency
graph (tools.mockrun records each registration's dependencies) weighted by the calls each
resource's create makes (CREATE_CALLS). `--scale` multiplies every delay (0.1: ten times faster
than life) so a 512-worker run fits a session; the ratio wall / critical path is what the goal
(<= 1.2) is about, and both sides are scaled alike.

The stack is Pulumi.sim.yaml widened like tools.bench_preview (N workers on 128 worker hosts);
scripts/sim-preview.sh --up runs up, a no-change preview and destroy. Exit 0 when every run
passed, 77 with "SKIP <reason>" when the engine or a plugin is missing, 1 on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

from tools.bench_preview import HOSTS, REPO, SKIP, _stage, simbench_config

# SOAP method -> (milliseconds, where the figure comes from).
CLONE_SOURCE = ("https://github.com/hashicorp/terraform/issues/3952 (vSphere provider): a thin-provisioned clone "
                "from a template \"takes around 2 mins\"")
VM_SOURCE = ("https://github.com/vmware/terraform-provider-vsphere/pull/1625: vsphere_virtual_machine cloned from "
             "a template, \"Creation complete after 2m25s\", i.e. 25 s after the 2 min clone for the post-clone "
             "reconfigure and the power-on; split evenly between the two (assumed)")
NO_FIGURE = "no published per-call time found; 2 s assumed (a host or switch configuration call, no data copied)"
DELAYS: dict[str, tuple[int, str]] = {
    "CloneVM_Task": (120_000, CLONE_SOURCE),
    "ReconfigVM_Task": (12_500, VM_SOURCE),
    "PowerOnVM_Task": (12_500, VM_SOURCE),
    "PowerOffVM_Task": (12_500, "as PowerOnVM_Task (assumed)"),
    "ShutdownGuest": (12_500, "as PowerOnVM_Task (assumed)"),
    "CreateDVS_Task": (2_000, NO_FIGURE),
    "CreateDVPortgroup_Task": (2_000, NO_FIGURE),
    "AddVirtualNic": (2_000, NO_FIGURE),
    "ReconfigureComputeResource_Task": (2_000, NO_FIGURE),
    "UpdateOptions": (2_000, NO_FIGURE),
    "EnableRuleset": (2_000, NO_FIGURE),
    "UpdateGraphicsConfig": (2_000, NO_FIGURE),
    "UpdateModuleOptionString": (2_000, NO_FIGURE),
}

# What each resource's create waits for, in order (pulumi-vsphere: the terraform provider's create
# functions; ours: components/dynamic/hostops.py). Keyed by resource type, or by a dynamic
# resource's `kind`.
CREATE_CALLS: dict[str, tuple[str, ...]] = {
    "vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch": ("CreateDVS_Task",),
    "vsphere:index/distributedPortGroup:DistributedPortGroup": ("CreateDVPortgroup_Task",),
    "vsphere:index/vnic:Vnic": ("AddVirtualNic",),
    # clone, the post-clone reconfigure, power on
    "vsphere:index/virtualMachine:VirtualMachine": ("CloneVM_Task", "ReconfigVM_Task", "PowerOnVM_Task"),
    "vsphere:index/computeClusterVmAntiAffinityRule:ComputeClusterVmAntiAffinityRule": (
        "ReconfigureComputeResource_Task",),
    "vsphere-host-advanced-option": ("UpdateOptions",),
    "vsphere-host-firewall-ruleset": ("EnableRuleset",),
    "vsphere-host-graphics": ("UpdateGraphicsConfig",),
    "vsphere-host-module-options": ("UpdateModuleOptionString",),
    # a running VM is shut down, reconfigured and powered on again (hostops.set_vgpu_profile)
    "vsphere-vm-vgpu": ("ShutdownGuest", "ReconfigVM_Task", "PowerOnVM_Task"),
}


def method_delay_flag(scale: float) -> str:
    return ",".join(f"{m}:{round(ms * scale)}" for m, (ms, _) in DELAYS.items())


def create_seconds(resource, scale: float) -> float:
    kind = resource.inputs.get("kind") if resource.type == "pulumi-python:dynamic:Resource" else resource.type
    return sum(DELAYS[m][0] for m in CREATE_CALLS.get(kind, ())) * scale / 1000


def waits_for(resources: Iterable) -> dict[str, set[str]]:
    """Each resource's URN -> the URNs of the resources its create waits for (a dependency on a
    component is one on everything under it)."""
    resources = list(resources)
    by_urn = {r.urn: r for r in resources}
    children: dict[str, list[str]] = {}
    for r in resources:
        children.setdefault(r.parent_urn, []).append(r.urn)

    def expand(urn: str) -> set[str]:
        found = {urn}
        for child in children.get(urn, []):
            found |= expand(child)
        return found

    return {r.urn: {u for dep in r.dependencies for u in expand(dep) if u in by_urn and u != r.urn}
            for r in resources}


def critical_path(resources: Iterable, scale: float) -> tuple[float, list[str]]:
    """The longest chain of creates, in seconds, and its resources' names, first to last."""
    resources = list(resources)
    by_urn = {r.urn: r for r in resources}
    before_of = waits_for(resources)

    memo: dict[str, tuple[float, list[str]]] = {}

    def longest(urn: str) -> tuple[float, list[str]]:
        if urn not in memo:
            r = by_urn[urn]
            before: tuple[float, list[str]] = (0.0, [])
            for u in sorted(before_of[urn]):
                before = max(before, longest(u), key=lambda t: t[0])
            memo[urn] = (before[0] + create_seconds(r, scale), before[1] + [r.name])
        return memo[urn]

    return max((longest(u) for u in by_urn), key=lambda t: t[0])


def _event_times(event_log: Path) -> tuple[float, dict[str, float], dict[str, float]]:
    """From the engine's event log of an update: when it started, and each resource's step start and end
    (the engine's timestamps are whole seconds)."""
    t0: float | None = None
    start: dict[str, float] = {}
    end: dict[str, float] = {}
    for line in event_log.read_text().splitlines():
        event = json.loads(line)
        stamp = float(event.get("timestamp", 0))
        t0 = stamp if t0 is None else min(t0, stamp)
        for key, into in (("resourcePreEvent", start), ("resOutputsEvent", end)):
            body = event.get(key)
            if body and not body.get("planning"):
                into.setdefault(body["metadata"]["urn"], stamp)
    return t0 or 0.0, start, end


def _durations(up_log: str) -> dict[str, float]:
    """Each resource's create as the engine printed it (`<type> <name> created (0.31s)`), by name."""
    found = {}
    for match in re.finditer(r"^ \+ +\S+ (\S+) created \(([\d.]+)(m?)s\)", up_log, re.MULTILINE):
        found[match.group(1)] = float(match.group(2)) * (60 if match.group(3) else 1)
    return found


def realized_chain(resources: Iterable, event_log: Path, up_log: str) -> list[tuple[str, str, float, float]]:
    """The chain of creates the update actually waited on: from the create that finished last, back through
    the dependency that finished last each time. Each link: (kind, name, seconds its create took, seconds it
    waited after what it waited for had finished: the engine's scheduling and checkpoints)."""
    resources = [r for r in resources if r.custom]
    by_urn = {r.urn: r for r in resources}
    before_of = waits_for(resources)
    t0, start, end = _event_times(event_log)
    took = _durations(up_log)
    ended = {u: t for u, t in end.items() if u in by_urn and u in start}
    chain: list[tuple[str, str, float, float]] = []
    current = max(ended, key=lambda u: (ended[u], u), default=None)
    while current is not None:
        r = by_urn[current]
        deps = [u for u in before_of[current] if u in ended]
        previous = max(deps, key=lambda u: (ended[u], u), default=None)
        ready = ended[previous] if previous else t0
        ran = took.get(r.name, ended[current] - start[current])
        waited = max(0.0, ended[current] - ran - ready)
        kind = r.inputs.get("kind") if r.type == "pulumi-python:dynamic:Resource" else r.type.rsplit(":", 1)[-1]
        chain.append((str(kind), r.name, ran, waited))
        current = previous
    return list(reversed(chain))


def chain_table(chain: list[tuple[str, str, float, float]]) -> list[str]:
    """The realized chain grouped by runs of the same kind, in order."""
    rows: list[list] = []
    for kind, name, ran, waited in chain:
        if rows and rows[-1][0] == kind:
            rows[-1][1] += 1
            rows[-1][3] += ran
            rows[-1][4] += waited
            rows[-1][2] = f"{rows[-1][2].split(' .. ')[0]} .. {name}"
        else:
            rows.append([kind, 1, name, ran, waited])
    lines = ["| on the chain | resources | creates took | waited between steps |", "|---|---|---|---|"]
    lines += [f"| {kind} | {count} ({names}) | {ran:.0f} s | {waited:.0f} s |"
              for kind, count, names, ran, waited in rows]
    total_ran = sum(c[2] for c in chain)
    total_waited = sum(c[3] for c in chain)
    lines.append(f"| total | {len(chain)} | {total_ran:.0f} s | {total_waited:.0f} s |")
    return lines


def up_seconds(work: Path, scale: float, parallel: int | None, env: Mapping[str, str],
               event_log: Path) -> tuple[int, int, str]:
    """Resources created, seconds of `pulumi up` (sim-preview.sh --up) against lab-vcsim, and its output;
    the engine's event log of the update goes to `event_log`."""
    run_env = dict(env, SIM_VCSIM_ARGS=f"-cluster 1 -host {HOSTS} -method-delay {method_delay_flag(scale)}",
                   SIM_EVENT_LOG=str(event_log))
    if parallel:
        run_env["SIM_PARALLEL"] = str(parallel)
    done = subprocess.run(["bash", str(work / "scripts/sim-preview.sh"), "--stack", "simbench", "--up", "--no-policy"],
                          cwd=work, env=run_env, capture_output=True, text=True)
    output = done.stdout + done.stderr
    if done.returncode == SKIP:
        print(output.strip().splitlines()[-1])
        raise SystemExit(SKIP)
    match = re.search(r"PASS up(?: --parallel \d+)?: (\d+) created, (\d+)s", output)
    if done.returncode != 0 or not match:
        print(output[-5000:], file=sys.stderr)
        if match:  # up itself was measured; what failed came after it
            print(f"up: {match.group(1)} created in {match.group(2)} s; the run failed after it", file=sys.stderr)
        raise SystemExit(1)
    return int(match.group(1)), int(match.group(2)), output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="4,64,512", help="comma-separated worker counts")
    parser.add_argument("--scale", type=float, default=0.1, help="multiplies every delay (1 = a real vCenter)")
    parser.add_argument("--parallel", default="0",
                        help="comma-separated engine --parallel values; 0 is the engine's default")
    parser.add_argument("--plan-only", action="store_true", help="critical paths only, no pulumi up")
    args = parser.parse_args(argv)
    from tools.mockrun import run_program

    sim = yaml.safe_load((REPO / "Pulumi.sim.yaml").read_text())
    env = dict(os.environ)
    env.setdefault("PULUMI_CACHE_DIR", str(REPO / ".cache" / "pulumi"))
    env.setdefault("VENV", str(REPO / ".venv"))
    env.setdefault("VCSIM", str(REPO / "build" / "bin" / "lab-vcsim"))
    print(f"delays (x{args.scale}): " + ", ".join(f"{m} {ms * args.scale / 1000:g} s" for m, (ms, _) in DELAYS.items()))
    print("| workers | resources | critical path | engine --parallel | up wall | wall / critical path |")
    print("|---|---|---|---|---|---|")
    chains: list[tuple[int, int, list[tuple[str, str, float, float]]]] = []
    for workers in (int(w) for w in args.workers.split(",")):
        config = simbench_config(sim, workers)
        run = run_program(config["config"], stack="simbench")
        path_s, chain = critical_path(run.resources, args.scale)
        if args.plan_only:
            print(f"| {workers} | {len(run.resources) + 1} | {path_s:.1f} s ({' > '.join(chain)}) | - | - | - |",
                  flush=True)
            continue
        with tempfile.TemporaryDirectory(prefix="bench-up.") as tmp:
            work = _stage(REPO, Path(tmp) / "tree", workers)
            for parallel in (int(p) for p in args.parallel.split(",")):
                t = time.monotonic()
                event_log = Path(tmp) / f"events-{parallel}.jsonl"
                created, wall, output = up_seconds(work, args.scale, parallel or None, env, event_log)
                ratio = wall / path_s if path_s else float("inf")
                print(f"| {workers} | {created} | {path_s:.1f} s | {parallel or 'default'} | {wall} s | {ratio:.2f} |"
                      f"  (run {time.monotonic() - t:.0f} s)", flush=True)
                chains.append((workers, parallel, realized_chain(run.resources, event_log, output)))
    for workers, parallel, waited_on in chains:
        print(f"\nWhat the update waited on at {workers} workers, engine --parallel {parallel or 'default'}:")
        print("\n".join(chain_table(waited_on)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
