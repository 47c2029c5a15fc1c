"""The hosts' half of the RoCE fabric: the ConnectX settings that match the switches.

A switch protects (PFC) and marks (ECN) one priority; the hosts' NICs must send RoCE on that
priority and classify it the same way (trust DSCP or PCP), or the switch's lossless queue
carries nothing. ESXi hosts get the nmlx5_core module options (applied by the vSphere fabric
component); bare-metal Linux nodes get a shell script built on mlnx_qos and cma_roce_tos from
MLNX_OFED / DOCA-OFED. Both are pure functions of the same few values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from components import shell_templates
from labrules.roce import PFC_PRIORITY_MAX, PFC_PRIORITY_MIN, pfc_priority_valid

Trust = Literal["dscp", "pcp"]

# nmlx5_core's trust_state values: 1 trusts the 802.1p PCP bits, 2 trusts the DSCP field.
_NMLX5_TRUST = {"pcp": 1, "dscp": 2}


def pfc_bitmask(pfc_priority: int) -> int:
    """One bit per 802.1p priority, set for the priority PFC protects (3 -> 0x08)."""
    if not pfc_priority_valid(pfc_priority):
        raise ValueError(f"PFC priority {pfc_priority} is outside {PFC_PRIORITY_MIN}-{PFC_PRIORITY_MAX}")
    return 1 << pfc_priority


def nmlx5_module_options(pfc_priority: int, trust: Trust, lossless: bool = True) -> str:
    """nmlx5_core module parameters for an ESXi host's ConnectX ports.

    pfctx/pfcrx are bitmasks of the priorities with PFC on transmit/receive; a lossy (ECN-only)
    fabric sends no pause frames, so both stay 0 while trust_state still classifies RoCE.
    """
    if trust not in _NMLX5_TRUST:
        raise ValueError(f"trust {trust!r} is not one of {sorted(_NMLX5_TRUST)}")
    mask = pfc_bitmask(pfc_priority) if lossless else 0
    return f"pfctx=0x{mask:02x} pfcrx=0x{mask:02x} trust_state={_NMLX5_TRUST[trust]}"


def mlnx_qos_pfc_list(pfc_priority: int, lossless: bool = True) -> str:
    """mlnx_qos --pfc takes eight comma-separated 0/1 flags, priority 0 first."""
    mask = pfc_bitmask(pfc_priority) if lossless else 0
    return ",".join("1" if mask >> p & 1 else "0" for p in range(8))


def roce_tos(pfc_priority: int) -> int:
    """IP ToS byte for RoCE traffic: DSCP 8*p+2 (26 for priority 3) with ECT(0) set.

    The default DSCP->priority map on ConnectX and Spectrum is dscp >> 3, so this DSCP lands on
    the PFC priority; ECT(0) tells switches the flow understands ECN marks.
    """
    pfc_bitmask(pfc_priority)  # validates the range
    dscp = 8 * pfc_priority + 2
    return dscp << 2 | 0b10


def render_baremetal_script(
    pfc_priority: int,
    trust: Trust,
    mtu: int,
    lossless: bool,
    interfaces: Sequence[str],
    switches: Sequence[str],
) -> str:
    """Shell script that sets a bare-metal node's RoCE ports to match the switches.

    The script (scripts/hosts-baremetal.sh) takes the interfaces as arguments, defaulting to the
    rails' host interfaces from the config.
    """
    mode = "lossless (PFC + ECN)" if lossless else "lossy (ECN only)"
    matches = f"Matches switch(es) {', '.join(switches)}: {mode}, priority {pfc_priority}, trust {trust}, MTU {mtu}."
    return shell_templates.render("components.roce", "hosts-baremetal.sh", {
        "PFC": mlnx_qos_pfc_list(pfc_priority, lossless),
        "TRUST": trust,
        "MTU": mtu,
        "TOS": roce_tos(pfc_priority),
        "DEFAULT_INTERFACES": " ".join(interfaces),
    }, comments=[matches])
