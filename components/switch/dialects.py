"""What differs between the switch OSes: one dialect object per OS (Onyx CLI, Cumulus NVUE).

A dialect owns its port names, its undo items, the lines around a script (prologue, commit),
how a port setting is written and undone, and its read-only login check; components/switch/
files.py assembles the scripts from them the same way for every OS.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from components.switch.plan import SwitchPlan


@dataclass(frozen=True)
class Item:
    """One undo item: the lines that set one thing, and the lines that undo exactly that thing.

    The key holds what the undo lines name, and nothing else: per-port settings are one item per
    port (`port-1-2-mtu`), ECN one per traffic class, PFC "on" (`pfc`) and one per priority
    (`pfc-priority-3`), a rail VLAN `vlan-111`, a port's access VLAN `port-swp3-access-vlan`
    without the VLAN (its undo does not name it, so a port moving to another rail keeps its item).
    A port item's lines are the interface's settings; the dialect puts the interface in front.
    """

    key: str
    apply: tuple[str, ...]
    revert: tuple[str, ...]
    port: str | None = None


class Dialect(Protocol):
    os: str
    port_pattern: re.Pattern[str]
    port_example: str
    """How the OS names a port, for the rules' message."""
    login_check: str
    """A read-only command that proves a login works (the apply Command's `update`)."""

    def items(self, sw: SwitchPlan) -> list[Item]:
        """The undo items in apply order; the first is the switch's anchor."""

    def port_ranges(self, ports: list[str]) -> list[str]:
        """Interface arguments covering `ports`, one per line to write."""

    def port_line(self, ports: str, line: str, *, apply: bool) -> str:
        """A port item's line (apply) or undo line (not apply) for the interfaces `ports`."""

    def apply_script(self, sw: SwitchPlan, body: list[str]) -> list[str]:
        """The apply script's lines around `body`."""

    def undo_script(self, sw: SwitchPlan, item: Item, body: list[str]) -> list[str]:
        """The undo script of `item`, around its `body`."""


# ---------------------------------------------------------------- port lists


