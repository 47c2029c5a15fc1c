"""Switch configuration text: the apply script, the undo items, and the bare-metal hosts' script.

A switch's RoCE configuration is a list of *undo items*. An item has a stable key, the lines that
set one thing, and the lines that undo exactly that thing, so undoing one item never touches a
setting of another. The key holds what the undo lines name, and nothing else:

- per-port settings are one item per port (`port-1-2-mtu`, `port-swp3-mtu`), never per range;
- ECN is one item per traffic class (`port-1-2-ecn-tc3` on Onyx, global `ecn-tc3` on Cumulus);
- PFC is "PFC on" (`pfc`) and one "PFC on priority P" (`pfc-priority-3`);
- a rail VLAN is `vlan-111`; a port's access VLAN is `port-swp3-access-vlan`, without the VLAN,
  because its undo does not name it (a port moving to another rail keeps its item: undoing the
  old one after the move would reset the port).

A value the undo lines do not name (an MTU, ECN thresholds, the trust mode, a rail port's VLAN)
changes the apply script only. The first item of each switch is its anchor: it exists as long as
the switch is configured at all (Onyx: the saved rollback file; Cumulus: RoCE mode), which lets
the SpectrumSwitch component keep an existing Command's identity on it.

What the component sends and `make render` writes for review:

    switch/<switch>.<os>.conf     the apply script: every item's lines, per-port lines merged into port ranges
    switch/<switch>.<os>.revert   every undo script, in the order they run when the switch leaves the stack
    switch/hosts-baremetal.sh     the bare-metal nodes' half (mlnx_qos), see components/roce/host.py

Onyx: CLI commands for the switch's own shell, one per line, each self-contained (`interface
ethernet 1/1-1/4 <setting>`), between `enable`/`configure terminal` and `configuration write`. Every
line sets an absolute value, so the apply script run twice leaves the same configuration. Before
changing anything it saves the running configuration to the file `gpu-lab-before-apply` without
making it the active one (`configuration write to <file> no-switch`, NVIDIA Onyx / MLNX-OS User
Manual, "Configuration Management"); `configuration switch-to gpu-lab-before-apply` loads it back.
The Onyx CLI runs what it is sent line by line and has no conditionals, so it cannot restore that
file by itself when a later line fails: that is the operator's one command (docs/day2.md).

Cumulus Linux: bash scripts of NVUE commands. The apply script stages every `nv set` line in a
pending revision; when `nv config diff` shows nothing to change it drops the revision and stops,
else it applies with commit-confirm (`nv config apply --confirm <time>`: NVUE rolls the change
back by itself unless it is confirmed in time; NVIDIA Cumulus Linux user guide, "NVUE CLI",
configuration management commands) and confirms once the same SSH session still gets an answer
from NVUE. A change that cuts the session off is never confirmed, so it rolls back. Any failing
command drops the pending revision and names the switch (ERR trap). Every gpu-lab session takes
one lock on the switch first, so two NVUE changes of gpu-lab never overlap.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from components.facts import HostRoce
from components.roce.host import render_baremetal_script
from components.switch.config import SwitchConfig

CUMULUS_BRIDGE = "br_default"
# NVUE takes ECN thresholds in bytes; NVIDIA states its RoCE default "150 KB" as 150000 bytes.
NVUE_BYTES_PER_KB = 1000

ONYX_PROLOGUE = ("enable", "configure terminal")
ONYX_EPILOGUE = ("configuration write",)
# Where the Onyx apply saves the running configuration before it changes anything.
ONYX_ROLLBACK_FILE = "gpu-lab-before-apply"
# Read-only commands that prove a login works (the apply Command's `update`).
ONYX_LOGIN_CHECK = "show version"
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


@dataclass(frozen=True)
class Item:
    """One undo item: the lines that set one thing, and the lines that undo exactly that thing.

    A port item's lines are the interface's settings; the renderer puts the interface in front.
    """

    key: str
    apply: tuple[str, ...]
    revert: tuple[str, ...]
    port: str | None = None


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


def _ports_in_order(sw: SwitchConfig) -> list[tuple[str, int | None]]:
    """(port, rail VLAN or None) for the host ports, then each rail's: sorted within each group."""
    ports: list[tuple[str, int | None]] = [(p, None) for p in _sorted_ports(sw.ports.hosts)]
    for rail, vlan in zip(sw.ports.rails, sw.rail_vlans(), strict=True):
        ports += [(p, vlan) for p in _sorted_ports(rail.ports)]
    return ports


# ---------------------------------------------------------------- Onyx


