"""The real preview, timed: `pulumi preview` of a generated sim stack of N workers (default 512)
with the real engine and provider plugins against vcsim on a loopback port, without and with
`--policy-pack policies`.

    python -m tools.bench_preview [--workers 512] [--tree DIR]

The sim stack (Pulumi.sim.yaml: the lab mapped onto vcsim's inventory, vSphere section only) is
widened to N workers on 128 worker hosts (vcsim started with that many hosts) and written as
Pulumi.simbench.yaml in a temporary copy of this tree; scripts/sim-preview.sh does the rest
(vcsim, file backend, placeholder secrets) and reports each preview's seconds. Addresses come
from the benchmarking range 198.18.0.0/15 (RFC 2544); preview contacts none of them.

Prints both previews, their resource count and the ratio. Exit 0 when both ran, 77 with
"SKIP <reason>" when the sim stack, the engine or a provider plugin is missing, 1 on failure.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
SKIP = 77
SIM_FILES = ("Pulumi.sim.yaml", "scripts/sim-preview.sh")
HOSTS = 128


def simbench_config(sim: dict, workers: int, hosts: int = HOSTS) -> dict:
    """Pulumi.sim.yaml's document widened to `workers` workers on `hosts` vcsim hosts."""
    doc = yaml.safe_load(yaml.safe_dump(sim))
    vs = doc["config"]["gpu-lab:vsphere"]
    uplinks = vs["workerHosts"][0]["rdmaUplinks"]
    vs["workerHosts"] = [{"name": f"DC0_C0_H{i}", "rdmaUplinks": list(uplinks)} for i in range(hosts)]
    vs["networks"]["management"]["vmCidr"] = "198.18.0.0/16"
    vs["networks"]["rdma"]["cidr"] = "198.19.0.0/16"
    vs["vmkAddresses"] = {"first": "198.19.0.10"}
    vs["controlPlane"]["managementAddresses"] = {"first": "198.18.0.11"}
    vs["workers"]["names"] = [f"simw{i + 1:04d}" for i in range(workers)]
    vs["workers"]["managementAddresses"] = {"first": "198.18.16.1"}
    vs["workers"]["rdmaAddresses"] = {"first": "198.19.16.1"}
    return doc


def _copy_tree(source: Path, dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=source,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in files:
        if not name or name.startswith((".venv/", ".cache/")) or not (source / name).exists():
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / name, target, follow_symlinks=False)


def _preview(work: Path, policy: bool, env: dict) -> tuple[float, int, float]:
    """Seconds of the `pulumi preview` step, resources to create, CPU seconds of the whole script."""
    command = ["bash", str(work / "scripts/sim-preview.sh"), "--stack", "simbench"]
    if not policy:
        command.append("--no-policy")
    cpu_before = _children_cpu()
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
    cpu = _children_cpu() - cpu_before
    output = done.stdout + done.stderr
    if done.returncode == SKIP:
        print(output.strip().splitlines()[-1])
        raise SystemExit(SKIP)
    if done.returncode != 0:
        print(output[-5000:], file=sys.stderr)
        raise SystemExit(1)
    match = re.search(r"PASS preview.*?: (\d+) to create, (\d+)s", output)
    if not match:
        print(output[-3000:], file=sys.stderr)
        raise SystemExit("no preview line in sim-preview.sh's output")
    return float(match.group(2)), int(match.group(1)), cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=1,
                        help="preview pairs, alternating which of the two runs first; medians are printed")
    parser.add_argument("--only", choices=("alone", "pack"), help="run just one of the two previews")
    parser.add_argument("--tree", type=Path, default=REPO,
                        help="the working tree to preview (default: this one)")
    args = parser.parse_args(argv)
    missing = [name for name in SIM_FILES if not (args.tree / name).is_file()]
    if missing:
        print(f"SKIP the sim stack is not in {args.tree}: no {', '.join(missing)}")
        return SKIP
    env = dict(os.environ)
    env.setdefault("PULUMI_CACHE_DIR", str(REPO / ".cache" / "pulumi"))
    env.setdefault("VENV", str(REPO / ".venv"))
    env.setdefault("VCSIM", str(REPO / ".cache" / "bin" / "vcsim"))
    env["SIM_VCSIM_ARGS"] = f"-cluster 1 -host {HOSTS}"
    with tempfile.TemporaryDirectory(prefix="bench-preview.") as tmp:
        work = Path(tmp)
        _copy_tree(args.tree, work)
        sim = yaml.safe_load((work / "Pulumi.sim.yaml").read_text())
        (work / "Pulumi.simbench.yaml").write_text(yaml.safe_dump(simbench_config(sim, args.workers), sort_keys=False))
        subprocess.run(["git", "init", "-q"], cwd=work, check=True)  # sim-preview.sh lists files with git
        subprocess.run(["git", "add", "-A"], cwd=work, check=True)
        kinds = ("alone", "pack") if args.only is None else (args.only,)
        times: dict[str, list[float]] = {kind: [] for kind in kinds}
        cpus: dict[str, list[float]] = {kind: [] for kind in kinds}
        counts: dict[str, int] = {}
        for round_ in range(args.rounds):
            for kind in (kinds if round_ % 2 == 0 else kinds[::-1]):  # neither always runs first
                seconds, counts[kind], cpu = _preview(work, policy=kind == "pack", env=env)
                times[kind].append(seconds)
                cpus[kind].append(cpu)
                print(f"  round {round_ + 1}: {kind:5} {seconds:4.0f} s (CPU of every process of the run, vcsim and "
                      f"stack set-up included: {cpu:.0f} s)", flush=True)
    median = {kind: statistics.median(values) for kind, values in times.items()}
    print(f"real preview, {args.workers} workers ({max(counts.values())} resources to create), vcsim with {HOSTS} hosts, "
          f"median of {args.rounds} interleaved round(s):")
    if "alone" in median:
        print(f"  pulumi preview                          {median['alone']:6.0f} s  {_runs(times['alone'])}")
    if "pack" in median:
        print(f"  pulumi preview --policy-pack policies   {median['pack']:6.0f} s  {_runs(times['pack'])}")
    if len(median) == 2:
        ratios = [p / a for a, p in zip(times["alone"], times["pack"])]
        print(f"  the pack adds {median['pack'] / median['alone'] - 1:.0%} (per round: "
              f"{', '.join(f'{r - 1:.0%}' for r in ratios)})")
    return 0


def _runs(values: list[float]) -> str:
    return "(" + ", ".join(f"{v:.0f}" for v in values) + ")" if len(values) > 1 else ""


if __name__ == "__main__":
    sys.exit(main())
