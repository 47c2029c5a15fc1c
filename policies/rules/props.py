"""Reading resource properties the way the engine hands them to the pack.

The engine sends a resource's properties with two kinds of markers:

* unknown values (during preview, e.g. the id of a port group not yet created) arrive as
  sentinel strings; the SDK wraps the properties in a proxy that raises ``UnknownValueError``
  when one is read;
* secret values arrive wrapped in the secret signature. pulumi-policy 1.21 strips that wrapper
  before a validation runs (pulumi/pulumi-policy#241), so a plain-text password and a secret
  one look the same. ``keep_secret_markers`` (``pulumi_policy_internals.install``, the one module
  that touches the SDK's internals) makes the SDK keep them as ``Secret`` objects so the
  secrets rules can tell the difference.

Rules never touch the proxies directly: ``plain`` turns them into ordinary dicts and lists in
which unknowns are ``UNKNOWN`` and secrets stay ``Secret``; ``dig``/``value`` read paths out of
that and unwrap secrets. Nothing here raises on unknown values.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

from pulumi_policy import Secret

# the lab's component types: the rules import them from here (labrules.types spells each once)
from labrules.types import LAB_VMS, OPENSHIFT_UPI, ROCE_FABRIC, SPECTRUM_SWITCH  # noqa: F401

# SIG_KEY, SECRET_SIG, decode and keep_secret_markers are read from here by the pack and the tests
from .pulumi_policy_internals import (  # noqa: F401
    SECRET_SIG,
    SIG_KEY,
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
    decode,
    request_memo,
)
from .pulumi_policy_internals import install as keep_secret_markers  # noqa: F401

_UNKNOWN_SENTINELS = frozenset({
    UNKNOWN_BOOLEAN_VALUE, UNKNOWN_NUMBER_VALUE, UNKNOWN_STRING_VALUE, UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE, UNKNOWN_ARCHIVE_VALUE, UNKNOWN_OBJECT_VALUE,
})


if TYPE_CHECKING:  # annotations only: the pack needs no typing_extensions at run time
    from typing_extensions import TypeIs

T = TypeVar("T")


class _Unknown(enum.Enum):
    """A value the engine cannot know yet (preview). Rules skip what they cannot see. An enum member,
    so `v is UNKNOWN` narrows types for the type checker."""

    UNKNOWN = "unknown"

    def __repr__(self) -> str:
        return "<unknown>"

    def __bool__(self) -> bool:
        return False


UNKNOWN: Final = _Unknown.UNKNOWN


def is_unknown(v: Any) -> bool:
    return v is UNKNOWN or (isinstance(v, str) and v in _UNKNOWN_SENTINELS)


def is_secret(v: Any) -> bool:
    return isinstance(v, Secret)


# ---------------------------------------------------------------- proxy -> plain


_SCALARS = (int, float, bool, type(None))


def plain(v: Any) -> Any:
    """A deep copy of SDK property proxies as dicts/lists, with ``UNKNOWN`` for unknown values."""
    t = type(v)
    if t in _SCALARS:
        return v
    if t is str:
        return UNKNOWN if v in _UNKNOWN_SENTINELS else v
    if isinstance(v, Secret):
        return Secret(plain(v.value))
    if isinstance(v, Mapping):
        out = {}
        for k in v:  # iterating keys never raises; reading a value may
            try:
                out[k] = plain(v[k])
            except UnknownValueError:
                out[k] = UNKNOWN
        return out
    if isinstance(v, Sequence) and not isinstance(v, (str, bytes)):
        out_list = []
        for i in range(len(v)):
            try:
                out_list.append(plain(v[i]))
            except UnknownValueError:
                out_list.append(UNKNOWN)
        return out_list
    if is_unknown(v):
        return UNKNOWN
    return v


def reveal(v: Any) -> Any:
    """The value inside a secret (rules that check sizes or ports do not care about secrecy)."""
    while isinstance(v, Secret):
        v = v.value
    return UNKNOWN if is_unknown(v) else v


_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def dig(data: Any, path: str, default: Any = None) -> Any:
    """Read ``a.b[0].c`` from plain data; ``UNKNOWN`` if an unknown is met, else ``default``."""
    cur = reveal(data)
    for key, index in _STEP.findall(path):
        if cur is UNKNOWN:
            return UNKNOWN
        if index:
            if not isinstance(cur, list) or int(index) >= len(cur):
                return default
            cur = reveal(cur[int(index)])
        else:
            if not isinstance(cur, dict) or key not in cur:
                return default
            cur = reveal(cur[key])
    return cur


def as_list(v: Any) -> list:
    """A list property, or [] when absent/unknown/not a list (rules skip what they cannot read)."""
    v = reveal(v)
    return v if isinstance(v, list) else []


def as_dict(v: Any) -> dict:
    v = reveal(v)
    return v if isinstance(v, dict) else {}


def as_int(v: Any) -> int | None | _Unknown:
    """An integer property; None when absent, UNKNOWN when unknown or not a number."""
    v = reveal(v)
    if v is None or v is UNKNOWN:
        return v
    if isinstance(v, bool):
        return UNKNOWN
    if isinstance(v, (int, float)):
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"-?\d+", v.strip()):
        return int(v)
    return UNKNOWN


def number_text(v: Any) -> str:
    """A number as people write it: gRPC carries every number as a float (4.0 -> "4")."""
    v = reveal(v)
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def same_quantity(a: Any, b: Any) -> bool:
    """Kubernetes quantities that may arrive as 1, 1.0 or "1"."""
    try:
        return float(reveal(a)) == float(reveal(b))
    except (TypeError, ValueError):
        return str(reveal(a)) == str(reveal(b))


def truthy(v: Any) -> bool:
    """True only for a known true value (``"true"`` strings included: YAML/JSON configs)."""
    v = reveal(v)
    if isinstance(v, str):
        return v.strip().lower() == "true"
    return v is True


# ---------------------------------------------------------------- resources


def props_of(resource_or_args: Any) -> dict:
    """Plain properties of a ResourceValidationArgs or a PolicyResource (read-only: shared by rules).

    Every rule of a request gets the same proxy (see pulumi_policy_internals), so the copy is made
    once per resource and request rather than once per rule.
    """
    return request_memo.get("plain", resource_or_args.props, plain)


def type_chain(urn: str) -> list[str]:
    """Type tokens of a URN's qualified type, outermost parent first."""
    parts = urn.split("::")
    if len(parts) < 4:
        return []
    return parts[2].split("$")


