"""Toy models of a switch and of the engine that changes it, for round trips and day-2 sequences.

They encode how the switch OSes and pulumi-command treat what the program sends, independently
of the renderers:

Onyx: a command is stored as a running-config line, one per interface when it names a range;
`no <cmd>` removes every line that starts with <cmd> (a trailing `force` is a modifier, not
state); lines equal to a factory default never show. `configuration write` copies the running
configuration to the active file; `configuration write to <f> no-switch` copies it to another
file, `configuration switch-to <f>` loads <f> and makes it the active file, `configuration delete
<f>` removes a file that is not active (NVIDIA Onyx / MLNX-OS User Manual, "Configuration
Management"). Session lines (enable, configure terminal, exit) and `show` change nothing. A CLI
session stops at the first line it refuses; the lines before it stay applied.

Cumulus NVUE: `nv set <path>` and `nv unset <prefix>` edit a pending revision, one line per
interface of a list like swp1-4,swp7; `nv config apply -y` makes the pending revision the applied
one; `nv config apply --confirm <t> -y` does too but keeps the previous one to roll back to when
the window closes unconfirmed, and `nv config apply --confirm-yes` confirms; `nv config diff -o
commands` prints the pending changes as commands; `nv config detach` drops the pending changes.
CumulusBox runs the Cumulus scripts with bash, as the switch does, with a fake `nv` first on PATH
that this model answers over a loopback port.

Both parsers refuse lines they do not know, so a renderer emitting something new fails loudly.

Engine: the Pulumi engine's plan of pulumi-command remote.Commands across `pulumi up` runs, with
pulumi-command v1.2.1's rules (github.com/pulumi/pulumi-command, tag v1.2.1):
provider/pkg/provider/common/inputs.go marks `triggers` as the only replace-on-change input;
provider/pkg/provider/remote/commandController.go runs `create` on Create only when set, on Update
`update` if set else `create` if set else nothing (storing the new inputs either way), and on
Delete the stored `delete` if set. The engine side (github.com/pulumi/pulumi, pkg v3.259.0):
`ignore_changes` paths keep their old values before the diff; a replacement creates the new
resource first and deletes the old one with the other deletes at the end, unless
delete_before_replace; deletes run after every create and update, in antichains of resources with
no condemned direct dependency, last-registered first (resource/deploy/step_generator.go,
ScheduleDeletes); the first failed step stops the update.
"""

from __future__ import annotations

import os
import re
import shlex
import socketserver
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ScriptFailed(Exception):
    """A script sent to the switch exited non-zero (or the login failed)."""


# --------------------------------------------------------------------------- Onyx

ONYX_SESSION = {"enable", "configure terminal", "exit"}
ONYX_READ_ONLY = {"show version"}
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
_FILE = r"([A-Za-z0-9._-]+)"


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
    """The active configuration file's content."""
    active: str = "initial"
    files: dict[str, set[str]] = field(default_factory=dict)
    """The other configuration files."""
    fail_on: str = ""
    """A line containing this text is refused, as the CLI refuses a value it does not take."""
    in_vlan_context: bool = False

    def run(self, script: str) -> None:
        """One CLI session: every line in order, stopping at the first refused one (ValueError)."""
        self.in_vlan_context = False
        for line in script.splitlines():
            self.command(line.strip())

    def snapshot(self) -> dict[str, Any]:
        return {"running": sorted(self.running), "saved": sorted(self.saved), "active": self.active,
                "files": {name: sorted(lines) for name, lines in sorted(self.files.items())}}

    def command(self, line: str) -> None:
        if not line:
            return
        if self.fail_on and self.fail_on in line:
            raise ValueError(f"{line!r}: % invalid value")
        if line in ONYX_SESSION:
            self.in_vlan_context = False
            return
        if line in ONYX_READ_ONLY:
            return
        if line == "configuration write":
            self.saved = set(self.running)
            return
        if m := re.fullmatch(rf"configuration write to {_FILE} no-switch", line):
            self.files[m.group(1)] = set(self.running)
            return
        if m := re.fullmatch(rf"configuration switch-to {_FILE}", line):
            if m.group(1) not in self.files:
                raise ValueError(f"{line!r}: no such configuration file")
            self.files[self.active] = self.saved
            self.active = m.group(1)
            self.saved = self.files.pop(self.active)
            self.running = set(self.saved)
            return
        if m := re.fullmatch(rf"configuration delete {_FILE}", line):
            if m.group(1) == self.active or m.group(1) not in self.files:
                raise ValueError(f"{line!r}: not a configuration file that can be deleted")
            del self.files[m.group(1)]
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
            # A new value replaces the old one of the same setting: same words up to the value, or
            # for congestion control the traffic class (one ECN setting per class, both thresholds in it).
            ecn = re.match(r"traffic-class [0-7] congestion-control", setting)
            key = ecn.group(0) if ecn else setting.rsplit(" ", 1)[0]
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
    """The words after `nv` of a script line that is a plain NVUE command; None for other lines."""
    words = shlex.split(line, comments=True)
    if not words or words[0] != "nv":
        return None
    return [w for w in words[1:] if w not in (">/dev/null", ">&2", "||", "true")]


