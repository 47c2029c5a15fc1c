"""`make bench`: the program under mocks next to its floor, on generated labs of 4, 64 and 512 workers.

Each lab is the lab stack scaled (OpenShift, switch and add-ons included): four workers per
worker host, RDMA and management networks widened to /16.

Every measurement is a fresh process (`python -m tools.bench one KIND WORKERS`), so no run
inherits another's root Stack, Outputs or heap. For each size the program, the floor
(tools/bench_floor.py: the same registrations without project logic) and the whole `make plan`
(program, tree, plan.json, policy pass) run interleaved, `--repeat` times each; the table shows
medians. Times are the process's CPU seconds (user + system) from
its start to the end of registration, which a busy machine disturbs far less than wall-clock
time; `make plan` adds the policy pack's process (a child) to its CPU time; wall-clock medians
are printed too. The floor runs with the SDK's default collector settings. Peak RSS is the process's high-water mark.
"""

from __future__ import annotations

import time

STARTED_CPU = time.process_time()
STARTED = time.perf_counter()

import argparse  # noqa: E402  (the clocks above start before any import)
import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from tools.bench_lab import scaled_lab  # noqa: E402  (bench_floor uses it too)

REPO = Path(__file__).resolve().parent.parent
KINDS = ("program", "floor", "plan")


# ---------------------------------------------------------------- one measurement (child process)