def under_component(urn: str, component_type: str) -> bool:
    """True when the URN shows the resource as a descendant of a component of that type."""
    return component_type in type_chain(urn)[:-1]


def kind_of(props: dict) -> Any:
    """The ``kind`` input that the lab's dynamic (pyvmomi) resources carry."""
    return reveal(props.get("kind"))


def settings(args: Any, schema: Any) -> dict:
    """The policy's config with the schema's defaults filled in.

    The CLI fills defaults before ``Configure``; direct calls (tests, old CLIs) get them here.
    """
    out = {}
    if schema is not None:
        for key, spec in schema.properties.items():
            if "default" in spec:
                out[key] = spec["default"]
    out.update(dict(args.get_config() or {}))
    return out


@dataclass
class Res:
    """One resource of a stack, with plain properties."""

    type: str
    name: str
    urn: str
    props: dict
    parent: str | None = None
    prop_deps: dict[str, list[str]] | None = None  # property -> URNs; None when the engine gave none
    dep_types: dict[str, list[str]] = field(default_factory=dict)  # property -> types of those URNs

    def get(self, path: str, default: Any = None) -> Any:
        return dig(self.props, path, default)


def stack_resources(args: Any) -> list[Res]:
    """Every resource of a StackValidationArgs as ``Res``; rules only read it.

    The SDK hands each stack policy its own copy of the same resources, so within an
    AnalyzeStack request the list is built once, for the first policy, and shared.
    """
    cached = getattr(args, "_gpu_lab_resources", None)
    if cached is None:
        cached = args._gpu_lab_resources = request_memo.shared("stack resources", len(args.resources),
                                                                lambda: _stack_resources(args))
    return cached


def _stack_resources(args: Any) -> list[Res]:
    out = []
    for r in args.resources:
        deps = getattr(r, "property_dependencies", None) or {}
        out.append(Res(
            type=r.resource_type,
            name=r.name,
            urn=r.urn,
            props=request_memo.get("plain", r.props, plain),
            parent=r.parent.urn if getattr(r, "parent", None) is not None else None,
            prop_deps={k: [d.urn for d in v] for k, v in deps.items()} if deps else None,
            dep_types={k: [d.resource_type for d in v] for k, v in deps.items()},
        ))
    return out


def of_type(resources: list[Res], type_: str) -> list[Res]:
    return [r for r in resources if r.type == type_]


def of_kind(resources: list[Res], kind: str) -> list[Res]:
    return [r for r in resources if r.type == DYNAMIC and kind_of(r.props) == kind]


def known(v: T | _Unknown | None) -> TypeIs[T]:
    return v is not None and v is not UNKNOWN


def any_unknown(resources: list[Res], *paths: str) -> bool:
    """True when some resource lacks a known value at one of ``paths`` (preview): a miss proves nothing."""
    return any(not known(r.get(path)) for r in resources for path in paths)


def name_of(props: dict, fallback: str, key: str = "name") -> Any:
    """The name property for messages; the logical name when it is unset or unknown."""
    return reveal(props.get(key)) or fallback


def lab_vm_entries(resources: list[Res]) -> Iterator[tuple[Res, Any]]:
    """(LabVms component, VM entry) for every VM the stack's LabVms components list."""
    for comp in of_type(resources, LAB_VMS):
        for entry in as_list(comp.get("vms")):
            yield comp, entry


ReportViolation = Callable[..., None]

DVS = "vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch"
DPG = "vsphere:index/distributedPortGroup:DistributedPortGroup"
VNIC = "vsphere:index/vnic:Vnic"
VM = "vsphere:index/virtualMachine:VirtualMachine"
DYNAMIC = "pulumi-python:dynamic:Resource"
SPECTRUM = SPECTRUM_SWITCH
OPENSHIFT = OPENSHIFT_UPI
