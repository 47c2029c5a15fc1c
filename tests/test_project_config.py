"""Pulumi.yaml's `config:` block and the program's loader, held to each other.

The keys of the `gpu-lab:` namespace the program reads come from the code, never from a list
here: the sections of LabConfig (components/config.py, SECTIONS) and the secrets of SECRET_KEYS
(components/secrets.py). A key Pulumi.yaml declares must be one of them, with the type of its
model (a pydantic model or a mapping is `object`, a list `array` with `items`, a bool `boolean`),
a one-line description, `secret: true` for a secret, and a scalar default only where the model
has that same default.

Every one of these keys is optional to the program (no section is required on its own, a secret
only by the sections that use it), and the Pulumi CLI treats a key of the project's namespace
declared without `default` or `value` as required: `pulumi preview`, `up`, `destroy`, `refresh`,
`import` and `watch` refuse a stack that leaves it unset ("Stack '<stack>' is missing
configuration values ..."; mergeConfig in github.com/pulumi/pulumi/pkg/v3@v3.259.0,
workspace/config.go). A default is no way out: the engine hands it to the program as if the stack
had set it (a section the stack left out would then be built from it, a secret would arrive in
plain text), and a declaration with `secret: true` refuses its own plain default. So such a key
may only be declared with the default the program already has, which no gpu-lab key has today:
Pulumi.yaml declares none, and test_pulumi_yaml_declares_the_keys_as_the_program_reads_them keeps
it so.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from components.config import NAMESPACE, SECTIONS, LabConfig, gpu_lab_sections
from components.secrets import SECRET_KEYS, LabSecrets

REPO = Path(__file__).resolve().parent.parent
PROGRAM = [REPO / "__main__.py", *sorted((REPO / "components").rglob("*.py"))]
SCALARS = (str, bool, int)


@dataclasses.dataclass(frozen=True)
class Key:
    """A key of the gpu-lab namespace as the program reads it."""

    type: dict[str, Any] | None  # {"type": ..., "items": ...} as Pulumi.yaml spells it; None: no Pulumi type fits
    optional: bool
    default: Any  # the program's value for an unset key (None when it has none)
    secret: bool


def pulumi_type(annotation: Any) -> dict[str, Any] | None:
    """The Pulumi project-config type of a model annotation (None where none fits)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return pulumi_type(args[0])
    if typing.get_origin(annotation) is typing.Annotated:
        return pulumi_type(args[0])
    origin = typing.get_origin(annotation) or annotation
    if isinstance(origin, type) and (issubclass(origin, BaseModel) or issubclass(origin, dict)):
        return {"type": "object"}
    if origin is list:
        items = pulumi_type(args[0]) if args else None
        return {"type": "array", "items": items} if items is not None else None
    for python, name in ((bool, "boolean"), (int, "integer"), (str, "string")):  # bool before int: bool is an int
        if origin is python:
            return {"type": name}
    return None


def loader_keys() -> dict[str, Key]:
    """Every gpu-lab key the program reads: LabConfig's sections and the gpu-lab secrets."""
    keys: dict[str, Key] = {}
    for section in SECTIONS:
        field = LabConfig.model_fields[section]
        keys[section] = Key(pulumi_type(field.annotation), not field.is_required(),
                            field.get_default(call_default_factory=True), secret=False)
    secret_defaults = {f.name: f.default for f in dataclasses.fields(LabSecrets)}
    for attribute, namespace, key, is_object in SECRET_KEYS:
        if namespace == NAMESPACE:
            keys[key] = Key({"type": "object" if is_object else "string"},
                            optional=secret_defaults[attribute] is None, default=None, secret=True)
    return keys


