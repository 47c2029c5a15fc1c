"""The up workflow's gate: stop before `pulumi up` when the lab would feel something disruptive.

    python -m tools.up_gate diff build/up/diff.json [--allow reboot,replace:addons-job-*]    make diff's verdict
    python -m tools.up_gate preview preview.json [--allow reboot,migrate]       `pulumi preview --json`'s steps

Gated effects (GATED): replace, delete, reboot (a VM power-cycled), migrate (a vMotion), network (a
VM's or host's traffic moves), undrained (GPU_LAB_CLUSTER_GONE=1: a node changed or removed without asking
its cluster), restart (an add-on's pods restarted on the nodes it runs on). Exit 1 when any occurs that
--allow does not let through, listing every resource with its effects; the workflow's dispatch input
`allow_effects` is passed as --allow. Each item of --allow is an effect (allowed on every resource) or
effect:glob (allowed only on the resources whose logical name matches the glob, fnmatch, e.g.
replace:addons-job-*). An acceptance benchmark replaced only because the set of workers changed
(rerun-acceptance) is not gated: it runs again, nothing of the lab is lost. A step the engine refuses
(protect) stops the run whatever is allowed: the real `up` would fail on it. Exit 2 on bad input (an
unreadable file, an item that is not a gated effect or effect:glob).

make diff's diff.json names the effects itself. The real preview's JSON (pulumi/pulumi
pkg/display/json.go, PreviewDigest: steps with op, urn, oldState and newState with their inputs,
detailedDiff keyed by property path, diffReasons) is judged with make diff's own rules (tools/diff/
rules.py): its ops (sdk/go/common/display: OpReplace, OpCreateReplacement, OpDeleteReplaced,
OpDelete, OpDiscardReplaced, OpImportReplacement, OpRemovePendingReplace) say replace and delete;
an update's changed paths and the old and new inputs say reboot (the VM reboot list, a vGPU
profile), migrate and network (components/vsphere/provider_facts.py).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path
from typing import Any

from tools.diff.paths import EFFECTS, UNKNOWN, Path_, changed_paths, parse_path
from tools.diff.recording import Planned
from tools.diff.rules import acceptance_rerun, kubernetes_gvk, lab_effects, rule_for

GATED = ("replace", "delete", "reboot", "migrate", "network", "undrained", "restart")
REPLACE_OPS = ("replace", "create-replacement", "delete-replaced", "discard-replaced", "import-replacement",
               "remove-pending-replace")
DELETE_OPS = ("delete",)
PREVIEW_OPS = (*REPLACE_OPS, "delete")
"""The preview ops that replace or delete (kept for callers of the former gate)."""


class BadInput(Exception):
    pass


Allowance = list[tuple[str, str | None]]
"""(effect, glob over the logical name, or None for every resource)."""


def parse_scoped(text: str, effects: tuple[str, ...], what: str) -> Allowance:
    """`effect` or `effect:glob` items, comma-separated; BadInput naming the form on anything else."""
    items: Allowance = []
    bad = []
    for item in (w.strip() for w in text.split(",")):
        if not item:
            continue
        effect, colon, glob = (x.strip() for x in item.partition(":"))
        if effect not in effects or (colon and not glob):
            bad.append(item)
        else:
            items.append((effect, glob if colon else None))
    if bad:
        raise BadInput(f"{what}: unknown effect {', '.join(repr(b) for b in bad)}; each item is EFFECT or EFFECT:GLOB "
                       f"(the effect on resources whose logical name matches the glob, e.g. replace:addons-job-*), "
                       f"EFFECT one of {', '.join(effects)} (comma-separated, any subset)")
    return items


def covers(allowance: Allowance, effect: str, name: str) -> bool:
    return any(e == effect and (glob is None or fnmatch.fnmatchcase(name, glob)) for e, glob in allowance)


def parse_allow(text: str) -> set[str]:
    """The effects --allow names (every resource or some); BadInput on a bad item."""
    return {effect for effect, _ in parse_scoped(text, GATED, "--allow")}


def _ordered(effects: set[str]) -> list[str]:
    return sorted(effects, key=EFFECTS.index)


def from_diff(document: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(resource, gated effects) per change of diff.json, and the refused steps with effect `refused`."""
    return [(label, effects) for label, effects, _ in named_from_diff(document)]


def named_from_diff(document: dict[str, Any]) -> list[tuple[str, list[str], str]]:
    """from_diff with each resource's logical name, which an effect:glob allowance matches."""
    found = []
    for c in document.get("changes", []):
        effects = set(c.get("effects", [])) & {*GATED, "refused"}
        # an acceptance benchmark's re-run is the whole of its replacement (make diff says so)
        if c["op"] in ("replace", "delete") and "rerun-acceptance" not in c.get("effects", []):
            effects.add(c["op"])
        if effects:
            keys = f" ({c['op']} of {', '.join(c['keys'])})" if c.get("keys") else f" ({c['op']})"
            found.append((f"{c['type']} {c['name']}{keys}", _ordered(effects), c["name"]))
    for r in document.get("refused", []):
        entry = (f"{r['type']} {r['name']} ({r['op']}: {r['reason']})", ["refused"], r["name"])
        if not any(name.startswith(f"{r['type']} {r['name']} ") and "refused" in e for name, e, _ in found):
            found.append(entry)
    return found


