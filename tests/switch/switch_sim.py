"""Toy models of a switch's configuration as a set of lines, for apply/revert round trips.

They encode how the switch OSes treat commands, independently of the renderers:

Onyx: a command is stored as a running-config line, one per interface when it names a range;
`no <cmd>` removes every line that starts with <cmd> (a trailing `force` is a modifier, not
state); lines equal to a factory default never show. `configuration write` copies the running
configuration to the saved one. Session lines (enable, configure terminal, exit) change nothing.

Cumulus NVUE: `nv set <path>` and `nv unset <prefix>` edit a pending revision, one line per
interface of a list like swp1-4,swp7; `nv config apply` makes the pending revision the applied
one (and saves it); `nv config detach` drops the pending changes.

Both parsers refuse lines they do not know, so a renderer emitting something new fails loudly.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

# --------------------------------------------------------------------------- Onyx

ONYX_SESSION = {"enable", "configure terminal", "exit"}
# Running-config never shows a setting at its default.
ONYX_DEFAULTS = {"switchport mode access", "mtu 1500", "qos trust L2", "switchport access vlan 1"}
_ONYX_GLOBAL = [
    re.compile(r"^dcb priority-flow-control enable( force)?$"),
    re.compile(r"^dcb priority-flow-control priority [0-7] enable$"),
    re.compile(r"^vlan \d{1,4}$"),
]
_ONYX_INTERFACE = [
    re.compile(r"^mtu \d+( force)?$"),
    re.compile(r"^qos trust (L2|L3|both)$"),
    re.compile(r"^traffic-class [0-7] congestion-control ecn minimum-absolute \d+ maximum-absolute \d+$"),
    re.compile(r"^dcb priority-flow-control mode on( force)?$"),
    re.compile(r"^switchport mode (access|trunk|hybrid)$"),
    re.compile(r"^switchport access vlan \d{1,4}$"),
]
_ONYX_INTERFACE_NO = [
    re.compile(r"^no mtu$"),
    re.compile(r"^no qos trust$"),
    re.compile(r"^no traffic-class [0-7] congestion-control$"),
    re.compile(r"^no dcb priority-flow-control mode( force)?$"),
    re.compile(r"^no switchport access vlan$"),
]
_ONYX_GLOBAL_NO = [
    re.compile(r"^no dcb priority-flow-control enable( force)?$"),
    re.compile(r"^no dcb priority-flow-control priority [0-7] enable$"),
    re.compile(r"^no vlan \d{1,4}$"),
]
_ETH = re.compile(r"^interface ethernet (\S+) (.+)$")


def expand_onyx_ports(spec: str) -> list[str]:
    """`1/1-1/4` -> 1/1..1/4; `1/3/2` -> itself."""
    if "-" not in spec:
        return [spec]
    first, last = spec.split("-")
    slot, a = first.split("/")
    slot2, b = last.split("/")
    assert slot == slot2, f"range across slots: {spec}"
    return [f"{slot}/{n}" for n in range(int(a), int(b) + 1)]


def _strip_force(text: str) -> str:
    return text[: -len(" force")] if text.endswith(" force") else text


@dataclass
class OnyxSwitch:
    running: set[str] = field(default_factory=set)
    saved: set[str] = field(default_factory=set)
    in_vlan_context: bool = False

    def run(self, script: str) -> None:
        for line in script.splitlines():
            self.command(line.strip())

    def command(self, line: str) -> None:
        if not line:
            return
        if line in ONYX_SESSION:
            self.in_vlan_context = False
            return
        if line == "configuration write":
            self.saved = set(self.running)
            return
        if self.in_vlan_context:
            raise ValueError(f"unexpected command inside a vlan context: {line!r}")
        m = _ETH.match(line)
        if m:
            spec, cmd = m.groups()
            for port in expand_onyx_ports(spec):
                self._interface(port, cmd, line)
            return
        if any(p.match(line) for p in _ONYX_GLOBAL_NO):
            target = _strip_force(line[3:])
            if target.startswith("vlan ") and any(ln.endswith(f" switchport access vlan {target[5:]}")
                                                  for ln in self.running):
                raise ValueError(f"{line!r}: the VLAN still has access ports")
            self._remove(target)
            return
        if any(p.match(line) for p in _ONYX_GLOBAL):
            self.running.add(_strip_force(line))
            self.in_vlan_context = line.startswith("vlan ")
            return
        raise ValueError(f"Onyx model does not know {line!r}")

    def _interface(self, port: str, cmd: str, line: str) -> None:
        prefix = f"interface ethernet {port} "
        if any(p.match(cmd) for p in _ONYX_INTERFACE_NO):
            self._remove(prefix + _strip_force(cmd[3:]))
        elif any(p.match(cmd) for p in _ONYX_INTERFACE):
            setting = _strip_force(cmd)
            if setting.startswith("switchport access vlan ") and f"vlan {setting.split()[-1]}" not in self.running \
                    and setting not in ONYX_DEFAULTS:
                raise ValueError(f"{line!r}: the VLAN does not exist yet")
            # A new value replaces the old one of the same setting (same words up to the value).
            key = setting.rsplit(" ", 1)[0]
            self.running = {ln for ln in self.running if not ln.startswith(prefix + key + " ")}
            if setting not in ONYX_DEFAULTS:
                self.running.add(prefix + setting)
        else:
            raise ValueError(f"Onyx model does not know interface command {line!r}")

    def _remove(self, prefix: str) -> None:
        self.running = {ln for ln in self.running if not (ln == prefix or ln.startswith(prefix + " "))}


# --------------------------------------------------------------------------- Cumulus NVUE


def expand_nvue_interfaces(spec: str) -> list[str]:
    """`swp1-4,swp7,swp9s0` -> swp1, swp2, swp3, swp4, swp7, swp9s0."""
    names: list[str] = []
    for item in spec.split(","):
        m = re.fullmatch(r"swp(\d+)-(\d+)", item)
        if m:
            names += [f"swp{n}" for n in range(int(m.group(1)), int(m.group(2)) + 1)]
        else:
            assert re.fullmatch(r"swp\d+(s\d+)?", item), item
            names.append(item)
    return names


def nvue_args(line: str) -> list[str] | None:
    """The words after `nv` of an NVUE command line; None for shell lines (comments, set, trap)."""
    words = shlex.split(line, comments=True)
    if not words or words[0] != "nv":
        if words and words[0] not in ("set", "trap"):
            raise ValueError(f"unexpected shell line {line!r}")
        return None
    return words[1:]


@dataclass
class CumulusSwitch:
    applied: set[tuple[str, ...]] = field(default_factory=set)
    pending: set[tuple[str, ...]] | None = None

    def run(self, script: str) -> None:
        for line in script.splitlines():
            args = nvue_args(line)
            if args is not None:
                self.nv(args)

    def nv(self, args: list[str]) -> None:
        verb, path = args[0], tuple(args[1:])
        if verb in ("set", "unset"):
            if self.pending is None:
                self.pending = set(self.applied)
            for one in self._expand(path):
                if verb == "set":
                    self.pending.add(one)
                else:
                    self.pending = {p for p in self.pending if p[: len(one)] != one}
        elif args == ["config", "apply", "-y"]:
            if self.pending is not None:
                self.applied, self.pending = self.pending, None
        elif args == ["config", "detach"]:
            self.pending = None
        else:
            raise ValueError(f"NVUE model does not know nv {' '.join(args)!r}")

    @staticmethod
    def _expand(path: tuple[str, ...]) -> list[tuple[str, ...]]:
        if len(path) >= 2 and path[0] == "interface":
            return [("interface", name, *path[2:]) for name in expand_nvue_interfaces(path[1])]
        return [path]