def declaration_problems(project: dict[str, Any]) -> list[str]:
    """What is wrong with a project file's declarations of the program's keys (empty: nothing)."""
    keys = loader_keys()
    problems = []
    for full_key, declared in (project.get("config") or {}).items():
        namespace, colon, key = str(full_key).partition(":")
        if not colon:
            namespace, key = project["name"], namespace  # a bare key is the project's own
        if namespace != project["name"]:
            continue  # another namespace's value (pulumi:tags, a provider's setting): the CLI's rules, not ours
        where = f"{project['name']}:{key}"
        if key not in keys:
            problems.append(f"{where} is declared but the program never reads it")
            continue
        read = keys[key]
        if not isinstance(declared, dict):
            problems.append(f"{where}: declare it with type and description, not a bare value")
            continue
        wanted = read.type
        if wanted is not None:
            given = {k: declared[k] for k in ("type", "items") if k in declared}
            if given != wanted:
                problems.append(f"{where}: declared {given}, the program reads {wanted}")
        description = declared.get("description")
        if not isinstance(description, str) or not description.strip() or "\n" in description.strip():
            problems.append(f"{where}: needs a one-line description")
        if "value" in declared:
            problems.append(f"{where}: a `value` would set the key on every stack; the program's keys are the stacks' own")
        if read.secret and declared.get("secret") is not True:
            problems.append(f"{where}: is a secret, declare it with secret: true")
        if "default" in declared:
            default = declared["default"]
            if read.secret:
                problems.append(f"{where}: a secret has no default")
            elif not isinstance(default, SCALARS) or default != read.default:
                problems.append(f"{where}: default {default!r}, but the program's default is {read.default!r} "
                                "(only a scalar default the program has may be declared)")
        elif read.optional:
            problems.append(f"{where}: the program does without it, but the CLI requires every declared key of the "
                            "project without a default, so preview and up would refuse a stack that leaves it unset")
    return problems


def project_file() -> dict[str, Any]:
    return yaml.safe_load((REPO / "Pulumi.yaml").read_text())


def test_the_key_list_is_what_the_loader_and_the_secrets_read():
    keys = loader_keys()
    # gpu_lab_sections hands load_lab every key but the secrets, which load_secrets reads
    every = {f"{NAMESPACE}:{key}": "{}" for key in keys}
    assert set(gpu_lab_sections(every)) == set(SECTIONS)
    assert {k for k, v in keys.items() if v.secret} == {k for _, n, k, _ in SECRET_KEYS if n == NAMESPACE}
    assert set(SECTIONS) <= set(keys) and len(keys) > len(SECTIONS)


def test_every_gpu_lab_key_the_program_names_is_a_loader_key():
    named = set()
    for path in PROGRAM:
        named |= set(re.findall(rf"{NAMESPACE}:([A-Za-z]+)(?![A-Za-z:])", path.read_text()))
    assert named, "the scan found no gpu-lab key at all: the pattern is broken"
    assert named - set(loader_keys()) == set(), "a gpu-lab key read outside the loader and SECRET_KEYS"


def test_every_loader_key_has_a_pulumi_type():
    assert {k: v.type for k, v in loader_keys().items() if v.type is None} == {}


def test_types_follow_the_models():
    keys = loader_keys()
    assert keys["switches"].type == {"type": "array", "items": {"type": "object"}}
    assert keys["lifecycle"].type == {"type": "object"}
    assert pulumi_type(bool) == {"type": "boolean"} and pulumi_type(int | None) == {"type": "integer"}


def test_pulumi_yaml_declares_the_keys_as_the_program_reads_them():
    assert declaration_problems(project_file()) == []


@pytest.mark.parametrize(("declared", "problem"), [
    ({"gpu-lab:vsphere": {"type": "object", "description": "the vSphere section"}},
     "the CLI requires every declared key"),
    ({"vsphere": {"type": "object", "description": "the vSphere section"}}, "the CLI requires every declared key"),
    ({"gpu-lab:lifecycle": {"type": "string", "description": "how", "default": "x"}}, "the program reads"),
    ({"gpu-lab:switches": {"type": "array", "description": "switches", "default": "[]"}}, "declared {'type': 'array'}"),
    ({"gpu-lab:pullSecret": {"type": "string", "description": "the pull secret", "default": ""}},
     "a secret has no default"),
    ({"gpu-lab:kubeconfig": {"type": "string", "description": "kubeconfig"}}, "declare it with secret: true"),
    ({"gpu-lab:vsphere": {"type": "object", "value": {}}}, "needs a one-line description"),
    ({"gpu-lab:vspere": {"type": "object", "description": "typo"}}, "the program never reads it"),
    ({"gpu-lab:mirror": "registry.example"}, "not a bare value"),
])
def test_the_check_catches(declared, problem):
    project = {"name": "gpu-lab", "config": declared}
    problems = declaration_problems(project)
    assert any(problem in p for p in problems), problems


def test_other_namespaces_are_left_to_the_cli():
    assert declaration_problems({"name": "gpu-lab", "config": {"pulumi:tags": {"value": {"a": "b"}},
                                                               "vsphere:user": "someone"}}) == []
