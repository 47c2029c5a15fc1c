"""The real preview, timed: `pulumi preview` of a generated sim stack of N workers (default 512)
with the real engine and provider plugins against vcsim on a loopback port, alone, with a pack
that judges nothing, and with `--policy-pack policies`.

    python -m tools.bench.preview [--workers 512] [--rounds N] [--kinds alone,empty,pack] [--tree DIR]
                                  [--baseline DIR]

The sim stack (Pulumi.sim.yaml: the lab mapped onto vcsim's inventory, vSphere section only) is
widened to N workers on 128 worker hosts (vcsim started with that many hosts) and written as
Pulumi.simbench.yaml in a temporary copy of this tree; scripts/sim-preview.sh does the rest
(vcsim, file backend, placeholder secrets) and reports each preview's seconds. Addresses come
from the benchmarking range 198.18.0.0/15 (RFC 2544); preview contacts none of them.

Three previews, interleaved when repeated (``--rounds``): the stack alone, with a pack that
judges nothing (the analyzer protocol's own cost: the plugin, its start, a Remediate and an
Analyze round trip per resource, AnalyzeStack), and with policies/. Prints the medians, the
resource count and what each pack adds. ``--baseline`` adds a fourth preview to each round, of
another checkout (an earlier commit) with its own pack, and prints the ratio of the two previews
with the pack: a before/after measured in one run, where the machine's load moves both.
Exit 0 when every preview ran, 77 with "SKIP <reason>" when the sim stack, the engine or a
provider plugin is missing, 1 on failure.
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

REPO = Path(__file__).resolve().parents[2]
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


KINDS = ("alone", "empty", "pack")
LABELS = {
    "alone": "pulumi preview",
    "empty": "pulumi preview --policy-pack (a pack that judges nothing)",
    "pack": "pulumi preview --policy-pack policies",
}

# The protocol's floor: the same plugin, server and fast paths as policies/__main__.py, and one
# rule that judges no resource type, so every request is answered without running a rule.
EMPTY_PACK = """from pulumi_policy import EnforcementLevel, PolicyPack

from rules.declare import ADVISORY, judges, resource_policy
from rules.pulumi_policy_internals import PoliciesByType, install


def check_nothing(args, report_violation) -> None:
    \"\"\"Judges nothing: the pack's requests cost only the analyzer protocol.\"\"\"


install()
PolicyPack(name="gpu-lab", enforcement_level=EnforcementLevel.ADVISORY, policies=PoliciesByType(
    [resource_policy("judges-nothing", ADVISORY, check_nothing, types=())], judges))