def _port_key(port: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", port))


def _sorted_ports(ports: list[str]) -> list[str]:
    return sorted(set(ports), key=_port_key)


def port_slug(port: str) -> str:
    """A port name as it may appear in a resource name: `1/3/2` -> `1-3-2`, `swp3s1` unchanged."""
    return port.replace("/", "-")


def onyx_port_ranges(ports: list[str]) -> list[str]:
    """Onyx interface arguments: consecutive ports of one slot become `1/1-1/4`.

    Split ports (`1/3/2`) stay single; Onyx takes one range per command, so each range is a line.
    """
    plain = sorted({_port_key(p) for p in ports if len(_port_key(p)) == 2})
    items: list[tuple[tuple[int, ...], str]] = [(_port_key(p), p) for p in set(ports) if len(_port_key(p)) != 2]
    i = 0
    while i < len(plain):
        j = i
        while j + 1 < len(plain) and plain[j + 1] == (plain[i][0], plain[j][1] + 1):
            j += 1
        (slot, first), last = plain[i], plain[j][1]
        items.append((plain[i], f"{slot}/{first}" if i == j else f"{slot}/{first}-{slot}/{last}"))
        i = j + 1
    return [text for _, text in sorted(items)]


def nvue_port_list(ports: list[str]) -> str:
    """NVUE interface list: `swp1-4,swp7,swp9s0` (ranges only for plain swp ports)."""
    items: list[str] = []
    run: list[int] = []

    def flush() -> None:
        if run:
            items.append(f"swp{run[0]}" if len(run) == 1 else f"swp{run[0]}-{run[-1]}")
            run.clear()

    for port in _sorted_ports(ports):
        m = re.fullmatch(r"swp(\d+)", port)
        if not m:
            flush()
            items.append(port)
            continue
        n = int(m.group(1))
        if run and n != run[-1] + 1:
            flush()
        run.append(n)
    flush()
    return ",".join(items)


def _ports_in_order(sw: SwitchPlan) -> list[tuple[str, int | None]]:
    """(port, rail VLAN or None) for the host ports, then each rail's: sorted within each group."""
    ports: list[tuple[str, int | None]] = [(p, None) for p in _sorted_ports(list(sw.host_ports))]
    for rail in sw.rails:
        ports += [(p, rail.vlan) for p in _sorted_ports(list(rail.ports))]
    return ports


# ---------------------------------------------------------------- Onyx

ONYX_PROLOGUE = ("enable", "configure terminal")
ONYX_EPILOGUE = ("configuration write",)
# Where the Onyx apply saves the running configuration before it changes anything.
ONYX_ROLLBACK_FILE = "gpu-lab-before-apply"


class Onyx:
    """NVIDIA Onyx: CLI commands for the switch's own shell, one per line, each self-contained
    (`interface ethernet 1/1-1/4 <setting>`), between `enable`/`configure terminal` and
    `configuration write`.

    Every line sets an absolute value, so the apply script run twice leaves the same
    configuration. Before changing anything it saves the running configuration to the file
    `gpu-lab-before-apply` without making it the active one (`configuration write to <file>
    no-switch`, NVIDIA Onyx / MLNX-OS User Manual, "Configuration Management"); `configuration
    switch-to gpu-lab-before-apply` loads it back. The CLI runs what it is sent line by line and has
    no conditionals, so it cannot restore that file by itself when a later line fails: that is the
    operator's one command (docs/day2.md). The anchor item is the saved rollback file.
    """

    os = "onyx"
    # <slot>/<port>[/<subport>] as in `interface ethernet 1/1`.
    port_pattern = re.compile(r"^\d{1,2}/\d{1,2}(/\d)?$")
    port_example = "<slot>/<port>[/<subport>], e.g. 1/1 or 1/3/2"
    login_check = "show version"

    def items(self, sw: SwitchPlan) -> list[Item]:
        roce = sw.roce
        lossless = roce.lossless
        trust = "L3" if roce.trust == "dscp" else "L2"
        tc, prio = roce.traffic_class, roce.pfc_priority
        items = [Item("saved-config", (f"configuration write to {ONYX_ROLLBACK_FILE} no-switch",),
                      (f"configuration delete {ONYX_ROLLBACK_FILE}",))]
        if lossless:
            items += [
                Item("pfc", ("dcb priority-flow-control enable force",),
                     ("no dcb priority-flow-control enable force",)),
                Item(f"pfc-priority-{prio}", (f"dcb priority-flow-control priority {prio} enable",),
                     (f"no dcb priority-flow-control priority {prio} enable",)),
            ]
        vlans_seen: set[int] = set()
        for port, vlan in _ports_in_order(sw):
            if vlan is not None and vlan not in vlans_seen:
                vlans_seen.add(vlan)
                items.append(Item(f"vlan-{vlan}", (f"vlan {vlan}", "exit"), (f"no vlan {vlan}",)))
            at = f"port-{port_slug(port)}"
            items += [
                Item(f"{at}-mtu", (f"mtu {roce.mtu} force",), ("no mtu",), port),
                Item(f"{at}-trust", (f"qos trust {trust}",), ("no qos trust",), port),
                # The guide's line, with the configured numbers.
                Item(f"{at}-ecn-tc{tc}", (f"traffic-class {tc} congestion-control ecn minimum-absolute "
                                          f"{roce.ecn_min_kb} maximum-absolute {roce.ecn_max_kb}",),
                     (f"no traffic-class {tc} congestion-control",), port),
            ]
            if lossless:
                items.append(Item(f"{at}-pfc", ("dcb priority-flow-control mode on force",),
                                  ("no dcb priority-flow-control mode force",), port))
            if vlan is not None:
                # Access is Onyx's default mode: nothing to undo but the VLAN.
                items.append(Item(f"{at}-access-vlan", ("switchport mode access", f"switchport access vlan {vlan}"),
                                  ("no switchport access vlan",), port))
        return items

    def port_ranges(self, ports: list[str]) -> list[str]:
        return onyx_port_ranges(ports)

    def port_line(self, ports: str, line: str, *, apply: bool) -> str:
        return f"interface ethernet {ports} {line}"

    def apply_script(self, sw: SwitchPlan, body: list[str]) -> list[str]:
        return [*ONYX_PROLOGUE, *body, *ONYX_EPILOGUE]

    def undo_script(self, sw: SwitchPlan, item: Item, body: list[str]) -> list[str]:
        return [*ONYX_PROLOGUE, *body, *ONYX_EPILOGUE]


# ---------------------------------------------------------------- Cumulus NVUE

CUMULUS_BRIDGE = "br_default"
# NVUE takes ECN thresholds in bytes; NVIDIA states its RoCE default "150 KB" as 150000 bytes.
NVUE_BYTES_PER_KB = 1000
NVUE_LOGIN_CHECK = "nv show system"
NVUE_APPLY = "nv config apply -y"
# NVUE's own default rollback window, written out: long enough for a slow apply, and what an
# operator expects from `--confirm` without a time.
NVUE_CONFIRM_WINDOW = "10m"
# `--confirm-yes` keeps a commit-confirm apply. NVIDIA's pages document `--confirm <time>` and
# `--confirm-status` but not the flag that confirms; this is the one NAPALM's Cumulus driver
# (napalm-automation-community/napalm-cumulus, confirm_commit) sends.
NVUE_CONFIRM = "nv config apply --confirm-yes"
# One gpu-lab NVUE session at a time per switch (apply and undo scripts alike); /run/lock is the
# world-writable lock directory of Debian, which Cumulus Linux is built on.
NVUE_LOCK = "/run/lock/gpu-lab-nvue.lock"
NVUE_LOCK_WAIT_SECONDS = 300


class Cumulus:
    """Cumulus Linux: bash scripts of NVUE commands.

    The apply script stages every `nv set` line in a pending revision; when `nv config diff`
    shows nothing to change it drops the revision and stops, else it applies with commit-confirm
    (`nv config apply --confirm <time>`: NVUE rolls the change back by itself unless it is
    confirmed in time; NVIDIA Cumulus Linux user guide, "NVUE CLI", configuration management
    commands) and confirms once the same SSH session still gets an answer from NVUE. A change that
    cuts the session off is never confirmed, so it rolls back. Any failing command drops the
    pending revision and names the switch (ERR trap). Every gpu-lab session takes one lock on the
    switch first, so two NVUE changes of gpu-lab never overlap. The anchor item is RoCE mode.
    """

    os = "cumulus"
    # swp<N>[s<M>] for breakout ports.
    port_pattern = re.compile(r"^swp\d{1,3}(s\d)?$")
    port_example = "swp<N>[s<M>], e.g. swp1 or swp3s1"
    login_check = NVUE_LOGIN_CHECK

    def items(self, sw: SwitchPlan) -> list[Item]:
        roce = sw.roce
        lossless = roce.lossless
        tc, prio = roce.traffic_class, roce.pfc_priority
        cc = f"qos congestion-control default-global traffic-class {tc}"
        pfc = "qos pfc default-global"
        items = [
            # RoCE mode lays down NVIDIA's defaults (pools, ETS, CNP queue) that the items below tune.
            Item("roce-mode", (f"nv set qos roce mode {roce.pfc_mode}",), ("nv unset qos roce",)),
            Item("trust", (f"nv set qos mapping default-global trust {'l3' if roce.trust == 'dscp' else 'l2'}",),
                 ("nv unset qos mapping default-global trust",)),
            Item(f"egress-priority-{prio}",
                 (f"nv set qos egress-queue-mapping default-global switch-priority {prio} traffic-class {tc}",),
                 (f"nv unset qos egress-queue-mapping default-global switch-priority {prio}",)),
            Item(f"ecn-tc{tc}", (f"nv set {cc} ecn enable",
                                 f"nv set {cc} min-threshold {roce.ecn_min_kb * NVUE_BYTES_PER_KB}",
                                 f"nv set {cc} max-threshold {roce.ecn_max_kb * NVUE_BYTES_PER_KB}"),
                 (f"nv unset {cc}",)),
        ]
        if lossless:
            items += [
                Item("pfc", (f"nv set {pfc} tx enable", f"nv set {pfc} rx enable"),
                     (f"nv unset {pfc} tx", f"nv unset {pfc} rx")),
                Item(f"pfc-priority-{prio}", (f"nv set {pfc} switch-priority {prio}",),
                     (f"nv unset {pfc} switch-priority {prio}",)),
            ]
        vlans_seen: set[int] = set()
        for port, vlan in _ports_in_order(sw):
            if vlan is not None and vlan not in vlans_seen:
                vlans_seen.add(vlan)
                items.append(Item(f"vlan-{vlan}", (f"nv set bridge domain {CUMULUS_BRIDGE} vlan {vlan}",),
                                  (f"nv unset bridge domain {CUMULUS_BRIDGE} vlan {vlan}",)))
            at = f"port-{port_slug(port)}"
            items.append(Item(f"{at}-mtu", (f"link mtu {roce.mtu}",), ("link mtu",), port))
            if vlan is not None:
                items.append(Item(f"{at}-access-vlan", (f"bridge domain {CUMULUS_BRIDGE} access {vlan}",),
                                  (f"bridge domain {CUMULUS_BRIDGE}",), port))
        return items

    def port_ranges(self, ports: list[str]) -> list[str]:
        return [nvue_port_list(ports)]

    def port_line(self, ports: str, line: str, *, apply: bool) -> str:
        return f"nv {'set' if apply else 'unset'} interface {ports} {line}"

    def apply_script(self, sw: SwitchPlan, body: list[str]) -> list[str]:
        return [*self._prologue(sw, "RoCE configuration"), *body, *self._commit(sw)]

    def undo_script(self, sw: SwitchPlan, item: Item, body: list[str]) -> list[str]:
        return [*self._prologue(sw, f"undo of {item.key}"), *body, NVUE_APPLY]

    @staticmethod
    def _prologue(sw: SwitchPlan, what: str) -> list[str]:
        # ERR trap: name the switch and the command, and drop the half-staged revision so a later
        # `nv config apply` cannot push part of it. shellcheck misreads `rc`, set inside the trap
        # string, as never assigned (koalaman/shellcheck#1299), hence the directive. Pending changes
        # someone else staged as this user are detached first (NVUE keeps them as a numbered
        # revision), so they are neither applied nor counted as a change here.
        return [
            f"# gpu-lab: {what} of switch {sw.name} (Cumulus Linux, NVUE); generated, do not edit.",
            "set -eu",
            f"exec 9>{NVUE_LOCK}",
            f"flock -w {NVUE_LOCK_WAIT_SECONDS} 9",
            "# shellcheck disable=SC2154  # rc is assigned inside the trap",
            f"trap 'rc=$?; echo \"gpu-lab: switch {sw.name}: {what} failed (exit $rc) at: $BASH_COMMAND; "
            "pending NVUE changes dropped\" >&2; nv config detach >&2 || true; exit $rc' ERR",
            "nv config detach >/dev/null || true",
        ]

    @staticmethod
    def _commit(sw: SwitchPlan) -> list[str]:
        """Apply what is staged only if it changes something, with automatic rollback until confirmed."""
        return [
            "changes=$(nv config diff -o commands)",
            "if ! printf '%s\\n' \"$changes\" | grep -Eq '^nv (set|unset) '; then",
            f"    echo \"gpu-lab: switch {sw.name}: already configured, nothing applied\"",
            "    nv config detach",
            "    exit 0",
            "fi",
            f"nv config apply --confirm {NVUE_CONFIRM_WINDOW} -y",
            # Still connected and NVUE still answers: keep the change. A session the change cut off
            # never gets here, and NVUE rolls back when the window closes.
            f"{NVUE_LOGIN_CHECK} >/dev/null",
            NVUE_CONFIRM,
        ]


DIALECTS: dict[str, Dialect] = {"onyx": Onyx(), "cumulus": Cumulus()}
"""The one place a switch's OS picks its dialect."""


def dialect(sw: SwitchPlan) -> Dialect:
    return DIALECTS[sw.os]