Path_ = tuple[str, ...]

# The NVUE paths the model knows. `*` is a key (an interface, a VLAN, a priority); a path ending in
# `=` is a leaf whose last word is its value, so setting it again replaces the value; the others
# name a member of a set (a PFC priority, a bridge VLAN). `nv set` of any other path is refused.
NVUE_SCHEMA = [
    ("system", "hostname", "="),
    ("qos", "roce", "mode", "="),
    ("qos", "mapping", "default-global", "trust", "="),
    ("qos", "egress-queue-mapping", "default-global", "switch-priority", "*", "traffic-class", "="),
    ("qos", "congestion-control", "default-global", "traffic-class", "*", "ecn", "="),
    ("qos", "congestion-control", "default-global", "traffic-class", "*", "min-threshold", "="),
    ("qos", "congestion-control", "default-global", "traffic-class", "*", "max-threshold", "="),
    ("qos", "pfc", "default-global", "tx", "="),
    ("qos", "pfc", "default-global", "rx", "="),
    ("qos", "pfc", "default-global", "switch-priority", "*"),
    ("bridge", "domain", "*", "vlan", "*"),
    ("interface", "*", "link", "mtu", "="),
    ("interface", "*", "bridge", "domain", "*", "access", "="),
]


def nvue_schema_entry(path: Path_) -> tuple[str, ...]:
    for entry in NVUE_SCHEMA:
        if len(entry) == len(path) and all(e in ("*", "=") or e == p for e, p in zip(entry, path, strict=True)):
            return entry
    raise ValueError(f"NVUE model does not know the path {' '.join(path)!r}")


@dataclass
class CumulusSwitch:
    applied: set[Path_] = field(default_factory=set)
    pending: set[Path_] | None = None
    confirm_rollback: set[Path_] | None = None
    """The applied configuration to go back to when an unconfirmed commit-confirm window closes."""

    def nv(self, args: list[str]) -> str:
        """One `nv` command; returns what it prints. ValueError for what NVUE would refuse."""
        verb, path = args[0], tuple(args[1:])
        if verb in ("set", "unset"):
            if self.pending is None:
                self.pending = set(self.applied)
            for one in self._expand(path):
                if verb == "set":
                    if nvue_schema_entry(one)[-1] == "=":  # a leaf: the new value replaces the old one
                        self.pending = {p for p in self.pending if not (len(p) == len(one) and p[:-1] == one[:-1])}
                    self.pending.add(one)
                else:
                    self.pending = {p for p in self.pending if p[: len(one)] != one}
            return ""
        if args[:2] == ["config", "apply"]:
            return self._apply(args[2:])
        if args == ["config", "diff", "-o", "commands"]:
            if self.pending is None:
                return ""
            return "".join(f"nv set {' '.join(p)}\n" for p in sorted(self.pending - self.applied)) + \
                "".join(f"nv unset {' '.join(p)}\n" for p in sorted(self.applied - self.pending))
        if args == ["config", "detach"]:
            self.pending = None
            return ""
        if args == ["show", "system"]:
            return "hostname  leaf01\nbuild     Cumulus Linux 5.9.1\n"
        raise ValueError(f"NVUE model does not know nv {' '.join(args)!r}")

    def _apply(self, options: list[str]) -> str:
        if options == ["--confirm-yes"]:
            if self.confirm_rollback is None:
                raise ValueError("no commit-confirm is waiting for a confirmation")
            self.confirm_rollback = None
            return "confirmed\n"
        if self.confirm_rollback is not None:
            raise ValueError("a commit-confirm is waiting for a confirmation")
        if options == ["-y"]:
            previous = None
        elif len(options) == 3 and options[0] == "--confirm" and options[2] == "-y" \
                and re.fullmatch(r"\d+[smh]", options[1]):
            previous = set(self.applied)
        else:
            raise ValueError(f"NVUE model does not know nv config apply {' '.join(options)!r}")
        if self.pending is not None:
            self.applied, self.pending = self.pending, None
        self.confirm_rollback = previous
        return "applied\n"

    def confirm_window_closes(self) -> None:
        """The commit-confirm window ran out: an unconfirmed change rolls back."""
        if self.confirm_rollback is not None:
            self.applied, self.confirm_rollback = self.confirm_rollback, None

    @staticmethod
    def _expand(path: tuple[str, ...]) -> list[tuple[str, ...]]:
        if len(path) >= 2 and path[0] == "interface":
            return [("interface", name, *path[2:]) for name in expand_nvue_interfaces(path[1])]
        return [path]