def _planned(urn: str, type_: str, state: dict[str, Any] | None) -> Planned:
    state = state or {}
    return Planned(urn=urn, type=type_, name=urn.rsplit("::", 1)[-1], parent="", custom=True, provider="",
                   id=str(state.get("id") or ""), inputs=dict(state.get("inputs") or {}),
                   outputs=dict(state.get("outputs") or {}))


def _unknowns(value: Any) -> Any:
    """The preview JSON writes a value not known yet as the engine's unknown sentinel already; a
    computed output placeholder from older CLIs is mapped to it too."""
    if isinstance(value, dict):
        return {k: _unknowns(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unknowns(v) for v in value]
    return UNKNOWN if value == "[unknown]" else value


def preview_step_effects(step: dict[str, Any]) -> list[str]:
    """The gated effects of one step of `pulumi preview --json`."""
    op = step.get("op", "")
    urn = step.get("urn", "")
    old_state, new_state = step.get("oldState") or {}, step.get("newState") or {}
    type_ = new_state.get("type") or old_state.get("type") or urn.split("::")[2].rsplit("$", 1)[-1]
    if op in REPLACE_OPS:
        old_in, new_in = dict(old_state.get("inputs") or {}), _unknowns(dict(new_state.get("inputs") or {}))
        if type_.startswith("kubernetes:") and kubernetes_gvk(type_)[2] in ("Job", "MPIJob") and old_in and new_in \
                and acceptance_rerun(type_, old_in, new_in, changed_paths(old_in, new_in)):
            return []
        return ["replace"]
    if op in DELETE_OPS:
        return ["delete"]
    if op != "update":
        return []
    old = _planned(urn, type_, old_state)
    new = _planned(urn, type_, new_state)
    new.inputs = _unknowns(new.inputs)
    paths: list[Path_] = [parse_path(k) for k in step.get("detailedDiff") or {}]
    if not paths:
        paths = [parse_path(str(k)) for k in step.get("diffReasons") or []]
    if not paths:
        paths = [p for p in changed_paths(old.inputs, new.inputs) if not str(p[0]).startswith("__")]
    effects = set(rule_for(type_).effects("update", old, new, new.inputs, paths)) | set(lab_effects(type_, paths))
    return _ordered(effects & set(GATED))


def from_preview(document: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(label, effects) for label, effects, _ in named_from_preview(document)]


def named_from_preview(document: dict[str, Any]) -> list[tuple[str, list[str], str]]:
    found = []
    for step in document.get("steps", []):
        effects = preview_step_effects(step)
        if effects:
            reasons = step.get("replaceReasons") or (step.get("detailedDiff") or {}).keys() or \
                step.get("diffReasons") or []
            what = f" ({step.get('op')} of {', '.join(sorted(reasons))})" if reasons else f" ({step.get('op')})"
            urn = step.get("urn", "")
            found.append((f"{urn}{what}", effects, urn.rsplit("::", 1)[-1]))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.up_gate", description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("diff", "preview"))
    parser.add_argument("file", type=Path)
    parser.add_argument("--allow", default="", help=f"comma-separated effects to let through: {', '.join(GATED)}, "
                        "each alone (every resource) or as effect:glob (resources whose logical name matches)")
    args = parser.parse_args(argv)
    try:
        allowance = parse_scoped(args.allow, GATED, "--allow")
        document = json.loads(args.file.read_text())
    except BadInput as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as err:
        print(f"error: {args.file}: {err}", file=sys.stderr)
        return 2
    found = named_from_diff(document) if args.kind == "diff" else named_from_preview(document)
    for label, effects, _ in found:
        print(f"{', '.join(effects)}: {label}")
    if not found:
        print(f"{args.kind}: nothing would be replaced, deleted, rebooted, migrated, restarted or moved on the network")
        return 0
    refused = [label for label, effects, _ in found if "refused" in effects]
    held = [(label, [e for e in effects if e != "refused" and not covers(allowance, e, name)])
            for label, effects, name in found]
    stopping = sorted({e for _, effects in held for e in effects}, key=EFFECTS.index)
    if refused:
        print(f"{args.kind}: {len(refused)} step(s) the engine refuses (protect): `pulumi up` would fail on them; "
              "no dispatch input lets them through", file=sys.stderr)
    if stopping:
        print(f"{args.kind}: stopped on {', '.join(stopping)} ({sum(1 for _, e in held if e)} resource(s) not "
              f"allowed); re-run the workflow by hand with allow_effects naming them (e.g. {','.join(stopping)}, or "
              f"effect:glob for some resources only, e.g. {stopping[0]}:<name>*) to go ahead", file=sys.stderr)
    if refused or stopping:
        return 1
    allowed = sorted({e for e, _ in allowance}, key=EFFECTS.index)
    print(f"{args.kind}: {len(found)} resource(s) with {', '.join(allowed)}, allowed by the dispatch input")
    return 0


if __name__ == "__main__":
    sys.exit(main())
