"""`make diff STACK=lab [BASE=<git ref>] [FAIL_ON=<effects>]`: what the engine would do
to a lab built from BASE if the working tree were deployed (the command line; tools/diff/__init__.py
tells the whole)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tools.diff.engine import Engine, Step, document
from tools.diff.paths import EFFECTS, OPS
from tools.diff.recording import Planned, snapshot

REPO = Path(__file__).resolve().parent.parent.parent


# ---------------------------------------------------------------- the command line


class BadInput(Exception):
    """A message for the user, exit status 2."""


def parse_fail_on(text: str) -> list[tuple[str, str | None]]:
    """EFFECT (on any resource) or EFFECT:GLOB (on resources whose logical name matches) items."""
    from tools.up_gate import BadInput as GateBadInput
    from tools.up_gate import parse_scoped

    try:
        return parse_scoped(text, EFFECTS, "FAIL_ON")
    except GateBadInput as err:
        raise BadInput(str(err)) from None


# A plain revision: a release, branch, tag or commit with ~ ^ @{} suffixes. No shell or git option
# syntax: the value may come from a recorded stack tag, and git reads a leading '-' as an option.
PLAIN_REVISION = re.compile(r"[A-Za-z0-9._/~^@{}+][A-Za-z0-9._/~^@{}+-]*")


def resolve_base(ref: str) -> str:
    from tools.releases import UnknownRelease, resolve_release  # a tag, else release/releases.txt
    if not PLAIN_REVISION.fullmatch(ref):
        raise BadInput(f"BASE: {ref!r} is not a plain revision: a release (v0.1.0), HEAD, a branch, a tag or a "
                       "commit, of letters, digits and . _ - / ~ ^ @ { } + and not starting with '-'")
    try:
        return resolve_release(ref, REPO)
    except UnknownRelease as err:
        raise BadInput(f"BASE: {err}") from None


def base_snapshot(commit: str, stack: str) -> list[Planned] | None:
    """The stack as planned at `commit`: its program and stack file in a temporary worktree, run by
    this checkout's harness in a subprocess. None when the stack file does not exist there."""
    with tempfile.TemporaryDirectory(prefix="gpu-lab-diff-") as tmp:
        tree = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--quiet", "--detach", str(tree), commit],
                       check=True, capture_output=True)
        try:
            if not (tree / f"Pulumi.{stack}.yaml").exists():
                return None
            done = subprocess.run([sys.executable, str(REPO / "tools" / "plan_tree.py"), str(tree), stack],
                                  capture_output=True, text=True, cwd=tree,
                                  env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
            if done.returncode != 0:
                raise BadInput(f"the stack {stack!r} does not plan at {commit[:12]}:\n"
                               + (done.stderr.strip().splitlines() or ["(no message)"])[-1])
            return [Planned.from_document(d) for d in json.loads(done.stdout)]
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                           capture_output=True)


def roll_line(roll: dict) -> str:
    """A roll as one line of the table: `rolls 4 workers one at a time: w01, w02, w03, w04`."""
    roles = set(roll.get("roles") or [])
    n = len(roll["nodes"])
    what = {frozenset({"worker"}): "workers" if n > 1 else "worker",
            frozenset({"control-plane"}): "control-plane nodes" if n > 1 else "control-plane node"}.get(
        frozenset(roles), "nodes" if n > 1 else "node")
    how = ("drained first" if roll.get("drained", True)
           else "undrained: GPU_LAB_CLUSTER_GONE=1, the cluster is not asked")
    return f"rolls {n} {what} one at a time ({roll['effect']}, {how}): {', '.join(roll['nodes'])}"


def table(steps: list[Step], stack: str, base: str, ref: str, base_missing: bool,
          rolls: list[dict] | None = None) -> list[str]:
    lines = [f"make diff: stack {stack!r}, base {base[:12]} ({ref}) -> working tree"]
    if base_missing:
        lines.append(f"the stack {stack!r} does not exist at {ref}: every resource is a create")
    shown = [s for s in steps if s.op in OPS or s.moved_from]
    state_only = [s for s in steps if s.state_only]
    if not shown:
        lines.append("no changes: the engine would leave a lab built from the base as it is")
        if state_only:
            lines.append(state_only_line(state_only))
        return lines
    groups: dict[str, list[Step]] = {}
    for s in shown:
        groups.setdefault(s.group, []).append(s)
    width = max(len(s.name) for s in shown)
    for group in sorted(groups):
        lines.append(f"\n{group}")
        for s in groups[group]:
            what = s.op if s.op in OPS else "moved"
            row = f"  {what:<8} {s.name:<{width}}  {s.type}"
            if s.keys:
                row += f"  keys: {', '.join(s.keys)}"
            if s.effects:
                row += f"  effects: {', '.join(s.effects)}"
            lines.append(row)
            for note in s.notes:
                lines.append(f"           ({note})")
            if s.moved_from:
                lines.append(f"           (alias of {s.moved_from})")
            if s.refused:
                lines.append(f"           REFUSED: {s.refused}")
    counts = {op: sum(1 for s in steps if s.op == op) for op in OPS}
    effects = {e: sum(1 for s in steps if e in s.effects) for e in EFFECTS}
    lines.append("\n" + ", ".join(f"{n} to {op}" for op, n in counts.items() if n)
                 + ("; effects: " + ", ".join(f"{e} {n}" for e, n in effects.items() if n) if any(effects.values())
                    else "; no effect on the lab beyond the updates"))
    lines.extend(roll_line(roll) for roll in rolls or [])
    refused = [s for s in steps if s.refused]
    if refused:
        lines.append(f"{len(refused)} protected resource(s) would stop `pulumi up` (see REFUSED)")
    if state_only:
        lines.append(state_only_line(state_only))
    return lines


