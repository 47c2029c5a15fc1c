"""Switch configuration text: the apply script, the undo items' scripts, the bare-metal hosts' script.

A switch's RoCE configuration is a list of undo items (dialects.Item): each sets one thing and
knows how to undo exactly that, so undoing one item never touches another's setting. A value the
undo lines do not name (an MTU, ECN thresholds, the trust mode, a rail port's VLAN) changes the
apply script only. The first item is the switch's anchor: it exists as long as the switch is
configured at all, which lets SpectrumSwitch keep an existing Command's identity on it. The
switch's OS (dialects.py) decides every line; this module assembles them the same way for all.

`make render` writes switch/<switch>.<os>.conf (the apply script, per-port lines merged into port
ranges), switch/<switch>.<os>.revert (every undo script, in the order they run when the switch
leaves the stack) and switch/hosts-baremetal.sh (components/roce/host.py).
"""

from __future__ import annotations

import hashlib

from components.roce.host import render_baremetal_script
from components.switch.dialects import Item, dialect
from components.switch.plan import SwitchPlan


def undo_items(sw: SwitchPlan) -> list[Item]:
    """The switch's undo items in apply order; the first is the anchor (see the module doc)."""
    items = dialect(sw).items(sw)
    keys = [item.key for item in items]
    assert len(set(keys)) == len(keys), f"duplicate undo item keys: {keys}"
    return items


def apply_lines(sw: SwitchPlan) -> list[str]:
    """Every item's apply lines in item order; port items with the same lines share one line per
    port range, placed where the first of them stands."""
    dia = dialect(sw)
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
            lines += [dia.port_line(spec, line, apply=True) for spec in dia.port_ranges(ports) for line in setting]
    return lines


def render_apply(sw: SwitchPlan) -> str:
    """The script that configures the switch for RoCE, whatever it held before (idempotent)."""
    return "\n".join(dialect(sw).apply_script(sw, apply_lines(sw))) + "\n"


def render_undo(sw: SwitchPlan, item: Item) -> str:
    """The script that undoes exactly `item` (its undo Command's `delete`)."""
    dia = dialect(sw)
    if item.port is None:
        body = list(item.revert)
    else:
        body = [dia.port_line(item.port, line, apply=False) for line in item.revert]
    return "\n".join(dia.undo_script(sw, item, body)) + "\n"


def render_login_check(sw: SwitchPlan) -> str:
    """A read-only command that proves the connection's credentials work (changes nothing)."""
    return dialect(sw).login_check + "\n"


def render_revert(sw: SwitchPlan) -> str:
    """For review: every undo script, newest item first, as they run when the switch leaves the stack."""
    parts = [f"# ---- undo item {item.key}\n{render_undo(sw, item)}" for item in reversed(undo_items(sw))]
    return "\n".join(parts)


def apply_digest(sw: SwitchPlan) -> str:
    """sha256 of the apply script: the apply Command is replaced (runs again) exactly when it changes."""
    return hashlib.sha256(render_apply(sw).encode()).hexdigest()


def render_baremetal_hosts(switches: list[SwitchPlan]) -> str:
    """hosts-baremetal.sh for the lab's switches (the rules make them agree on QoS), with the MTU of
    the hosts' side as the first switch sees it."""
    first = switches[0]
    interfaces: list[str] = []
    for sw in switches:
        for rail in sw.rails:
            if rail.host_interface and rail.host_interface not in interfaces:
                interfaces.append(rail.host_interface)
    return render_baremetal_script(
        pfc_priority=first.roce.pfc_priority,
        trust=first.roce.trust,
        mtu=first.hosts.mtu,
        lossless=first.roce.lossless,
        interfaces=interfaces,
        switches=[sw.name for sw in switches],
    )
