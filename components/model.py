"""Building blocks shared by every configuration section.

Validation happens in two passes so a user sees every problem at once:

1. structure: pydantic checks types and formats (an address is an address, a key exists);
2. rules: each section's ``check`` (in its ``rules.py``) takes that section's typed model and the
   facts it reads of the others, and returns ``Problem``s for what the guides forbid
   (duplicates, MTU, sizing, LACP, ...).

Rules need a typed model to walk, so a section's rules run when its structure (and that of
every section they read) is sound; each section's structure is checked on its own.
Both passes report key paths in the YAML's own spelling, e.g. ``vsphere.workerHosts[2].name``.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import ipaddress
import json
import re
import struct
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, get_args

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

    def __init__(self, problems: Sequence[Problem], source: str = "the lab configuration",
                 notes: Sequence[str] = ()):
        self.problems = list(problems)
        self.source = source
        self.notes = list(notes)
        lines = [f"{len(self.problems)} problem(s) in {source}:"]
        lines += [f"  - {p}" for p in self.problems]
        lines += [f"  note: {n}" for n in self.notes]
        super().__init__("\n".join(lines))


_UNION_TAGS = {"list", "range"}
_ECHO_LIMIT = 60


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name a typo most likely meant, or None when nothing is close."""
    matches = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    if not matches:  # case slips (`VSphere`) score low on character ratio
        matches = [k for k in known if k.lower() == name.lower()]
    return matches[0] if matches else None


def unknown_key_message(key: str, allowed: Sequence[str], what: str = "key") -> str:
    """'unknown key; allowed here: a, b, c; did you mean b?' (the hint only when one is close)."""
    message = f"unknown {what}; allowed here: {', '.join(allowed)}" if allowed else f"unknown {what}"
    guess = closest(key, allowed)
    return f"{message}; did you mean {guess}?" if guess else message


def echo(value: Any) -> str:
    """A user's value as it goes into a message: repr, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= _ECHO_LIMIT else text[:_ECHO_LIMIT - 3] + "..."


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The config models an annotation can hold (through Optional, list, dict, Annotated, unions)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in get_args(annotation):
        found += _models_in(arg)
    return found


def allowed_keys(root: Any, loc: Sequence[str | int]) -> list[str]:
    """The YAML keys a model accepts at ``loc`` (the location of a key inside ``root``'s value)."""
    models = _models_in(root)
    for part in loc:
        if isinstance(part, int):
            continue  # list index: the element models are already unwrapped
        inner = [m for model in models for f in [_field_by_key(model, part)] if f is not None
                 for m in _models_in(f.annotation)]
        if inner:
            models = inner
        elif not any(_field_by_key(model, part) for model in models):
            continue  # a union tag or a dict key: same models
        else:
            return []  # a scalar field: no keys below it
    if not models:
        return []
    return [f.alias or name for name, f in models[0].model_fields.items()]


def _field_by_key(model: type[BaseModel], key: str):
    for name, f in model.model_fields.items():
        if key in (name, f.alias):
            return f
    return None


def problems_from_validation_error(err: ValidationError, prefix: str, model: Any = None) -> list[Problem]:
    """Turn pydantic's errors into Problems with YAML key paths, the value given and what is allowed.

    ``model`` is the type that was validated (for the keys allowed next to an unknown key).
    """
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
            key = str(e["loc"][-1])
            message = unknown_key_message(key, allowed_keys(model, e["loc"][:-1]) if model is not None else [])
        elif e["type"] == "missing":
            message = "required key is missing"
        elif e["type"] != "value_error" and "input" in e and not _echoed(e["input"], message):
            # pydantic's own checks do not say what they got; ours (value_error) word their message
            message = f"{echo(e['input'])}: {message[:1].lower()}{message[1:]}"
        problems.append(Problem(path, message))
    return problems


def _echoed(value: Any, message: str) -> bool:
    """Whether a message already quotes the value (our own validators do)."""
    return isinstance(value, (str, int, float)) and (repr(value) in message or f"{value}" in message.split())


# ---------------------------------------------------------------- domain types

def matches(regex: str, problem: str, *, lower: bool = False) -> AfterValidator:
    """Validator for a text type, used as ``Annotated[str, matches(...)]]``: the value must match ``regex``;
    otherwise the error reads "<value!r> <problem>".

    ``lower`` folds the value to lower case first (and keeps it so), for case-blind formats.
    """
    compiled = re.compile(regex)

    def check(value: str) -> str:
        if lower:
            value = value.lower()
        if not compiled.match(value):
            raise ValueError(f"{value!r} {problem}")
        return value

    return AfterValidator(check)


HostName = Annotated[str, matches(
    r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$",
    "is not a valid host name: use lower-case letters, digits and '-', "
    "1-63 characters, starting and ending with a letter or digit",
)]
"""A DNS label, used for VMs, nodes, switches and the names Kubernetes sees."""

# vCenter lists a host under the address it was added by: an FQDN (up to 253 characters), an IPv4 or
# IPv6 address, in whatever case was typed. Control characters and the characters vCenter escapes
# in inventory paths ('/', '\\', '%') cannot be part of such a name.
INVENTORY_NAME_MAX = 253
_INVENTORY_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f/\\%]")


