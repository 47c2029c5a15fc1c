"""Resource addresses and property paths as the engine handles them: URNs, the property path
syntax of `ignore_changes` and `replace_on_changes`, which leaves of two input trees differ, and the
engine's reset of an ignored path. The words `make diff` speaks in (ops, effects) live here too."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

OPS = ("create", "update", "replace", "delete")
EFFECTS = ("rerun", "rerun-acceptance", "restart", "reboot", "migrate", "network", "replace", "delete", "undrained",
           "refused")
"""What a step does to a running lab: a Command's script runs (rerun), an acceptance benchmark is
replaced only because the set of workers changed and so runs again on them (rerun-acceptance), an
add-on's pods are restarted on the nodes it runs on (restart), a VM is power-cycled (reboot),
moved by a vMotion (migrate), a VM's or host's traffic moves (network: a VLAN, a NIC's network, uplinks,
a vmk), the resource is replaced or deleted, a node's VM changes or its node leaves without asking the
cluster (undrained: GPU_LAB_CLUSTER_GONE=1 in the environment, components/dynamic/roll.py), or the
engine refuses the step (protect)."""
SECRET = "[secret sha256]"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
"""A value not known before the update: the string the engine's wire format uses for it
(`pulumi.runtime.rpc.UNKNOWN`), which is what a dynamic provider's diff receives too."""
ROOT_STACK_TYPE = "pulumi:pulumi:Stack"
DYNAMIC_TYPE = "pulumi-python:dynamic:Resource"

Path_ = tuple[str | int, ...]


# ---------------------------------------------------------------- URNs and aliases


def _urn_parts(urn: str) -> list[str]:
    return urn.split("::")  # urn:pulumi:<stack>, <project>, <qualified type>, <name>


def _urn_type(urn: str) -> str:
    return _urn_parts(urn)[2].rsplit("$", 1)[-1]


def _urn_name(urn: str) -> str:
    return urn.split("::", 3)[3]


def create_urn(name: str, type_: str, parent: str, project: str, stack: str) -> str:
    """`resource.CreateURN`: the parent's qualified type prefixes the type (`pulumi/pulumi`
    sdk/go/common/resource/urn.go), except under the root Stack."""
    qualified = type_ if not parent or _urn_type(parent) == ROOT_STACK_TYPE else f"{_urn_parts(parent)[2]}${type_}"
    return f"urn:pulumi:{stack}::{project}::{qualified}::{name}"


# ---------------------------------------------------------------- property paths


def parse_path(text: str) -> Path_:
    """`resource.ParsePropertyPath`: a.b[0]["key.with.dots"], with * and [*] as wildcards."""
    out: list[str | int] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == ".":
            i += 1
        elif c == "[":
            end = text.index("]", i)
            inner = text[i + 1:end]
            if inner.startswith('"'):
                end = text.index('"]', i + 2) + 1
                out.append(text[i + 2:end - 1])
            elif inner == "*":
                out.append("*")
            else:
                out.append(int(inner))
            i = end + 1
        else:
            j = i
            while j < n and text[j] not in ".[":
                j += 1
            out.append(text[i:j])
            i = j
    return tuple(out)


def format_path(path: Path_) -> str:
    text = ""
    for seg in path:
        if isinstance(seg, int):
            text += f"[{seg}]"
        elif text and any(c in seg for c in ".[]\"*"):
            text += f'["{seg}"]'
        else:
            text += f".{seg}" if text else seg
    return text


def contains(pattern: Path_, path: Path_) -> bool:
    """`PropertyPath.Contains`: path is pattern itself or lies under it; * matches any one segment."""
    return len(pattern) <= len(path) and all(p == "*" or p == s for p, s in zip(pattern, path, strict=False))


def touches(pattern: Path_, path: Path_) -> bool:
    """path lies under pattern or contains it: the changed value holds what the pattern names (a whole
    NIC added or removed touches networkInterfaces[*].networkId); * matches any one segment."""
    return all(p == "*" or p == s for p, s in zip(pattern, path, strict=False))


def _is_leaf(value: Any) -> bool:
    return not isinstance(value, (dict, list)) or (isinstance(value, dict) and set(value) == {SECRET}) \
        or _is_asset(value)