"""


def _preview(work: Path, kind: str, env: dict) -> tuple[float, int, float]:
    """Seconds of the `pulumi preview` step, resources to create, CPU seconds of the whole script."""
    command = ["bash", str(work / "scripts/sim-preview.sh"), "--stack", "simbench"]
    if kind == "alone":
        command.append("--no-policy")
    pack_main = work / "policies" / "__main__.py"
    real_pack = pack_main.read_text()
    if kind == "empty":
        pack_main.write_text(EMPTY_PACK)
    cpu_before = _children_cpu()
    try:
        done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
    finally:
        pack_main.write_text(real_pack)
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


def _stage(tree: Path, work: Path, workers: int, hosts: int = HOSTS) -> Path:
    """A copy of `tree` in `work` with its sim stack widened to `workers` workers on `hosts` hosts."""
    _copy_tree(tree, work)
    sim = yaml.safe_load((work / "Pulumi.sim.yaml").read_text())
    (work / "Pulumi.simbench.yaml").write_text(yaml.safe_dump(simbench_config(sim, workers, hosts), sort_keys=False))
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)  # sim-preview.sh lists files with git
    subprocess.run(["git", "add", "-A"], cwd=work, check=True)
    return work


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=1,
                        help="rounds of the previews, each round in a different order; medians are printed")
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help=f"which previews, comma-separated, of {', '.join(KINDS)}")
    parser.add_argument("--tree", type=Path, default=REPO,
                        help="the working tree to preview (default: this one)")
    parser.add_argument("--baseline", type=Path,
                        help="a checkout of an earlier commit: its preview with its own pack joins each round, "
                             "and the tree's preview with the pack is printed as a ratio of it")
    args = parser.parse_args(argv)
    kinds = tuple(k for k in KINDS if k in args.kinds.split(","))
    if not kinds or set(args.kinds.split(",")) - set(KINDS):
        parser.error(f"--kinds takes a comma-separated list of {', '.join(KINDS)}")
    if args.baseline and "pack" not in kinds:
        parser.error("--baseline compares previews with the pack: --kinds must include pack")
    for tree in filter(None, (args.tree, args.baseline)):
        missing = [name for name in SIM_FILES if not (tree / name).is_file()]
        if missing:
            print(f"SKIP the sim stack is not in {tree}: no {', '.join(missing)}")
            return SKIP
    env = dict(os.environ)
    env.setdefault("PULUMI_CACHE_DIR", str(REPO / ".cache" / "pulumi"))
    env.setdefault("VENV", str(REPO / ".venv"))
    env.setdefault("VCSIM", str(REPO / "build" / "bin" / "lab-vcsim"))
    env["SIM_VCSIM_ARGS"] = f"-cluster 1 -host {HOSTS}"
    cells = list(kinds) + (["baseline"] if args.baseline else [])
    times: dict[str, list[float]] = {cell: [] for cell in cells}
    cpus: dict[str, list[float]] = {cell: [] for cell in cells}
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="bench-preview.") as tmp:
        work = _stage(args.tree, Path(tmp) / "tree", args.workers)
        runs = {kind: (work, kind) for kind in kinds}  # cell -> (staged tree, kind of preview)
        if args.baseline:
            runs["baseline"] = (_stage(args.baseline, Path(tmp) / "baseline", args.workers), "pack")
        for round_ in range(args.rounds):
            shift = round_ % len(cells)  # no cell always runs first
            for cell in cells[shift:] + cells[:shift]:
                seconds, counts[cell], cpu = _preview(*runs[cell], env)
                times[cell].append(seconds)
                cpus[cell].append(cpu)
                print(f"  round {round_ + 1}: {cell:8} {seconds:4.0f} s (CPU of every process of the run, vcsim and "
                      f"stack set-up included: {cpu:.0f} s)", flush=True)
    print(f"real preview, {args.workers} workers ({counts[kinds[0]]} resources to create), "
          f"vcsim with {HOSTS} hosts, "
          f"median of {args.rounds} interleaved round(s); seconds of the preview, then CPU seconds of every process "
          "of the run (vcsim and stack set-up included):")
    labels = dict(LABELS, baseline=f"the baseline ({args.baseline}) with its pack")
    for cell in cells:
        print(f"  {labels[cell]:58} {statistics.median(times[cell]):4.0f} s {_runs(times[cell]):14} "
              f"CPU {statistics.median(cpus[cell]):4.0f} s {_runs(cpus[cell])}")
    if "alone" in kinds:
        for kind in ("empty", "pack"):
            if kind in kinds:
                print(f"  {'the empty pack' if kind == 'empty' else 'the pack'} adds "
                      f"{_adds(times['alone'], times[kind])} to the preview, "
                      f"{_adds(cpus['alone'], cpus[kind])} to the CPU")
    if args.baseline:
        per_round = ", ".join(f"{t / b:.2f}" for b, t in zip(times["baseline"], times["pack"], strict=True))
        ratio = statistics.median(times["pack"]) / statistics.median(times["baseline"])
        print(f"  with the pack, this tree takes {ratio:.2f} times the baseline's preview (per round: {per_round})")
    return 0


def _adds(base: list[float], other: list[float]) -> str:
    per_round = ", ".join(f"{o / b - 1:.0%}" for b, o in zip(base, other, strict=True))
    return f"{statistics.median(other) / statistics.median(base) - 1:.0%} (per round: {per_round})"


def _runs(values: list[float]) -> str:
    return "(" + ", ".join(f"{v:.0f}" for v in values) + ")" if len(values) > 1 else ""


if __name__ == "__main__":
    sys.exit(main())