def _check_inventory_name(value: str) -> str:
    if not value or not value.strip():
        raise ValueError("must not be empty: give the ESXi host's name as vCenter lists it "
                         "(FQDN, address or short name)")
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

MacAddress = Annotated[str, matches(
    r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$", "is not a MAC address: write six hex pairs separated by ':'", lower=True
)]


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
    Annotated[list[IPv4], Tag("list")] | Annotated[AddressRange, Tag("range")],
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


# ---------------------------------------------------------------- OpenSSH public keys

# Key algorithms golang.org/x/crypto/ssh parses (ssh.ParseAuthorizedKey), which both consumers of
# our public keys use: openshift-install for sshKey (openshift/installer pkg/validate/validate.go,
# SSHPublicKey) and pulumi-command for connection.hostKey (provider/pkg/provider/remote/connection.go,
# SSHConfig).
SSH_KEY_TYPES = frozenset({
    "ssh-ed25519", "ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com",
})


def ssh_key_line_problem(line: str) -> str | None:
    """Why an authorized_keys line is not a public key golang.org/x/crypto/ssh parses, or None.

    "[options] <type> <base64 blob> [comment]": the blob must be base64 and name the same type.
    """
    words = line.split()
    # An options field may come first (authorized_keys format); the key type follows it.
    start = next((i for i, w in enumerate(words) if w in SSH_KEY_TYPES), None)
    if start is None:
        return f"no key type of {', '.join(sorted(SSH_KEY_TYPES))}"
    if start + 1 >= len(words):
        return f"{words[start]} without its key data"
    try:
        blob = base64.b64decode(words[start + 1], validate=True)
    except (binascii.Error, ValueError):
        return f"the {words[start]} key data is not base64"
    if len(blob) < 4:
        return "the key data is truncated"
    (length,) = struct.unpack(">I", blob[:4])
    if blob[4:4 + length].decode("ascii", "replace") != words[start]:
        return f"the key data is not a {words[start]} key"
    return None


def _check_ssh_public_key(value: str) -> str:
    text = value.strip()
    example = "give the key line as `ssh-keyscan -t ed25519 <address>` prints it, without the address: " \
              "'ssh-ed25519 AAAA...'"
    if not text:
        raise ValueError(f"is empty; {example}")
    if "PRIVATE KEY" in text:  # never echoed
        raise ValueError(f"is a private key; a host key is the host's public key: {example}")
    if "\n" in text:
        raise ValueError(f"is {len(text.splitlines())} lines, not one key line; {example}")
    problem = ssh_key_line_problem(text)
    if problem is None and text.split()[0] not in SSH_KEY_TYPES:
        problem = f"it starts with {text.split()[0]!r}, not the key type"
    if problem is not None:
        raise ValueError(f"{echo(value)} is not an OpenSSH public key ({problem}); {example}")
    return text


SshPublicKey = Annotated[str, AfterValidator(_check_ssh_public_key)]
"""One OpenSSH public key line, "<type> <base64 blob> [comment]", as in a .pub file or after the
address in `ssh-keyscan` output; used to pin a host's SSH key."""


def ssh_public_key_parts(line: str) -> tuple[str, str]:
    """(type, base64 blob) of a valid SshPublicKey line."""
    words = line.split()
    return words[0], words[1]


# ---------------------------------------------------------------- registry credentials


def dockerconfigjson_problems(value: str, path: str, source: str) -> list[Problem]:
    """A docker config.json as the consumers of our pull secrets read it: JSON with a non-empty
    "auths" object of registry -> entry object. The API server refuses a kubernetes.io/dockerconfigjson
    Secret whose .dockerconfigjson is not JSON (kubernetes pkg/apis/core/validation, ValidateSecret);
    the kubelet reads each entry as an object (pkg/credentialprovider/config.go, DockerConfigJSON);
    openshift-install wants the "auths" object (pkg/validate/validate.go, ImagePullSecret).
    ``source`` says where the user gets a valid one. Messages never quote the value: it is a secret."""
    try:
        doc = json.loads(value)
    except json.JSONDecodeError as err:
        return [Problem(path, f"is not JSON ({err.msg} at character {err.pos}); give {source} as it is")]
    auths = doc.get("auths") if isinstance(doc, dict) else None
    if not isinstance(auths, dict) or not auths:
        return [Problem(path, 'needs a non-empty "auths" object: {"auths": {"<registry>": {"auth": "<base64>"}}}')]
    return [Problem(path, f"registry {registry!r} needs an object of credentials, like {{\"auth\": \"<base64>\"}}")
            for registry, entry in auths.items() if not isinstance(entry, dict)]


def whole_numbers(value: Any) -> Any:
    """Whole-number floats back to ints, all through a value: the wire format (protobuf Value) has only
    doubles, so the port 22 that was sent comes back as 22.0."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value
