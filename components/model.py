"""Building blocks shared by every configuration section.

Validation happens in two passes so a user sees every problem at once:

1. structure: pydantic checks types and formats (an address is an address, a key exists);
2. rules: each section's ``check(lab)`` function walks the typed model and returns
   ``Problem``s for what the guides forbid (duplicates, MTU, sizing, LACP, ...).

Rules only run when the structure is sound, because they need a typed model to walk.
Both passes report key paths in the YAML's own spelling, e.g. ``vsphere.workerHosts[2].name``.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    """Base of every config model: frozen, no unknown keys, camelCase keys in YAML."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
    )


@dataclass(frozen=True)
class Problem:
    """One configuration problem: where it is and what is wrong / what is allowed."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(ValueError):
    """Every problem found in a configuration, raised before any resource is registered."""

    def __init__(self, problems: Sequence[Problem], source: str = "the lab configuration"):
        self.problems = list(problems)
        lines = [f"{len(self.problems)} problem(s) in {source}:"]
        lines += [f"  - {p}" for p in self.problems]
        super().__init__("\n".join(lines))


_UNION_TAGS = {"list", "range"}


def problems_from_validation_error(err: ValidationError, prefix: str) -> list[Problem]:
    """Turn pydantic's errors into Problems with YAML key paths."""
    problems = []
    for e in err.errors():
        path = prefix
        for part in e["loc"]:
            if isinstance(part, int):
                path += f"[{part}]"
            elif part in _UNION_TAGS:
                continue  # pydantic names the union member it tried; the user never wrote that
            else:
                path += f".{part}" if path else str(part)
        message = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            message = "unknown key (check its spelling against the README's configuration reference)"
        elif e["type"] == "missing":
            message = "required key is missing"
        problems.append(Problem(path, message))
    return problems


# ---------------------------------------------------------------- domain types

def pattern_type(regex: str, problem: str, *, lower: bool = False) -> Any:
    """A text type that must match ``regex``; otherwise the error reads "<value!r> <problem>".

    ``lower`` folds the value to lower case first (and keeps it so), for case-blind formats.
    """
    compiled = re.compile(regex)

    def check(value: str) -> str:
        if lower:
            value = value.lower()
        if not compiled.match(value):
            raise ValueError(f"{value!r} {problem}")
        return value

    return Annotated[str, AfterValidator(check)]


HostName = pattern_type(
    r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$",
    "is not a valid host name: use lower-case letters, digits and '-', "
    "1-63 characters, starting and ending with a letter or digit",
)
"""A DNS label, used for VMs, nodes, switches and the names Kubernetes sees."""

# vCenter lists a host under the address it was added by: an FQDN (up to 253 characters), an IPv4 or
# IPv6 address, in whatever case was typed. Control characters and the characters vCenter escapes
# in inventory paths ('/', '\\', '%') cannot be part of such a name.
INVENTORY_NAME_MAX = 253
_INVENTORY_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f/\\%]")


def _check_inventory_name(value: str) -> str:
    if not value or not value.strip():
        raise ValueError("must not be empty: give the ESXi host's name as vCenter lists it (FQDN, address or short name)")
    if value != value.strip():
        raise ValueError(f"{value!r} has leading or trailing whitespace; vCenter would not find it")
    if len(value) > INVENTORY_NAME_MAX:
        raise ValueError(f"{value[:40]!r}... is {len(value)} characters; a host name has at most {INVENTORY_NAME_MAX}")
    bad = _INVENTORY_FORBIDDEN.search(value)
    if bad:
        raise ValueError(f"{value!r} contains {bad.group()!r}; a host's inventory name is an FQDN, an IP address "
                         "or a short name")
    return value


InventoryName = Annotated[str, AfterValidator(_check_inventory_name)]
"""An ESXi host as the vCenter inventory names it (FQDN, IP address, any case), e.g. esx24.lab.example.com."""


def resource_slug(name: str) -> str:
    """``name`` usable inside a Pulumi logical name: an IPv6 host's '::' would split the URN."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", name)

MacAddress = pattern_type(
    r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$", "is not a MAC address: write six hex pairs separated by ':'", lower=True
)


def _check_cidr(value: str) -> str:
    try:
        net = ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"{value!r} is not an IPv4 network in CIDR form like 192.168.0.0/24 ({exc})") from None
    return str(net)


Cidr = Annotated[str, AfterValidator(_check_cidr)]
"""An IPv4 network with no host bits set, kept as text (``ipaddress`` objects are not JSON)."""

IPv4 = ipaddress.IPv4Address

Vlan = Annotated[int, Field(ge=0, le=4094, description="802.1Q VLAN id; 0 means untagged")]


class AddressRange(Model):
    """Addresses derived from a first address, one per item, consecutive."""

    first: IPv4


def _address_plan_kind(value: Any) -> str:
    return "range" if isinstance(value, (dict, AddressRange)) else "list"


AddressPlan = Annotated[
    Union[Annotated[list[IPv4], Tag("list")], Annotated[AddressRange, Tag("range")]],
    Discriminator(_address_plan_kind),
]
"""Either one address per item, listed, or ``{first: <address>}`` to derive them."""


def expand_addresses(plan: AddressPlan | None, count: int) -> list[IPv4 | None]:
    """The address of each of ``count`` items (None where the plan leaves it to DHCP)."""
    if plan is None:
        return [None] * count
    if isinstance(plan, AddressRange):
        return [plan.first + i for i in range(count)]
    return list(plan) + [None] * (count - len(plan))


def duplicates(values: Iterable[object]) -> list[object]:
    """Values that occur more than once, in first-seen order."""
    counts = Counter(values)
    seen: list[object] = []
    for value, n in counts.items():
        if n > 1 and value is not None:
            seen.append(value)
    return seen
