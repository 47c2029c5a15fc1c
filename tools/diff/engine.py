"""The engine's step generation for a preview of the new program on a lab built from the base:
aliases, ignore_changes, replace_on_changes, protect, retain_on_delete, deleted_with, explicit
providers (`pulumi/pulumi` pkg/resource/deploy/step_generator.go), with the provider rules deciding
each resource's diff and effects."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from components.vsphere.provider_facts import VIRTUAL_MACHINE
from tools.diff.paths import (
    _MISSING,
    EFFECTS,
    OPS,
    UNKNOWN,
    Path_,
    _is_leaf,
    _urn_name,
    _urn_parts,
    _urn_type,
    changed_paths,
    contains,
    create_urn,
    parse_path,
    reset,
)
from tools.diff.recording import Planned, snapshot
from tools.diff.rules import (
    DYNAMIC_TYPE,
    RETIRED_KINDS,
    ROLL_KIND,
    Context,
    DynamicRule,
    ProviderDiff,
    acceptance_rerun,
    lab_effect_keys,
    lab_effects,
    restart_nodes,
    roll_converges,
    rule_for,
    vm_reboot_reasons,
)
from tools.mockrun import Run


def alias_urns(r: Planned, parent_alias: str | None) -> list[str]:
    """The URNs the engine looks the resource up by after its own (`generateAliases` and
    `collapseAliasToUrn`, pkg/resource/deploy/step_generator.go): each alias spec with the resource's
    own name, type, parent, project and stack where the spec leaves them out; and, when the parent
    itself was found by an alias, the child under that alias, with the parent's name prefix of the
    child's name renamed too (`inheritedChildAlias`)."""
    stack_part, project, _, _ = _urn_parts(r.urn)
    stack = stack_part[len("urn:pulumi:"):]
    result: list[str] = []

    def add(urn: str) -> None:
        if urn not in result:
            result.append(urn)

    def collapse(spec: Mapping[str, Any]) -> str:
        if spec.get("urn"):
            return str(spec["urn"])
        parent = spec.get("parentUrn") or r.parent
        if spec.get("parentUrn") and parent == r.parent and parent_alias:
            parent = parent_alias
        if spec.get("noParent"):
            parent = ""
        return create_urn(spec.get("name") or r.name, spec.get("type") or r.type, parent,
                          spec.get("project") or project, spec.get("stack") or stack)

    def inherited(child_type: str, child_name: str, alias: str) -> str:
        parent_name = _urn_name(r.parent)
        name = _urn_name(alias) + child_name[len(parent_name):] if child_name.startswith(parent_name) else child_name
        return f"urn:pulumi:{stack}::{project}::{_urn_parts(alias)[2]}${child_type}::{name}"

    for spec in r.aliases:
        add(collapse(spec))
    if r.parent and parent_alias:
        add(inherited(r.type, r.name, parent_alias))
        for spec in r.aliases:
            child = collapse(spec)
            add(inherited(_urn_type(child), _urn_name(child), parent_alias))
    return result


# ---------------------------------------------------------------- the engine's step generation


@dataclass
class Step:
    urn: str
    type: str
    name: str
    op: str
    keys: list[str]
    effects: list[str]
    group: str
    notes: list[str] = field(default_factory=list)
    refused: str = ""
    moved_from: str = ""
    state_only: bool = False
    """No step runs, but the dependencies the state records for it change (the engine rewrites them)."""

    def add_effect(self, effect: str) -> None:
        self.effects = sorted({*self.effects, effect}, key=EFFECTS.index)

    def entry(self) -> dict[str, Any]:
        return {"type": self.type, "name": self.name, "op": self.op, "keys": self.keys, "effects": self.effects}


@dataclass
class _Seen:
    step: Step | None
    old: Planned | None
    inputs: dict[str, Any]
    volatile: list[Any]
    """Output values a real preview would not know yet (the id, outputs that do not mirror an input)."""


def _volatile(r: Planned, with_id: bool) -> list[Any]:
    values: list[Any] = [r.id] if with_id and r.id else []
    values += [v for k, v in sorted(r.outputs.items())
               if r.inputs.get(k, _MISSING) != v and v not in (None, "", [], {})]
    return values


