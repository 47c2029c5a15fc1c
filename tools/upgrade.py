"""The upgrade gate: a shipped stack's plan against the baseline recorded at the previous release.

    python -m tools.upgrade record [STACK ...]   re-record release/baselines/<stack>.json (`make baseline`)
        [--at REF]                               from the release at REF (a tag), not the working tree
    python -m tools.upgrade check [STACK ...]    what would move, re-run, reboot, be replaced or deleted,
                                                 and whether CHANGELOG.md declares it (exit 1 if not)

A baseline holds, per resource of the stack's offline plan (tools.mockrun, placeholder secrets):
URN, type, parent, provider, resource options, and the inputs with every string longer than 64
characters (scripts, rendered files) and every secret replaced by its SHA-256. That is enough for
tools.diff's rules: a changed Command script or trigger, a VM's clone or first-boot inputs, a
Kubernetes object's immutable fields, a dynamic resource's target all show as a change, and the
gate asks tools.diff what the engine would do with it. Undeclared findings fail the gate:
`moved` (a URN gone with the same name and type back under a new URN, no alias), `delete`,
`replace`, `rerun`, `reboot`. Declarations are rows of the "Declared changes" table in the CHANGELOG
entry of the version in pyproject.toml (CHANGELOG.md says how).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.diff import EFFECTS, SECRET, Planned, base_snapshot, resolve_base, snapshot, steps_between

REPO = Path(__file__).resolve().parent.parent
SHIPPED_STACKS = ("lab", "openshift", "sim")
BASELINES = REPO / "release" / "baselines"
CHANGELOG = REPO / "CHANGELOG.md"
KEPT_STRING_LENGTH = 64
CHANGES = ("moved", "delete", "replace", "rerun", "reboot")


def shrink(value: Any) -> Any:
    """Inputs as the baseline keeps them: long strings as "sha256:<hex>" (equality is all the rules need)."""
    if isinstance(value, str) and len(value) > KEPT_STRING_LENGTH:
        return "sha256:" + hashlib.sha256(value.encode()).hexdigest()
    if isinstance(value, dict):
        if set(value) == {SECRET}:
            return value
        return {k: shrink(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shrink(v) for v in value]
    return value


def shrunk(resources: list[Planned]) -> list[Planned]:
    out = []
    for r in resources:
        inputs = shrink(r.inputs)
        outputs = shrink(r.outputs)
        copy = Planned.from_document({**r.document(), "inputs": inputs, "outputs": outputs})
        copy.provider_pickle = r.provider_pickle
        out.append(copy)
    return out


def version() -> str:
    return str(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"])


def _version_at(ref: str) -> str:
    text = subprocess.run(["git", "-C", str(REPO), "show", f"{ref}:pyproject.toml"], check=True,
                          capture_output=True, text=True).stdout
    return str(tomllib.loads(text)["project"].get("version", ref))


def plan(stack: str) -> list[Planned]:
    from tools.mockrun import run_program
    from tools.stackfile import load_stack_config, offline_secrets

    config = load_stack_config(stack)
    return shrunk(snapshot(run_program(config, stack=stack, secrets=offline_secrets(config))))


def baseline_document(stack: str, resources: list[Planned], at_version: str) -> dict[str, Any]:
    entries = []
    for r in sorted(resources, key=lambda r: r.urn):
        doc = r.document()
        # only the outputs a preview would not know (not the mirrored inputs): the rest is the inputs
        doc["outputs"] = {k: v for k, v in sorted(r.outputs.items()) if r.inputs.get(k) != v}
        entries.append(doc)
    return {"stack": stack, "version": at_version, "resources": entries}


def write_baseline(stack: str, resources: list[Planned], at_version: str, directory: Path = BASELINES) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stack}.json"
    path.write_text(json.dumps(baseline_document(stack, resources, at_version), indent=1, sort_keys=True) + "\n")
    return path


def read_baseline(stack: str, directory: Path = BASELINES) -> list[Planned]:
    path = directory / f"{stack}.json"
    if not path.exists():
        raise FileNotFoundError(f"no upgrade baseline {path.relative_to(REPO) if path.is_relative_to(REPO) else path}:"
                                " record it with `make baseline`")
    resources = []
    for doc in json.loads(path.read_text())["resources"]:
        resources.append(Planned.from_document({**doc, "outputs": {**doc["inputs"], **doc["outputs"]}}))
    return resources


@dataclass(frozen=True)
class Finding:
    stack: str
    name: str
    urn: str
    change: str
    detail: str

    def line(self) -> str:
        return f"{self.stack}: {self.name} {self.change} ({self.detail})"


def findings(stack: str, baseline: list[Planned], current: list[Planned]) -> list[Finding]:
    """What a lab built at the baseline would see: moves without an alias, deletes, replacements,
    re-runs and reboots (tools.diff's rules), one finding per resource and kind."""
    steps = steps_between(baseline, current)
    created = {(s.type, s.name) for s in steps if s.op == "create"}
    out: list[Finding] = []
    for s in steps:
        if s.op == "delete" and (s.type, s.name) in created:
            out.append(Finding(stack, s.name, s.urn, "moved", "new URN without an alias: deleted and created again"))
            continue
        if s.op == "create":
            continue
        kinds = {"delete": ["delete"], "replace": ["replace"]}.get(s.op, [])
        kinds += [e for e in s.effects if e in ("rerun", "reboot")]
        for kind in kinds:
            detail = f"{s.op}" + (f" of {', '.join(s.keys)}" if s.keys else "") + (
                f", effects {', '.join(s.effects)}" if s.effects else "")
            out.append(Finding(stack, s.name, s.urn, kind, detail))
    return sorted(set(out), key=lambda f: (f.stack, f.urn, f.change))


@dataclass(frozen=True)
class Declaration:
    stack: str
    resource: str
    change: str
    why: str

    def covers(self, f: Finding) -> bool:
        return (self.stack in ("*", f.stack) and self.change == f.change
                and (fnmatch.fnmatchcase(f.name, self.resource) or self.resource == f.urn))


class ChangelogError(ValueError):
    pass


def declarations(text: str, at_version: str, stacks: tuple[str, ...] = SHIPPED_STACKS) -> list[Declaration]:
    """The rows of the "Declared changes" table in the entry `## <at_version> ...`."""
    entry = re.search(rf"^## {re.escape(at_version)}\b.*?(?=^## |\Z)", text, re.M | re.S)
    if entry is None:
        raise ChangelogError(f"CHANGELOG.md has no entry `## {at_version} ...` (the version in pyproject.toml)")
    section = re.search(r"^### Declared changes\s*$(.*?)(?=^### |\Z)", entry.group(0), re.M | re.S)
    if section is None:
        raise ChangelogError(f"CHANGELOG.md entry {at_version} has no `### Declared changes` table")
    rows = [line for line in section.group(1).splitlines() if line.startswith("|")]
    out: list[Declaration] = []
    for line in rows[2:]:  # the header and its rule
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) != 4:
            raise ChangelogError(f"CHANGELOG.md {at_version}: {line!r}: a row is | stack | resource | change | why |")
        stack, resource, change, why = cells
        if stack != "*" and stack not in stacks:
            raise ChangelogError(f"CHANGELOG.md {at_version}: stack {stack!r}: one of {', '.join(stacks)} or *")
        if change not in CHANGES:
            raise ChangelogError(f"CHANGELOG.md {at_version}: change {change!r}: one of {', '.join(CHANGES)}")
        if not resource or not why:
            raise ChangelogError(f"CHANGELOG.md {at_version}: {line!r}: resource and why must not be empty")
        out.append(Declaration(stack, resource, change, why))
    return out