def _is_asset(value: Any) -> bool:
    return isinstance(value, dict) and ("asset" in value or "archive" in value) and (
        "sha256" in value or "uri" in value or "path" in value or "assets" in value)


_MISSING = object()


def changed_paths(old: Any, new: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every leaf path whose value differs (an unknown new value always differs)."""
    if new == UNKNOWN or (old is _MISSING) != (new is _MISSING):
        return [prefix]
    if _is_leaf(old) or _is_leaf(new) or type(old) is not type(new):
        return [] if old == new else [prefix]
    if isinstance(old, dict):
        paths: list[Path_] = []
        for key in sorted(set(old) | set(new)):
            paths += changed_paths(old.get(key, _MISSING), new.get(key, _MISSING), (*prefix, key))
        return paths
    paths = []
    for i in range(max(len(old), len(new))):
        paths += changed_paths(old[i] if i < len(old) else _MISSING, new[i] if i < len(new) else _MISSING,
                               (*prefix, i))
    return paths


def _get(value: Any, path: Path_) -> Any:
    for seg in path:
        if isinstance(value, dict) and isinstance(seg, str) and seg in value:
            value = value[seg]
        elif isinstance(value, list) and isinstance(seg, int) and 0 <= seg < len(value):
            value = value[seg]
        else:
            return _MISSING
    return value


def _expand(pattern: Path_, value: Any, prefix: Path_ = ()) -> list[Path_]:
    """The concrete paths a pattern with wildcards names in value."""
    if not pattern:
        return [prefix]
    head, rest = pattern[0], pattern[1:]
    if head != "*":
        return _expand(rest, _get(value, (head,)), (*prefix, head))
    keys: Iterable[str | int] = value.keys() if isinstance(value, dict) else range(len(value)) \
        if isinstance(value, list) else ()
    return [p for k in keys for p in _expand(rest, _get(value, (k,)), (*prefix, k))]


def reset(pattern: Path_, old: dict[str, Any], new: dict[str, Any]) -> bool:
    """`processIgnoreChanges` (pkg/resource/deploy/step_generator.go) through `PropertyPath.Reset`
    (sdk/go/common/resource/properties_path.go, `reset`), at pulumi v3.259.0: at the path's last key
    the new inputs take the old value, or lose the key when the old inputs lack it (an input the
    program stopped sending is ignored too); an index or an intermediate key only one side has is a
    path error, which the engine reports and then keeps the change. False on a path error."""
    return bool(pattern) and _reset(pattern, old, new)


def _reset(path: Path_, old: Any, new: Any) -> bool:
    # A secret is a digest here, a leaf: a path into it is not reset (the engine would walk into it).
    key, rest = path[0], path[1:]
    if isinstance(key, int):
        if key < 0:
            return False
        if not isinstance(old, list) or not isinstance(new, list):
            return not isinstance(old, list) and not isinstance(new, list)
        if key >= len(old) and key >= len(new):
            return not rest
        if key >= len(old) or key >= len(new):
            return False
        if not rest:
            new[key] = copy.deepcopy(old[key])
            return True
        return _reset(rest, old[key], new[key])
    if key == "*":
        if not rest:
            if isinstance(new, dict):
                if isinstance(old, dict):
                    new.clear()
                    new.update(copy.deepcopy(old))
                return True
            if isinstance(new, list):
                if isinstance(old, list):
                    new[:min(len(old), len(new))] = copy.deepcopy(old[:len(new)])
                    return len(old) == len(new)
                return True
            return False
        if isinstance(old, dict) and isinstance(new, dict):
            return all(k in new and _reset(rest, old[k], new[k]) for k in old)
        if isinstance(old, list) and isinstance(new, list):
            return all(_reset(rest, o, n) for o, n in zip(old, new, strict=False)) and len(old) == len(new)
        return False
    if not rest:
        if isinstance(old, dict) and key in old:
            if not isinstance(new, dict):
                return False
            new[key] = copy.deepcopy(old[key])
        elif isinstance(new, dict):
            new.pop(key, None)
        return True
    if not isinstance(old, dict) or not isinstance(new, dict):
        return not isinstance(old, dict) and not isinstance(new, dict)
    if key in old and key not in new:
        return False
    if key not in old and key not in new:
        return True
    return _reset(rest, old.get(key, _MISSING), new[key])