def _unknown_where(value: Any, volatile: list[Any]) -> tuple[Any, bool]:
    """value with each leaf that is (or contains) a volatile value made unknown; False when none was."""
    if any(value == v for v in volatile):
        return UNKNOWN, True
    if isinstance(value, str):
        hit = any(isinstance(v, str) and len(v) >= 6 and v in value for v in volatile)
        return (UNKNOWN, True) if hit else (value, False)
    if isinstance(value, dict) and not _is_leaf(value):
        out, hit = {}, False
        for k, v in value.items():
            out[k], h = _unknown_where(v, volatile)
            hit = hit or h
        return out, hit
    if isinstance(value, list):
        items = [_unknown_where(v, volatile) for v in value]
        return [v for v, _ in items], any(h for _, h in items)
    return value, False


class Engine:
    """Step generation of `pulumi preview` for a lab built from `base`, given the program's new registrations."""

    def __init__(self, base: list[Planned], new: list[Planned]):
        self.base = {r.urn: r for r in base}
        self.new = {r.urn: r for r in new}
        self.order = [r.urn for r in new]
        self.seen: dict[str, _Seen] = {}
        self.claimed: dict[str, str] = {}  # base URN -> new URN
        self.refusals: list[str] = []
        """What the providers' check refuses (a preview fails with it, before any step runs)."""
        self.warnings: list[str] = []
        """What a provider's check could not judge (the identity guard reading an older section)."""
        self.ctx = Context(self.new, lambda r: self.visit(r.urn).inputs)

    def group(self, urn: str, table: Mapping[str, Planned]) -> str:
        r = table[urn]
        while r.parent and r.parent in table:
            r = table[r.parent]
        return r.name

    def visit(self, urn: str) -> _Seen:
        if urn in self.seen:
            return self.seen[urn]
        r = self.new[urn]
        parent = self.visit(r.parent) if r.parent in self.new else None
        parent_alias = parent.old.urn if parent and parent.old and parent.old.urn != r.parent else None
        old = self.base.get(urn)
        if old is None:
            old = next((self.base[a] for a in alias_urns(r, parent_alias) if a in self.base), None)
        if old is not None:
            self.claimed[old.urn] = urn
        self.seen[urn] = seen = _Seen(None, old, dict(r.inputs), [])  # a cycle cannot happen; this guards it
        seen.inputs = inputs = self.preview_inputs(r, old)
        rule = rule_for(r.type)
        group = self.group(urn, self.new)
        if old is not None and isinstance(rule, DynamicRule):
            self.refusals += [f"{r.name}: {reason}" for reason in rule.check(old, r, inputs)]
            self.warnings += [f"{r.name}: {warning}" for warning in rule.warnings(old, r, inputs)]
        if old is None:
            effects = (rule.effects("create", None, r, inputs, [], base=self.base) if isinstance(rule, DynamicRule)
                       else rule.effects("create", None, r, inputs, []))
            seen.step = Step(urn, r.type, r.name, "create", [], effects, group)
            if "reboot" in effects and r.inputs.get("kind") == ROLL_KIND:
                seen.step.notes.append("its VM runs already: the roll power-cycles it for "
                                       + ", ".join(roll_converges(inputs, self.base)))
            seen.volatile = _volatile(r, with_id=True)
            return seen
        paths = [p for p in changed_paths(old.inputs, inputs) if not str(p[0]).startswith("__")]
        provider_replaced = r.custom and self.provider_replaces(old, r)
        moved = old.urn if old.urn != urn else ""
        state_only = dependencies_changed(old, r)
        if not r.custom:  # a component: `diff` in step_generator.go compares the inputs, nothing else
            if paths:
                seen.step = Step(urn, r.type, r.name, "update", _keys(paths), [], group, moved_from=moved)
            elif moved or state_only:
                seen.step = Step(urn, r.type, r.name, "same", [], [], group, moved_from=moved, state_only=state_only)
            return seen
        result = rule.diff(old, r, inputs, paths, self.ctx) if paths else ProviderDiff(False, [])
        replace_on_changes = [parse_path(p) for p in r.replace_on_changes]
        forced = [p for p in paths for pattern in replace_on_changes if contains(pattern, p)]
        replaced = provider_replaced or bool(result.replaces) or bool(forced)
        if not (result.changes or replaced):
            if moved or state_only:
                seen.step = Step(urn, r.type, r.name, "same", [], [], group, moved_from=moved, state_only=state_only)
            return seen
        op = "replace" if replaced else "update"
        step = Step(urn, r.type, r.name, op, _keys(paths), rule.effects(op, old, r, inputs, paths), group,
                    moved_from=moved)
        if provider_replaced:
            step.notes.append("its provider is replaced")
        if op == "replace" and not provider_replaced and acceptance_rerun(
                r.type, old.inputs, inputs, paths):
            step.effects = ["rerun-acceptance"]
            step.notes.append("the set of workers changed: the benchmark runs again on them (the previous run's "
                              "pods and logs go with the old one)")
        if "restart" in step.effects:
            what, nodes = restart_nodes(inputs, self.gpu_nodes())
            step.notes.append(f"restarts its pods on {what}: {', '.join(nodes)}" if nodes
                              else "restarts its pods on the nodes it runs on")
        if op == "replace" and r.protect and old.protect:
            step.refused = "protected: the engine refuses to replace it (unprotect it first)"
        if op == "replace" and old.retain_on_delete:
            step.notes.append("retain_on_delete: the old one is left in place")
        if op == "update" and r.type == VIRTUAL_MACHINE and "reboot" in step.effects:
            step.notes.append("power-cycled for " + ", ".join(vm_reboot_reasons(old.inputs, inputs, paths)))
        if op == "update":
            for effect in lab_effects(r.type, paths):
                step.add_effect(effect)
                what = {"migrate": "moved (vMotion) for", "network": "traffic moves for"}[effect]
                step.notes.append(f"{what} {', '.join(lab_effect_keys(r.type, effect, paths))}")
        if step.refused:
            step.add_effect("refused")
        seen.step = step
        if op == "replace":
            seen.volatile = _volatile(r, with_id=True)
        elif r.type.startswith("command:") and step.effects:
            # infer marks the outputs that do not mirror an input unknown in a preview of an update
            # (pulumi-go-provider infer/resource.go, `markComputed`): a Command's stdout and stderr
            seen.volatile = _volatile(r, with_id=False)
        return seen

    def gpu_nodes(self) -> list[str]:
        """The nodes with a GPU in the new program: the VMs with a vGPU profile in their roll."""
        return [str(r.inputs.get("vmName")) for urn in self.order
                if (r := self.new[urn]).inputs.get("kind") == ROLL_KIND and r.inputs.get("vgpuProfile")]

    def preview_inputs(self, r: Planned, old: Planned | None) -> dict[str, Any]:
        """The inputs as the engine diffs them in a preview: values from resources whose outputs are not
        known yet made unknown (propertyDependencies), then the ignore_changes paths reset to the old
        values (`processIgnoreChanges`, applied before the provider's Diff)."""
        inputs = copy.deepcopy(r.inputs)
        for key, deps in r.property_dependencies.items():
            if key not in inputs:
                continue
            volatile = [v for d in deps if d in self.new and d != r.urn for v in self.visit(d).volatile]
            if not volatile:
                continue
            value, hit = _unknown_where(inputs[key], volatile)
            inputs[key] = value if hit else UNKNOWN
        if old is not None:
            for pattern in r.ignore_changes:
                reset(parse_path(pattern), old.inputs, inputs)
        return inputs

    def provider_replaces(self, old: Planned, new: Planned) -> bool:
        """`providerChanged` (step_generator.go): a resource whose provider reference changed is replaced
        when the new provider's DiffConfig says replace. A provider replaced in this preview has an unknown
        id, so its reference changes and its DiffConfig (the reason it is replaced) replaces its resources."""
        if not new.provider:
            return False
        provider = self.visit(new.provider)
        if old.provider and provider.old is not None and provider.old.urn == old.provider:
            return provider.step is not None and provider.step.op == "replace"
        if old.provider == new.provider:
            return False
        # Another provider: pulumi-python has no DiffConfig (components/dynamic/provider.py, explicit_provider);
        # for the others, their DiffConfig on the old provider's inputs, or a replace when that was the
        # default provider (its config is the stack's, which the mocks do not record).
        if _urn_type(new.provider) == "pulumi:providers:pulumi-python":
            return False
        previous = self.base.get(old.provider)
        if previous is None or _urn_type(old.provider) != _urn_type(new.provider):
            return True
        inputs = provider.inputs
        paths = changed_paths(previous.inputs, inputs)
        return bool(rule_for(_urn_type(new.provider)).diff(previous, self.new[new.provider], inputs, paths,
                                                           self.ctx).replaces)

    def rolls(self, steps: list[Step]) -> list[dict[str, Any]]:
        """The nodes whose VM a roll powers off and on, in the order they go (components/dynamic/roll.py:
        each node's NodeRoll waits for the previous one, so they go one at a time)."""
        rebooting = {s.urn for s in steps if s.op == "update" and "reboot" in s.effects}
        undrained = {s.urn for s in steps if "undrained" in s.effects}
        nodes = [(str(r.inputs.get("vmName")), str(r.inputs.get("role")))
                 for urn in self.order if urn in rebooting and (r := self.new[urn]).inputs.get("kind") == ROLL_KIND]
        if not nodes:
            return []
        return [{"effect": "reboot", "nodes": [n for n, _ in nodes], "roles": [role for _, role in nodes],
                 "oneAtATime": True, "drained": not (rebooting & undrained)}]

    def run(self) -> list[Step]:
        steps = [s.step for urn in self.order if (s := self.visit(urn)).step is not None]
        for urn, old in self.base.items():
            if urn in self.claimed:
                continue
            step = Step(urn, old.type, old.name, "delete", [], [], self.group(urn, self.base))
            if old.retain_on_delete:
                step.notes.append("retain_on_delete: left in place, only dropped from the state")
            elif old.deleted_with and old.deleted_with in self.base and old.deleted_with not in self.claimed:
                step.notes.append(f"deleted with {_urn_name(old.deleted_with)}: no delete of its own")
            elif old.custom:
                step.effects = rule_for(old.type).effects("delete", old, None, old.inputs, [])
                if (retired := RETIRED_KINDS.get(str(old.inputs.get("kind")))) and old.type == DYNAMIC_TYPE:
                    step.notes.append(retired)
            if old.protect:
                step.refused = "protected: the engine refuses to delete it (unprotect it first)"
                step.add_effect("refused")
            steps.append(step)
        return sorted(steps, key=lambda s: (s.urn, OPS.index(s.op) if s.op in OPS else -1))


