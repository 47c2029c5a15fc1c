"""`make diff STACK=lab [BASE=<git ref>] [FAIL_ON=<effects>]`: what the engine would do to a lab built
from BASE if the working tree were deployed, offline like `make plan`.

Both programs run under the same mocks (the base commit's program and stack file from a temporary
git worktree, in a subprocess that puts that tree first on sys.path and loads this checkout's
harness), and the two recordings are compared with the rules the engine and the providers apply,
each cited where it is encoded (tools/diff/rules.py, tools/diff/engine.py):

- the engine: URNs and aliases, ignore_changes, replace_on_changes, protect, retain_on_delete,
  deleted_with, explicit providers (`pulumi/pulumi` pkg/resource/deploy/step_generator.go);
- pulumi-command 1.2.1: `triggers` replaces, any other change is an update that runs `update`,
  else `create`, else nothing;
- pulumi-vsphere 4.17 (terraform-provider-vsphere v2.16.1): ForceNew inputs and the VM reboot list;
- pulumi-kubernetes: the fields that replace an object, the Helm Release's, the provider's DiffConfig;
- our dynamic providers (components/dynamic/): their own `diff`, loaded and called.

A value that a replaced (or, for a Command, re-run) resource only knows after the update is unknown
in a real preview: it is unknown here too, in every input that depends on it
(`propertyDependencies`), and the dependent's own rules then decide.

Writes build/<stack>/diff.json: {"base", "stack", "changes": [{"type", "name", "op", "keys",
"effects"}], "moved", "refused", "baseMissing"}. Secrets are compared by a hash and never shown:
`keys` names inputs only. `effects` (paths.EFFECTS): rerun, reboot, migrate (a vMotion), network
(traffic moves), replace, delete, refused (the engine refuses the step: protect). Exit 1 when an
effect listed in FAIL_ON occurs or a step is refused (the real preview fails then too), 2 on bad
input (an invalid stack, an unknown BASE or FAIL_ON word, an edit the identity guard refuses), else 0.

The package: `recording` (a registration in comparable form), `paths` (URNs, property paths, the
engine's ignore_changes reset), `rules` (the providers' rules), `engine` (step generation), `cli`
(the command line, `python -m tools.diff`).

The names below are loaded on first use: tools/plan_tree.py imports `tools.diff.recording` into a
process whose `components` package is the base commit's, where the rules' provider facts
(components/vsphere/provider_facts.py) may not exist yet.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "cli": ("BadInput", "base_snapshot", "main", "parse_fail_on", "resolve_base", "table"),
    "engine": ("Engine", "Step", "alias_urns", "changes", "document", "refusals", "steps_between"),
    "paths": ("DYNAMIC_TYPE", "EFFECTS", "OPS", "SECRET", "UNKNOWN", "Path_", "changed_paths", "contains",
              "create_urn", "format_path", "parse_path", "reset"),
    "recording": ("Planned", "_active_cluster", "comparable", "digest", "planned", "snapshot"),
    "rules": ("RULES", "ForceNewRule", "ProviderDiff", "Rule", "explicit_rule", "rule_for", "vm_reboot_reasons"),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}
__all__ = [
    "BadInput", "DYNAMIC_TYPE", "EFFECTS", "Engine", "ForceNewRule", "OPS", "Path_", "Planned", "ProviderDiff",
    "RULES", "Rule", "SECRET", "Step", "UNKNOWN", "_active_cluster", "alias_urns", "base_snapshot", "changed_paths",
    "changes", "comparable", "contains", "create_urn", "digest", "document", "explicit_rule", "format_path", "main",
    "parse_fail_on", "parse_path", "planned", "refusals", "reset", "resolve_base", "rule_for", "snapshot",
    "steps_between", "table", "vm_reboot_reasons",
]

if TYPE_CHECKING:
    from tools.diff.cli import BadInput, base_snapshot, main, parse_fail_on, resolve_base, table
    from tools.diff.engine import Engine, Step, alias_urns, changes, document, refusals, steps_between
    from tools.diff.paths import (
        DYNAMIC_TYPE,
        EFFECTS,
        OPS,
        SECRET,
        UNKNOWN,
        Path_,
        changed_paths,
        contains,
        create_urn,
        format_path,
        parse_path,
        reset,
    )
    from tools.diff.recording import Planned, _active_cluster, comparable, digest, planned, snapshot
    from tools.diff.rules import RULES, ForceNewRule, ProviderDiff, Rule, explicit_rule, rule_for, vm_reboot_reasons


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'tools.diff' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tools.diff.{module}"), name)
    globals()[name] = value
    return value
