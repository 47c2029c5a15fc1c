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


def critical_path(resources: Iterable, scale: float) -> tuple[float, list[str]]:
    """The longest chain of creates, in seconds, and its resources' names, first to last."""
    resources = list(resources)
    by_urn = {r.urn: r for r in resources}
    children: dict[str, list[str]] = {}
    for r in resources:
        children.setdefault(r.parent_urn, []).append(r.urn)

    def expand(urn: str) -> set[str]:
        # Waiting for a component is waiting for everything under it.
        found = {urn}
        for child in children.get(urn, []):
            found |= expand(child)
        return found

    memo: dict[str, tuple[float, list[str]]] = {}

    def longest(urn: str) -> tuple[float, list[str]]:
        if urn not in memo:
            r = by_urn[urn]
            before: tuple[float, list[str]] = (0.0, [])
            for dep in r.dependencies:
                for u in expand(dep):
                    if u in by_urn and u != urn:
                        before = max(before, longest(u), key=lambda t: t[0])
            memo[urn] = (before[0] + create_seconds(r, scale), before[1] + [r.name])
        return memo[urn]

    return max((longest(u) for u in by_urn), key=lambda t: t[0])


def up_seconds(work: Path, scale: float, parallel: int | None, env: Mapping[str, str]) -> tuple[int, int]:
    """Resources created and seconds of `pulumi up` (sim-preview.sh --up), against lab-vcsim."""
    run_env = dict(env, SIM_VCSIM_ARGS=f"-cluster 1 -host {HOSTS} -method-delay {method_delay_flag(scale)}")
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
    return int(match.group(1)), int(match.group(2))


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
                created, wall = up_seconds(work, args.scale, parallel or None, env)
                ratio = wall / path_s if path_s else float("inf")
                print(f"| {workers} | {created} | {path_s:.1f} s | {parallel or 'default'} | {wall} s | {ratio:.2f} |"
                      f"  (run {time.monotonic() - t:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