class _GcClock:
    """Seconds spent in the cyclic garbage collector, from gc.callbacks."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = 0
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.seconds += time.process_time() - self._start
            self.collections += 1


def measure_one(kind: str, workers: int, manifest: Path | None) -> dict:
    """Run one size in this (fresh) process; what `bench` prints comes from here."""
    if kind not in KINDS:
        raise SystemExit(f"kind must be one of {KINDS}, not {kind!r}")
    from tools import mockrun

    if mockrun.runs_in_this_process:
        raise SystemExit("this process already ran a stack: each measurement needs a fresh process")
    gc_clock = _GcClock()
    if kind == "program":
        config = scaled_lab(workers)
        run = mockrun.run_program(config, stack=f"bench{workers}")
        resources = len(run.resources)
    elif kind == "plan":  # what `make plan` does: program, tree, plan.json, the policy pass
        import contextlib
        import io
        import tempfile

        from tools import plan

        run = mockrun.run_program(scaled_lab(workers), stack=f"bench{workers}")
        resources = len(run.resources)
        with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
            plan.tree_lines(run)
            path = plan.write_plan(run, Path(out))
            assert path.is_file()
            status = plan.check_policies(run, Path(out))  # the pack sees what make plan hands it
        if status == 2:
            raise SystemExit("the policy pass failed")
    else:
        from tools import bench_floor

        if manifest is None:
            raise SystemExit("the floor needs the manifest recorded from the program")
        resources = bench_floor.replay(manifest)["resources"]
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the policy pack's process
    cpu = time.process_time() - STARTED_CPU + children.ru_utime + children.ru_stime
    wall = time.perf_counter() - STARTED
    return {
        "kind": kind, "workers": workers, "resources": resources, "pid": os.getpid(),
        "cpu": cpu, "wall": wall, "gcSeconds": gc_clock.seconds, "gcCollections": gc_clock.collections,
        "peakRssMb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


# ---------------------------------------------------------------- the driver


def _child(args: list[str]) -> dict:
    command = [sys.executable, "-m", "tools.bench", *args]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def manifest_path(workers: int, directory: Path) -> Path:
    return directory / f"floor-{workers}.pickle"


def record_manifest(workers: int, directory: Path) -> Path:
    path = manifest_path(workers, directory)
    command = [sys.executable, "-m", "tools.bench_floor", "record", str(workers), str(path)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return path


def run_bench(sizes: list[int], repeat: int, directory: Path) -> list[dict]:
    """Every (size, kind, round) in its own process; rounds interleave sizes and kinds."""
    manifests = {size: record_manifest(size, directory) for size in sizes}
    results: list[dict] = []
    for round_ in range(repeat):
        for size in sizes:
            kinds = KINDS[round_ % 3:] + KINDS[:round_ % 3]  # no kind always runs first
            for kind in kinds:
                results.append({**_child(["one", kind, str(size), str(manifests[size])]), "round": round_})
    return results


def summarize(results: list[dict], sizes: list[int]) -> list[dict]:
    rows = []
    for size in sizes:
        row: dict = {"workers": size}
        for kind in KINDS:
            runs = [r for r in results if r["workers"] == size and r["kind"] == kind]
            counts = {r["resources"] for r in runs}
            if len(counts) != 1:
                raise SystemExit(f"{kind} at {size} workers registered {sorted(counts)} resources across runs")
            row[kind] = {
                "resources": counts.pop(),
                "cpu": statistics.median(r["cpu"] for r in runs),
                "wall": statistics.median(r["wall"] for r in runs),
                "gcShare": statistics.median(r["gcSeconds"] / r["cpu"] for r in runs),
                "peakRssMb": max(r["peakRssMb"] for r in runs),
                "runs": len(runs),
            }
        row["ratio"] = row["program"]["cpu"] / row["floor"]["cpu"]
        row["planRatio"] = row["plan"]["cpu"] / row["program"]["cpu"]
        # the same ratio within each round (neighbours in time, so less moved by other jobs)
        by_round = {(r.get("round"), r["kind"]): r["cpu"] for r in results if r["workers"] == size}
        rounds = sorted({k[0] for k in by_round if k[0] is not None})
        row["planRatios"] = [by_round[(n, "plan")] / by_round[(n, "program")] for n in rounds
                             if (n, "plan") in by_round and (n, "program") in by_round]
        row["msPerResource"] = 1000 * row["program"]["cpu"] / row["program"]["resources"]
        rows.append(row)
    return rows


def print_table(rows: list[dict], repeat: int) -> None:
    print(f"median of {repeat} fresh processes per cell, interleaved; CPU seconds (wall in brackets)")
    print(f"{'workers':>7} {'resources':>9} {'program s':>15} {'floor s':>15} {'ratio':>6} "
          f"{'ms/res':>7} {'GC share':>8} {'peak RSS MB':>13} {'make plan s':>15} {'plan/program':>12}")
    for row in rows:
        p, f, pl = row["program"], row["floor"], row["plan"]
        print(f"{row['workers']:>7} {p['resources']:>9} {p['cpu']:>7.2f} ({p['wall']:>5.2f}) "
              f"{f['cpu']:>7.2f} ({f['wall']:>5.2f}) {row['ratio']:>6.2f} {row['msPerResource']:>7.2f} "
              f"{p['gcShare']:>8.0%} {p['peakRssMb']:>6.0f}/{f['peakRssMb']:<6.0f} "
              f"{pl['cpu']:>7.2f} ({pl['wall']:>5.2f}) {row['planRatio']:>12.2f}")
    for row in rows:
        if row["planRatios"]:
            ratios = row["planRatios"]
            print(f"make plan / program at {row['workers']} workers, round by round: "
                  f"{', '.join(f'{r:.2f}' for r in ratios)} (median {statistics.median(ratios):.2f})")
    if len(rows) >= 2:
        first, last = rows[-2], rows[-1]
        print(f"per-resource time {last['workers']} vs {first['workers']} workers: "
              f"{last['msPerResource'] / first['msPerResource']:.2f}x (program/floor peak RSS in the last column)")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "one":  # child: `one KIND WORKERS MANIFEST`
        kind, workers, manifest = argv[1], int(argv[2]), Path(argv[3])
        print(json.dumps(measure_one(kind, workers, manifest)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4,64,512")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "build" / "bench",
                        help="floor manifests and results.json go here")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    results = run_bench(sizes, args.repeat, args.out)
    rows = summarize(results, sizes)
    print_table(rows, args.repeat)
    (args.out / "results.json").write_text(json.dumps({"runs": results, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