class _NvueService(socketserver.ThreadingTCPServer):
    """The NVUE models of every stand-in Cumulus switch of this process, on a loopback port.

    A fake `nv` (bash) sends its words there and prints the answer: one short connection per
    command instead of one Python process, so a script of thirty `nv` lines runs in milliseconds.
    """

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _NvueRequest)
        self.boxes: dict[str, CumulusBox] = {}
        threading.Thread(target=self.serve_forever, daemon=True).start()


class _NvueRequest(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        words = self.rfile.readline().decode().rstrip("\n").split("\x1f")
        box = self.server.boxes[words[0]]  # type: ignore[attr-defined]
        rc, text = box.answer(words[1:-1])
        self.wfile.write(f"{rc}\n{text}".encode())


_service: _NvueService | None = None
_service_lock = threading.Lock()


def _nvue_service() -> _NvueService:
    global _service
    with _service_lock:
        if _service is None:
            _service = _NvueService()
        return _service


FAKE_NV = """\
#!/bin/bash
# The stand-in switch's nv: the NVUE model of box {box} answers on 127.0.0.1:{port}.
exec 3<>/dev/tcp/127.0.0.1/{port}
printf '%s\\037' {box} "$@" >&3
printf '\\n' >&3
IFS= read -r rc <&3
if [ "$rc" = 0 ]; then cat <&3; else cat <&3 >&2; fi
exit "$rc"
"""
# The lock the Cumulus scripts take on the switch, and where a stand-in keeps it.
SWITCH_LOCK_DIR = "/run/lock/"


class CumulusBox:
    """A stand-in Cumulus switch on this machine: bash runs the scripts, `nv` is answered by the model.

    `directory/bin/nv` is the fake `nv`; put it first on PATH wherever the scripts run (here, or
    behind an sshd). `fail_on`: an `nv` command containing this text fails, as NVUE refuses a value.
    """

    def __init__(self, directory: Path, switch: CumulusSwitch | None = None) -> None:
        service = _nvue_service()
        self.dir = directory
        self.id = f"box{id(self)}"
        service.boxes[self.id] = self
        self._lock = threading.Lock()
        (directory / "bin").mkdir(parents=True, exist_ok=True)
        nv = directory / "bin" / "nv"
        nv.write_text(FAKE_NV.format(box=self.id, port=service.server_address[1]))
        nv.chmod(0o755)
        self.reset(switch or CumulusSwitch())

    def reset(self, switch: CumulusSwitch, fail_on: str = "") -> None:
        self.state = switch
        self.fail_on = fail_on
        self.log: list[str] = []

    def answer(self, args: list[str]) -> tuple[int, str]:
        with self._lock:
            self.log.append("nv " + " ".join(args))
            if self.fail_on and self.fail_on in " ".join(args):
                return 1, "Error: invalid value\n"
            try:
                return 0, self.state.nv(args)
            except ValueError as err:
                return 1, f"Error: {err}\n"

    def received(self) -> list[str]:
        return list(self.log)

    def run(self, script: str) -> subprocess.CompletedProcess:
        # The switch's lock directory is this box's own, so parallel test runs do not share a lock.
        text = script.replace(SWITCH_LOCK_DIR, f"{self.dir}/")
        env = {"PATH": f"{self.dir}/bin:{os.environ['PATH']}", "LC_ALL": "C"}
        return subprocess.run(["bash", "-c", text], env=env, capture_output=True, text=True, timeout=60)

    def close_confirm_window(self) -> None:
        self.state.confirm_window_closes()


# --------------------------------------------------------------------------- the engine


@dataclass(frozen=True)
class Registration:
    """A remote.Command as the program registers it: plain inputs and the options the engine reads."""

    name: str
    inputs: dict[str, Any]
    depends_on: tuple[str, ...] = ()
    ignore_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False


@dataclass
class Stored:
    inputs: dict[str, Any]
    depends_on: tuple[str, ...]


@dataclass(frozen=True)
class Executed:
    """One script the provider sent over SSH."""

    resource: str
    operation: str  # create, update or delete
    script: str


@dataclass
class Outcome:
    """What one `pulumi up` did."""

    steps: dict[str, str] = field(default_factory=dict)  # name -> create, update, replace, delete, same
    executed: list[Executed] = field(default_factory=list)
    delete_batches: list[list[str]] = field(default_factory=list)
    """The deletes that run a script, in the engine's antichains: each may run in parallel."""
    error: str | None = None

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for step in self.steps.values():
            found[step] = found.get(step, 0) + 1
        return found

    def changed(self) -> dict[str, str]:
        return {name: step for name, step in self.steps.items() if step != "same"}


class Engine:
    """A stack's state of remote.Commands and `pulumi up` against one switch.

    `execute(script, connection)` runs a script on the switch and raises ScriptFailed when it fails.
    """

    def __init__(self, execute: Callable[[str, dict[str, Any]], None]) -> None:
        self.execute = execute
        self.state: dict[str, Stored] = {}

    def up(self, registrations: list[Registration]) -> Outcome:
        out = Outcome()
        replaced: list[tuple[str, Stored]] = []
        wanted = {r.name for r in registrations}
        new_state = dict(self.state)
        try:
            for reg in registrations:
                old = self.state.get(reg.name)
                news = dict(reg.inputs)
                if old is not None:
                    for path in reg.ignore_changes:
                        if path in old.inputs:
                            news[path] = old.inputs[path]
                        else:
                            news.pop(path, None)
                if old is None:
                    out.steps[reg.name] = "create"
                    self._run(out, reg.name, "create", news.get("create"), news)
                elif news == old.inputs:
                    out.steps[reg.name] = "same"
                elif news.get("triggers") != old.inputs.get("triggers"):
                    out.steps[reg.name] = "replace"
                    if reg.delete_before_replace:
                        self._run(out, reg.name, "delete", old.inputs.get("delete"), old.inputs)
                        self._run(out, reg.name, "create", news.get("create"), news)
                    else:
                        self._run(out, reg.name, "create", news.get("create"), news)
                        replaced.append((reg.name, old))
                else:
                    out.steps[reg.name] = "update"
                    self._run(out, reg.name, "update", news.get("update") or news.get("create"), news)
                new_state[reg.name] = Stored(news, reg.depends_on)
            condemned = [(name, stored) for name, stored in self.state.items() if name not in wanted]
            for name, _ in condemned:
                out.steps[name] = "delete"
            self._delete_all(out, condemned + replaced, new_state)
        except ScriptFailed as failed:
            out.error = str(failed)
        finally:
            self.state = {name: stored for name, stored in new_state.items()}
        return out

    def _run(self, out: Outcome, name: str, operation: str, script: str | None, inputs: dict[str, Any]) -> None:
        if not script:
            return
        out.executed.append(Executed(name, operation, script))
        self.execute(script, inputs["connection"])

    def _delete_all(self, out: Outcome, condemned: list[tuple[str, Stored]], new_state: dict[str, Stored]) -> None:
        order = {name: i for i, name in enumerate(self.state)}
        left = list(condemned)
        batches: list[list[tuple[str, Stored]]] = []
        while left:
            names = {name for name, _ in left}
            # Resources none of whose direct dependencies is still condemned go in this antichain.
            batch = [(n, s) for n, s in left if not set(s.depends_on) & names]
            batches.append(batch)
            left = [entry for entry in left if entry not in batch]
        for batch in reversed(batches):
            batch.sort(key=lambda entry: -order[entry[0]])
            # Only deletes that run something matter to the switch: those may run at the same time.
            scripted = [name for name, stored in batch if stored.inputs.get("delete")]
            if scripted:
                out.delete_batches.append(scripted)
            for name, stored in batch:
                self._run(out, name, "delete", stored.inputs.get("delete"), stored.inputs)
                if new_state.get(name) is stored:
                    del new_state[name]
