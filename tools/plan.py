"""`make plan STACK=lab`: run the program offline under mocks, print the resource tree, write
plan.json (every resource's inputs, secrets redacted), then run the policy pack over the same
resources through its gRPC analyzer interface and print its verdicts.

Exit status: 0 when the plan holds no mandatory policy violation, 1 when it does, 2 when the
configuration is invalid.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tools.mockrun import Run, run_stack


def tree_lines(run: Run) -> list[str]:
    """The resource tree, children indented under their parents, in registration order."""
    urns = {r.urn for r in run.resources}  # once: a set per resource made this O(n^2)
    children: dict[str, list] = {}
    for r in run.resources:
        children.setdefault(r.parent_urn if r.parent_urn in urns else "", []).append(r)
    lines: list[str] = []

    def walk(parent: str, depth: int) -> None:
        for r in sorted(children.get(parent, []), key=lambda x: x.name):
            lines.append(f"{'  ' * depth}{r.type}  {r.name}")
            walk(r.urn, depth + 1)

    walk("", 0)
    return lines


def tidy_numbers(value):
    """Whole-number floats back to ints: the wire format has only doubles."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: tidy_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [tidy_numbers(v) for v in value]
    return value


def plan_document(run: Run) -> dict:
    urns = {r.urn: r.name for r in run.resources}
    return {
        "stack": run.stack,
        "resourceCount": len(run.resources),
        "resources": [
            {
                "type": r.type,
                "name": r.name,
                "urn": r.urn,
                "parent": urns.get(r.parent_urn),
                "custom": r.custom,
                "inputs": tidy_numbers(r.redacted()),
                "secretInputs": r.secret_paths(),
            }
            for r in run.resources
        ],
        "outputs": run.outputs,
    }


def write_plan(run: Run, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "plan.json"
    path.write_text(json.dumps(plan_document(run), indent=2, sort_keys=False, default=str) + "\n")
    return path


def run_plan(stack: str, out: Path, quiet: bool = False) -> tuple[Run, float]:
    started = time.perf_counter()
    run = run_stack(stack)
    elapsed = time.perf_counter() - started
    write_plan(run, out)
    if not quiet:
        print("\n".join(tree_lines(run)))
        print(f"\n{len(run.resources)} resources in stack {stack!r} ({elapsed:.2f} s); plan written to {out / 'plan.json'}")
    return run, elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="lab")
    parser.add_argument("--out", type=Path, help="output directory (default build/<stack>)")
    parser.add_argument("--no-policy", action="store_true", help="skip the policy pack")
    args = parser.parse_args(argv)
    out = args.out or Path("build") / args.stack
    try:
        run, _ = run_plan(args.stack, out)
    except Exception as err:  # the program's own errors (config, secrets) are the user's message
        if type(err).__name__ == "RunError" or isinstance(err, FileNotFoundError):
            print(f"error: {err}", file=sys.stderr)
            return 2
        raise
    if args.no_policy:
        return 0
    from tools import policy_check

    print("\npolicy pack (policies/), served over its gRPC analyzer interface:")
    return policy_check.main([str(out / "plan.json"), "--out", str(out / "policy-report.json")])


if __name__ == "__main__":
    sys.exit(main())