def state_only_line(steps: list[Step]) -> str:
    return (f"state only: the dependencies of {len(steps)} resource(s) change; no step runs for them "
            "(diff.json stateOnly)")


def _cluster_gone_setting() -> None:
    """GPU_LAB_CLUSTER_GONE as the roll reads it (1 or unset): another value is bad input here too."""
    from components.dynamic.provider import VsphereOperationError
    from components.dynamic.roll import cluster_gone

    try:
        cluster_gone()
    except VsphereOperationError as err:
        raise BadInput(str(err)) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.diff", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="lab")
    parser.add_argument("--stack-file", type=Path, help="the working side reads this file, not Pulumi.<stack>.yaml")
    parser.add_argument("--base", default="HEAD", help="git ref of the lab as built (default HEAD)")
    parser.add_argument("--fail-on", default="", help="comma-separated effects that make the exit status 1")
    parser.add_argument("--out", type=Path, help="output directory (default build/<stack>)")
    args = parser.parse_args(argv)
    out = args.out or Path("build") / args.stack
    started = time.perf_counter()
    try:
        fail_on = parse_fail_on(args.fail_on)
        _cluster_gone_setting()
        commit = resolve_base(args.base)
        # The working tree is planned on top of what the base built, as on the lab: the program reads
        # the deployed state (the identity guard; which nodes run, and roll one after another). While
        # the base plans in its subprocess, this process imports the working tree's program.
        with _Background(lambda: base_snapshot(commit, args.stack)) as base_job:
            import_program()
            base = base_job.result()
        new = _plan_working_tree(args.stack, args.stack_file, base)
    except BadInput as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    engine = Engine(base or [], new)
    steps = engine.run()
    for warning in engine.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if engine.refusals:
        print("error: a running lab cannot take this edit; `pulumi preview` would refuse it too:", file=sys.stderr)
        print("\n".join(f"  - {reason}" for reason in engine.refusals), file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    rolls = engine.rolls(steps)
    doc = document(steps, commit, args.stack, base_missing=base is None, rolls=rolls)
    (out / "diff.json").write_text(json.dumps(doc, indent=2) + "\n")
    print("\n".join(table(steps, args.stack, commit, args.base, base is None, rolls)))
    print(f"diff written to {out / 'diff.json'} ({time.perf_counter() - started:.2f} s)")
    from tools.up_gate import covers

    hit = sorted({e for s in steps for e in s.effects if covers(fail_on, e, s.name)}, key=EFFECTS.index)
    if hit:
        print(f"FAIL_ON: {', '.join(hit)} would happen", file=sys.stderr)
    refused = [s for s in steps if s.refused]
    if refused:
        # the real preview fails on these too (exit 1): `pulumi up` would stop before any step
        print(f"REFUSED: the engine would refuse {len(refused)} step(s): "
              + "; ".join(f"{s.op} {s.name} ({s.refused})" for s in refused), file=sys.stderr)
    return 1 if hit or refused else 0


def import_program() -> None:
    """The working tree's program and the SDKs it imports, loaded ahead of its run."""
    from tools.mockrun import REPO as CHECKOUT
    from tools.mockrun import load_program

    load_program(CHECKOUT)


def _plan_working_tree(stack: str, stack_file: Path | None = None,
                       base: list[Planned] | None = None) -> list[Planned]:
    from components.model import ConfigError
    from tools.mockrun import run_program
    from tools.stackfile import load_stack_config, offline_secrets

    try:
        config = load_stack_config(stack, stack_file)
        deployed = {r.urn: {"type": r.type, "outputs": r.outputs} for r in base or []}
        return snapshot(run_program(config, stack=stack, secrets=offline_secrets(config), deployed=deployed))
    except ConfigError as err:
        raise BadInput(str(err)) from None
    except Exception as err:
        if type(err).__name__ == "RunError":
            raise BadInput(str(err)) from None
        raise


class _Background:
    """Runs a function on a thread (the base plan is a subprocess: it overlaps with this process's imports)."""

    def __init__(self, fn: Callable[[], Any]):
        import threading

        self.fn = fn
        self.value: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.value = self.fn()
        except BaseException as err:  # noqa: BLE001 - re-raised in result()
            self.error = err

    def __enter__(self) -> _Background:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.thread.join()

    def result(self) -> Any:
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.value


if __name__ == "__main__":
    sys.exit(main())