def onyx_items(sw: SwitchConfig) -> list[Item]:
    roce = sw.roce
    lossless = roce.pfc_mode == "lossless"
    trust = "L3" if roce.trust == "dscp" else "L2"
    tc, prio = roce.traffic_class, roce.pfc_priority
    items = [Item("saved-config", (f"configuration write to {ONYX_ROLLBACK_FILE} no-switch",),
                  (f"configuration delete {ONYX_ROLLBACK_FILE}",))]
    if lossless:
        items += [
            Item("pfc", ("dcb priority-flow-control enable force",), ("no dcb priority-flow-control enable force",)),
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


# ---------------------------------------------------------------- Cumulus NVUE


def cumulus_items(sw: SwitchConfig) -> list[Item]:
    roce = sw.roce
    lossless = roce.pfc_mode == "lossless"
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


def _cumulus_prologue(sw: SwitchConfig, what: str) -> list[str]:
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


def _cumulus_commit(sw: SwitchConfig) -> list[str]:
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


# ---------------------------------------------------------------- scripts


def undo_items(sw: SwitchConfig) -> list[Item]:
    """The switch's undo items in apply order; the first is the anchor (see the module doc)."""
    items = onyx_items(sw) if sw.os == "onyx" else cumulus_items(sw)
    keys = [item.key for item in items]
    assert len(set(keys)) == len(keys), f"duplicate undo item keys: {keys}"
    return items


def _port_line(sw: SwitchConfig, ports: str, line: str, *, apply: bool) -> str:
    if sw.os == "onyx":
        return f"interface ethernet {ports} {line}"
    return f"nv {'set' if apply else 'unset'} interface {ports} {line}"


def apply_lines(sw: SwitchConfig) -> list[str]:
    """Every item's apply lines in item order; port items with the same lines share one line per
    port range, placed where the first of them stands."""
    entries: list[tuple[tuple[str, ...], list[str] | None]] = []  # (lines, the ports of a port group)
    groups: dict[tuple[str, ...], list[str]] = {}
    for item in undo_items(sw):
        if item.port is None:
            entries.append((item.apply, None))
        elif item.apply in groups:
            groups[item.apply].append(item.port)
        else:
            groups[item.apply] = [item.port]
            entries.append((item.apply, groups[item.apply]))
    lines: list[str] = []
    for setting, ports in entries:
        if ports is None:
            lines += setting
        else:
            ranges = onyx_port_ranges(ports) if sw.os == "onyx" else [nvue_port_list(ports)]
            lines += [_port_line(sw, spec, line, apply=True) for spec in ranges for line in setting]
    return lines


def render_apply(sw: SwitchConfig) -> str:
    """The script that configures the switch for RoCE, whatever it held before (idempotent)."""
    body = apply_lines(sw)
    if sw.os == "onyx":
        lines = [*ONYX_PROLOGUE, *body, *ONYX_EPILOGUE]
    else:
        lines = [*_cumulus_prologue(sw, "RoCE configuration"), *body, *_cumulus_commit(sw)]
    return "\n".join(lines) + "\n"


def render_undo(sw: SwitchConfig, item: Item) -> str:
    """The script that undoes exactly `item` (its undo Command's `delete`)."""
    if item.port is None:
        body = list(item.revert)
    else:
        body = [_port_line(sw, item.port, line, apply=False) for line in item.revert]
    if sw.os == "onyx":
        lines = [*ONYX_PROLOGUE, *body, *ONYX_EPILOGUE]
    else:
        lines = [*_cumulus_prologue(sw, f"undo of {item.key}"), *body, NVUE_APPLY]
    return "\n".join(lines) + "\n"


def render_login_check(sw: SwitchConfig) -> str:
    """A read-only command that proves the connection's credentials work (changes nothing)."""
    return (ONYX_LOGIN_CHECK if sw.os == "onyx" else NVUE_LOGIN_CHECK) + "\n"


def render_revert(sw: SwitchConfig) -> str:
    """For review: every undo script, newest item first, as they run when the switch leaves the stack."""
    parts = [f"# ---- undo item {item.key}\n{render_undo(sw, item)}" for item in reversed(undo_items(sw))]
    return "\n".join(parts)


def apply_digest(sw: SwitchConfig) -> str:
    """sha256 of the apply script: the apply Command is replaced (runs again) exactly when it changes."""
    return hashlib.sha256(render_apply(sw).encode()).hexdigest()


def render_baremetal_hosts(switches: list[SwitchConfig], hosts: HostRoce) -> str:
    """hosts-baremetal.sh for the lab's switches (the rules make them agree on QoS); hosts: the
    hosts' side as the first switch sees it (host_side), for its MTU."""
    first = switches[0]
    interfaces: list[str] = []
    for sw in switches:
        for rail in sw.ports.rails:
            if rail.host_interface and rail.host_interface not in interfaces:
                interfaces.append(rail.host_interface)
    return render_baremetal_script(
        pfc_priority=first.roce.pfc_priority,
        trust=first.roce.trust,
        mtu=hosts.mtu,
        lossless=first.roce.pfc_mode == "lossless",
        interfaces=interfaces,
        switches=[sw.name for sw in switches],
    )
