"""Spectrum switch rules: ECN thresholds and the QoS settings the hosts share with the switch."""

from __future__ import annotations

from labrules.roce import (
    DEFAULT_ECN_MAX_KB,
    DEFAULT_ECN_MIN_KB,
    ECN_MIN_KB_FLOOR,
    ecn_thresholds_ordered,
    ecn_thresholds_positive,
)

from .declare import MANDATORY, resource_policy, stack_policy
from .props import (
    ROCE_FABRIC,
    SPECTRUM,
    UNKNOWN,
    as_int,
    known,
    of_type,
    props_of,
    reveal,
    stack_resources,
)


def _switch_name(props: dict, fallback: str) -> str:
    name = reveal(props.get("switchName"))
    return name if known(name) else fallback


# ---------------------------------------------------------------- ECN


def check_ecn_min_below_max(args, report_violation) -> None:
    """The switch's ECN minimum threshold is below its maximum. DeepOps RoCE guide configures
    ECN on the RoCE ports with minimum-absolute 150 and maximum-absolute 1500 KB; marking must ramp up
    between the two, so a minimum at or above the maximum breaks congestion control."""
    if args.resource_type != SPECTRUM:
        return
    p = props_of(args)
    low, high = as_int(p.get("ecnMinKb")), as_int(p.get("ecnMaxKb"))
    if low is UNKNOWN or high is UNKNOWN or low is None or high is None:
        return
    name = _switch_name(p, args.name)
    if not ecn_thresholds_positive(low, high):
        report_violation(f"switch {name!r} has ECN thresholds {low}/{high} KB; both must be at least "
                         f"{ECN_MIN_KB_FLOOR} KB")
    elif not ecn_thresholds_ordered(low, high):
        report_violation(
            f"switch {name!r} starts ECN marking at {low} KB but its maximum is {high} KB; the minimum must be "
            f"below the maximum (the guide uses {DEFAULT_ECN_MIN_KB} / {DEFAULT_ECN_MAX_KB})"
        )


ecn_min_below_max = resource_policy("spectrum-ecn-min-below-max", MANDATORY, check_ecn_min_below_max,
                                    types=(SPECTRUM,))


# ---------------------------------------------------------------- PFC priority / trust vs hosts


def _host_values(resources, switch, switch_key: str | None, fabric_key: str) -> list[tuple]:
    """(value, where) pairs the hosts use: every RoCE fabric's setting, plus the switch's own copy."""
    out = []
    for fabric in of_type(resources, ROCE_FABRIC):
        v = fabric.get(fabric_key)
        if known(v):
            out.append((v, f"fabric {fabric.name!r} {fabric_key}"))
    if switch_key is not None:
        v = switch.get(switch_key)
        if known(v) and all(v != seen for seen, _ in out):
            out.append((v, f"its {switch_key}"))
    return out


def check_pfc_priority(args, report_violation) -> None:
    """The switch's PFC / RoCE priority equals the priority the hosts' ConnectX ports send RoCE on. DeepOps
    RoCE guide: RoCE relies on the switch's PFC and ECN handling for its traffic class; if
    the priorities differ, RoCE lands in a lossy queue and stalls under load."""
    resources = stack_resources(args)
    for sw in of_type(resources, SPECTRUM):
        mine = as_int(sw.get("pfcPriority"))
        if not isinstance(mine, int):
            continue
        for value, where in _host_values(resources, sw, "hostPfcPriority", "pfcPriority"):
            theirs = as_int(value)
            if isinstance(theirs, int) and theirs != mine:
                report_violation(
                    f"switch {_switch_name(sw.props, sw.name)!r} runs PFC on priority {mine} but the hosts send "
                    f"RoCE on priority {theirs} ({where}); make them equal",
                    sw.urn,
                )


pfc_priority = stack_policy("spectrum-pfc-priority-matches-hosts", MANDATORY, check_pfc_priority)


def check_trust(args, report_violation) -> None:
    """The switch classifies RoCE traffic by the same QoS field (DSCP or PCP) the hosts mark it with. DeepOps
    RoCE guide: PFC and ECN act on RoCE's traffic class; a switch trusting a field the hosts
    do not set puts RoCE in the default class."""
    resources = stack_resources(args)
    for sw in of_type(resources, SPECTRUM):
        mine = sw.get("trust")
        if not known(mine):
            continue
        for value, where in _host_values(resources, sw, None, "trust"):
            if str(value).lower() != str(mine).lower():
                report_violation(
                    f"switch {_switch_name(sw.props, sw.name)!r} trusts {mine} but the hosts mark RoCE by {value} "
                    f"({where}); use the same trust mode on both",
                    sw.urn,
                )


trust_matches = stack_policy("spectrum-trust-matches-hosts", MANDATORY, check_trust)


POLICIES = [ecn_min_below_max, pfc_priority, trust_matches]