def undeclared(found: list[Finding], declared: list[Declaration]) -> list[Finding]:
    return [f for f in found if not any(d.covers(f) for d in declared)]


def state_only(baseline: list[Planned], current: list[Planned]) -> list[str]:
    """Resources whose recorded dependencies alone change: the engine rewrites them in the state and
    runs nothing (a baseline recorded before dependencies were kept shows none)."""
    return [s.name for s in steps_between(baseline, current) if s.state_only]


def check(stacks: tuple[str, ...] = SHIPPED_STACKS,
          directory: Path = BASELINES) -> tuple[list[Finding], dict[str, int]]:
    """The undeclared findings, and per stack how many resources change in the state only."""
    declared = declarations(CHANGELOG.read_text(), version())
    missing: list[Finding] = []
    quiet: dict[str, int] = {}
    for stack in stacks:
        baseline, current = read_baseline(stack, directory), plan(stack)
        missing += undeclared(findings(stack, baseline, current), declared)
        quiet[stack] = len(state_only(baseline, current))
    return missing, quiet


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("record", "check"))
    parser.add_argument("stacks", nargs="*", default=list(SHIPPED_STACKS))
    parser.add_argument("--at", metavar="REF", help="record from this release (tag or commit), planned by this "
                                                    "checkout's harness; default: the working tree")
    args = parser.parse_args(argv)
    if args.action == "record":
        for stack in args.stacks:
            if args.at:
                resources = base_snapshot(resolve_base(args.at), stack)
                if resources is None:
                    print(f"no stack file Pulumi.{stack}.yaml at {args.at}", file=sys.stderr)
                    return 2
                resources, at_version = shrunk(resources), _version_at(resolve_base(args.at))
            else:
                resources, at_version = plan(stack), version()
            print(write_baseline(stack, resources, at_version).relative_to(REPO))
        return 0
    missing, quiet = check(tuple(args.stacks))
    for stack, count in quiet.items():
        if count:
            print(f"state only: {stack}: the dependencies of {count} resource(s) change; no step runs for them")
    for f in missing:
        print(f"undeclared: {f.line()}")
    if missing:
        print(f"{len(missing)} change(s) a live lab would see are not declared in CHANGELOG.md {version()} "
              f"({', '.join(EFFECTS)}; see its header)", file=sys.stderr)
        return 1
    print(f"upgrade gate: {', '.join(args.stacks)} hold no undeclared change against the baselines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
