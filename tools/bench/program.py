"""`make bench`: the program under mocks next to its floor, on generated labs of 4, 64 and 512 workers.

Each lab is the lab stack scaled (OpenShift, switch and add-ons included): four workers per
worker host, RDMA and management networks widened to /16.

Every measurement is a fresh process (`python -m tools.bench one KIND WORKERS`), so no run
inherits another's root Stack, Outputs or heap. For each size the program, the floor
(tools/bench/floor.py: the same registrations without project logic) and the whole `make plan`
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

from tools.bench.lab import scaled_lab  # noqa: E402  (the floor uses it too)

REPO = Path(__file__).resolve().parents[2]
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
    edges: dict[str, int] = {}
    if kind == "program":
        config = scaled_lab(workers)
        run = mockrun.run_program(config, stack=f"bench{workers}")
        resources = len(run.resources)
        edges = dependency_counts(run.resources)
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
        from tools.bench import floor

        if manifest is None:
            raise SystemExit("the floor needs the manifest recorded from the program")
        resources = floor.replay(manifest)["resources"]
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the policy pack's process
    cpu = time.process_time() - STARTED_CPU + children.ru_utime + children.ru_stime
    wall = time.perf_counter() - STARTED
    return {
        "kind": kind, "workers": workers, "resources": resources, "pid": os.getpid(),
        "cpu": cpu, "wall": wall, "gcSeconds": gc_clock.seconds, "gcCollections": gc_clock.collections,
        "peakRssMb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **edges,
    }


def dependency_counts(resources: list) -> dict[str, int]:
    """Declared dependency edges, and the dependency URNs the state would carry (`dependencies` and
    every `propertyDependencies` list): both must grow with the lab, not with its square."""
    return {
        "edges": sum(len(r.dependencies) for r in resources),
        "stateUrns": sum(len(r.dependencies) + sum(len(u) for u in r.property_dependencies.values())
                         for r in resources),
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
    command = [sys.executable, "-m", "tools.bench.floor", "record", str(workers), str(path)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return path


def run_size(size: int, repeat: int, directory: Path) -> list[dict]:
    """Every (kind, round) of one size in its own process; rounds rotate the kinds. The floor's
    manifest (a pickle of every registration, ~100 MB at 512 workers) is removed once measured."""
    manifest = record_manifest(size, directory)
    results: list[dict] = []
    try:
        for round_ in range(repeat):
            kinds = KINDS[round_ % 3:] + KINDS[:round_ % 3]  # no kind always runs first
            for kind in kinds:
                results.append({**_child(["one", kind, str(size), str(manifest)]), "round": round_})
    finally:
        manifest.unlink(missing_ok=True)
    return results


def run_bench(sizes: list[int], repeat: int, directory: Path) -> list[dict]:
    """Every size, one after the other (see run_size)."""
    return [r for size in sizes for r in run_size(size, repeat, directory)]


def estimate_seconds(size: int, measured: dict[int, float]) -> float | None:
    """Wall seconds a size will take: the line through the two largest sizes measured (a size's cost is
    a fixed part, the processes' start, plus a part linear in the workers). None before two sizes."""
    if len(measured) < 2:
        return None
    (w1, t1), (w2, t2) = sorted(measured.items())[-2:]
    slope = max(0.0, (t2 - t1) / (w2 - w1))
    return max(t2, t2 + slope * (size - w2))


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
            if kind == "program":
                row[kind]["edges"] = runs[0]["edges"]
                row[kind]["stateUrns"] = runs[0]["stateUrns"]
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


HEADER = (f"{'workers':>7} {'resources':>9} {'program s':>15} {'floor s':>15} {'ratio':>6} "
          f"{'ms/res':>7} {'GC share':>8} {'peak RSS MB':>13} {'make plan s':>15} {'plan/program':>12} "
          f"{'edges/res':>9} {'state URNs/res':>14}")


def row_line(row: dict) -> str:
    p, f, pl = row["program"], row["floor"], row["plan"]
    return (f"{row['workers']:>7} {p['resources']:>9} {p['cpu']:>7.2f} ({p['wall']:>5.2f}) "
            f"{f['cpu']:>7.2f} ({f['wall']:>5.2f}) {row['ratio']:>6.2f} {row['msPerResource']:>7.2f} "
            f"{p['gcShare']:>8.0%} {p['peakRssMb']:>6.0f}/{f['peakRssMb']:<6.0f} "
            f"{pl['cpu']:>7.2f} ({pl['wall']:>5.2f}) {row['planRatio']:>12.2f} "
            f"{p['edges'] / p['resources']:>9.2f} {p['stateUrns'] / p['resources']:>14.2f}")


def print_summary(rows: list[dict]) -> None:
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
    parser.add_argument("--sizes", default="4,64,512", help="worker counts, comma-separated, measured in this order")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=0,
                        help="seconds (0: none); no size starts once it has passed, nor, from the third size "
                             "on, when its estimate would pass it")
    parser.add_argument("--out", type=Path, default=REPO / "build" / "bench", help="results.json goes here")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        print(f"--sizes: {args.sizes!r} is not a comma-separated list of worker counts (e.g. 4,64,512)",
              file=sys.stderr)
        return 2
    if not sizes or min(sizes) < 1 or args.repeat < 1 or args.time_limit < 0:
        print(f"--sizes {args.sizes!r}, --repeat {args.repeat}, --time-limit {args.time_limit}: "
              "sizes and repeat must be at least 1, the time limit 0 (none) or more", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    measured: dict[int, float] = {}  # workers -> wall seconds the size took
    results: list[dict] = []
    rows: list[dict] = []
    print(f"median of {args.repeat} fresh processes per cell, interleaved; CPU seconds (wall in brackets)")
    print(HEADER, flush=True)
    for i, size in enumerate(sizes):
        elapsed = time.perf_counter() - started
        estimate = estimate_seconds(size, measured)
        if args.time_limit and elapsed + (estimate or 0) > args.time_limit:
            guess = f"estimated {estimate:.0f} s; " if estimate is not None else ""
            print(f"not measured: {size} workers ({guess}{elapsed:.0f} s of the {args.time_limit:.0f} s limit "
                  "used)", flush=True)
            continue
        began = time.perf_counter()
        size_results = run_size(size, args.repeat, args.out)
        measured[size] = time.perf_counter() - began
        results += size_results
        (row,) = summarize(size_results, [size])
        rows.append(row)
        ahead = [estimate_seconds(s, measured) for s in sizes[i + 1:]]
        progress = f"  [{measured[size]:.0f} s"
        if ahead:
            progress += (f"; about {sum(e for e in ahead if e is not None):.0f} s to go]"
                         if None not in ahead else "; an estimate after two sizes]")
        else:
            progress += "]"
        print(row_line(row) + progress, flush=True)
    print_summary(rows)
    (args.out / "results.json").write_text(json.dumps({"runs": results, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
