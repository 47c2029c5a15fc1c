"""Switch configuration text: the apply script, its revert script, and the bare-metal hosts' script.

Each switch's configuration is a list of steps; a step pairs the lines that set something with
the lines that undo it. The apply script runs the steps in order and the revert script undoes
them in reverse, so every setting applied has its undo by construction. Both are exactly what
the SpectrumSwitch component sends over SSH and what `make render` writes for review:

    switch/<switch>.<os>.conf     apply script
    switch/<switch>.<os>.revert   revert script
    switch/hosts-baremetal.sh     the bare-metal nodes' half (mlnx_qos), see components/roce/host.py

Onyx: CLI commands for the switch's own shell, one per line, each self-contained (`interface
ethernet 1/1-1/4 <setting>`), between `enable`/`configure terminal` and `configuration write`.
Cumulus Linux: a bash script of NVUE `nv set`/`nv unset` commands staged in a pending revision
and applied at the end with `nv config apply -y`; a failing command drops the pending revision
and names the switch.
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
NVUE_APPLY = "nv config apply -y"


@dataclass(frozen=True)
class Step:
    """Lines that set one thing, and the lines that put it back."""

    apply: tuple[str, ...]
    revert: tuple[str, ...]


# ---------------------------------------------------------------- port lists


def _port_key(port: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", port))


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

    for port in sorted(set(ports), key=_port_key):
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


# ---------------------------------------------------------------- Onyx


def onyx_steps(sw: SwitchConfig) -> list[Step]:
    roce = sw.roce
    lossless = roce.pfc_mode == "lossless"
    trust = "L3" if roce.trust == "dscp" else "L2"
    tc, prio = roce.traffic_class, roce.pfc_priority
    steps: list[Step] = []
    if lossless:
        steps.append(Step(
            ("dcb priority-flow-control enable force", f"dcb priority-flow-control priority {prio} enable"),
            (f"no dcb priority-flow-control priority {prio} enable", "no dcb priority-flow-control enable force"),
        ))
    for ports in onyx_port_ranges(sw.roce_ports()):
        eth = f"interface ethernet {ports}"
        steps += [
            Step((f"{eth} mtu {roce.mtu} force",), (f"{eth} no mtu",)),
            Step((f"{eth} qos trust {trust}",), (f"{eth} no qos trust",)),
            # The guide's line, with the configured numbers.
            Step((f"{eth} traffic-class {tc} congestion-control ecn minimum-absolute {roce.ecn_min_kb} "
                  f"maximum-absolute {roce.ecn_max_kb}",),
                 (f"{eth} no traffic-class {tc} congestion-control",)),
        ]
        if lossless:
            steps.append(Step((f"{eth} dcb priority-flow-control mode on force",),
                              (f"{eth} no dcb priority-flow-control mode force",)))
    for rail, vlan in zip(sw.ports.rails, sw.rail_vlans(), strict=True):
        steps.append(Step((f"vlan {vlan}", "exit"), (f"no vlan {vlan}",)))
        for ports in onyx_port_ranges(rail.ports):
            eth = f"interface ethernet {ports}"
            # Access is Onyx's default mode: nothing to undo but the VLAN.
            steps.append(Step((f"{eth} switchport mode access", f"{eth} switchport access vlan {vlan}"),
                              (f"{eth} no switchport access vlan",)))
    return steps


# ---------------------------------------------------------------- Cumulus NVUE


def cumulus_steps(sw: SwitchConfig) -> list[Step]:
    roce = sw.roce
    lossless = roce.pfc_mode == "lossless"
    tc, prio = roce.traffic_class, roce.pfc_priority
    cc = f"qos congestion-control default-global traffic-class {tc}"
    pfc = "qos pfc default-global"
    steps = [
        # RoCE mode first: it lays down NVIDIA's defaults (pools, ETS, CNP queue) that the lines below tune.
        Step((f"nv set qos roce mode {roce.pfc_mode}",), ("nv unset qos roce",)),
        Step((f"nv set qos mapping default-global trust {'l3' if roce.trust == 'dscp' else 'l2'}",),
             ("nv unset qos mapping default-global trust",)),
        Step((f"nv set qos egress-queue-mapping default-global switch-priority {prio} traffic-class {tc}",),
             (f"nv unset qos egress-queue-mapping default-global switch-priority {prio}",)),
        Step((f"nv set {cc} ecn enable",
              f"nv set {cc} min-threshold {roce.ecn_min_kb * NVUE_BYTES_PER_KB}",
              f"nv set {cc} max-threshold {roce.ecn_max_kb * NVUE_BYTES_PER_KB}"),
             (f"nv unset {cc}",)),
    ]
    if lossless:
        steps.append(Step((f"nv set {pfc} switch-priority {prio}", f"nv set {pfc} tx enable",
                           f"nv set {pfc} rx enable"),
                          (f"nv unset {pfc} switch-priority {prio}", f"nv unset {pfc} tx", f"nv unset {pfc} rx")))
    ports = nvue_port_list(sw.roce_ports())
    if ports:
        steps.append(Step((f"nv set interface {ports} link mtu {roce.mtu}",),
                          (f"nv unset interface {ports} link mtu",)))
    for rail, vlan in zip(sw.ports.rails, sw.rail_vlans(), strict=True):
        members = nvue_port_list(rail.ports)
        steps += [
            Step((f"nv set bridge domain {CUMULUS_BRIDGE} vlan {vlan}",),
                 (f"nv unset bridge domain {CUMULUS_BRIDGE} vlan {vlan}",)),
            Step((f"nv set interface {members} bridge domain {CUMULUS_BRIDGE} access {vlan}",),
                 (f"nv unset interface {members} bridge domain {CUMULUS_BRIDGE}",)),
        ]
    return steps


def _cumulus_prologue(sw: SwitchConfig, what: str) -> list[str]:
    # ERR trap: name the switch and the command, and drop the half-staged revision so a later
    # `nv config apply` cannot push part of it. shellcheck misreads `rc`, set inside the trap
    # string, as never assigned (koalaman/shellcheck#1299), hence the directive.
    return [
        f"# gpu-lab: {what} of switch {sw.name} (Cumulus Linux, NVUE); generated, do not edit.",
        "set -eu",
        "# shellcheck disable=SC2154  # rc is assigned inside the trap",
        f"trap 'rc=$?; echo \"gpu-lab: switch {sw.name}: {what} failed (exit $rc) at: $BASH_COMMAND; "
        "pending NVUE changes dropped\" >&2; nv config detach >&2 || true; exit $rc' ERR",
    ]


# ---------------------------------------------------------------- scripts


def steps_for(sw: SwitchConfig) -> list[Step]:
    return onyx_steps(sw) if sw.os == "onyx" else cumulus_steps(sw)


def render_apply(sw: SwitchConfig) -> str:
    """The script that configures the switch for RoCE."""
    return _switch_script(sw, "RoCE configuration", [line for step in steps_for(sw) for line in step.apply])


def render_revert(sw: SwitchConfig) -> str:
    """The script that takes back everything render_apply set, newest first."""
    return _switch_script(sw, "RoCE revert", [line for step in reversed(steps_for(sw)) for line in step.revert])


def _switch_script(sw: SwitchConfig, title: str, body: list[str]) -> str:
    """`body` between the switch OS's prologue and its closing lines (title: Cumulus's comment)."""
    if sw.os == "onyx":
        lines = [*ONYX_PROLOGUE, *body, *ONYX_EPILOGUE]
    else:
        lines = [*_cumulus_prologue(sw, title), *body, NVUE_APPLY]
    return "\n".join(lines) + "\n"


def config_digest(sw: SwitchConfig) -> str:
    """sha256 of both scripts: the Command is replaced exactly when either changes."""
    text = render_apply(sw) + "\0" + render_revert(sw)
    return hashlib.sha256(text.encode()).hexdigest()


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