def _keys(paths: list[Path_]) -> list[str]:
    return sorted({str(p[0]) for p in paths})


def steps_between(base: list[Planned], new: list[Planned]) -> list[Step]:
    return Engine(base, new).run()


def refusals(base: Run, new: Run) -> list[str]:
    """What the preview of `new` on a lab built from `base` would refuse before any step runs (the
    providers' check: the identity guard's messages), as `make diff` prints them."""
    engine = Engine(snapshot(base), snapshot(new))
    engine.run()
    return engine.refusals


def changes(base: Run, new: Run) -> list[dict[str, Any]]:
    """diff.json's `changes` for a lab built from `base` and updated to `new` (both recorded by
    tools.mockrun.run_program): {"type", "name", "op", "keys", "effects"} per resource that is not
    unchanged, in URN order."""
    return [s.entry() for s in steps_between(snapshot(base), snapshot(new)) if s.op in OPS]


def dependencies_changed(old: Planned, new: Planned) -> bool:
    """The dependencies differ where both recordings kept them. The engine writes a resource's new
    dependencies into the state on a `same` step, and runs nothing for it (step_generator.go: a
    dependency change alone is no diff)."""
    return old.dependencies is not None and new.dependencies is not None and old.dependencies != new.dependencies


def document(steps: list[Step], base: str, stack: str, base_missing: bool = False,
             rolls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "base": base,
        "stack": stack,
        "baseMissing": base_missing,
        "changes": [s.entry() for s in steps if s.op in OPS],
        "rolls": [{k: roll[k] for k in ("effect", "nodes", "oneAtATime")} for roll in rolls or []],
        "moved": [{"from": s.moved_from, "to": s.urn} for s in steps if s.moved_from],
        "refused": [{"type": s.type, "name": s.name, "op": s.op, "reason": s.refused} for s in steps if s.refused],
        "stateOnly": [{"type": s.type, "name": s.name, "keys": ["dependencies"]} for s in steps if s.state_only],
    }
