"""The facts of one switch that its component, its scripts and `make render` read.

Computed once from the validated section (switch_plan): every rail with its VLAN decided, and
the hosts' side of RoCE the switch must match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from components.facts import HostRoce, VsphereFacts
from components.switch.model import SwitchConfig, SwitchPorts
from labrules.vsphere import RDMA_MTU

FIRST_RAIL_VLAN = 111


@dataclass(frozen=True)
class RailPlan:
    vlan: int
    """The rail's access VLAN: the configured one, else the guide's 111, 112, ... by position."""
    subnet: str
    ports: tuple[str, ...]
    host_interface: str | None


@dataclass(frozen=True)
class RoceQos:
    """The switch's RoCE QoS, as configured (defaults are the guide's)."""

    traffic_class: int
    ecn_min_kb: int
    ecn_max_kb: int
    pfc_mode: Literal["lossless", "lossy"]
    pfc_priority: int
    trust: Literal["dscp", "pcp"]
    mtu: int
    buffer_kb: int

    @property
    def lossless(self) -> bool:
        return self.pfc_mode == "lossless"


@dataclass(frozen=True)
class SwitchPlan:
    """One switch as its component and scripts see it."""

    name: str
    os: Literal["onyx", "cumulus"]
    management_address: str
    user: str
    ssh_port: int
    host_key: str | None
    connect_timeout_seconds: int
    connect_attempts: int
    host_ports: tuple[str, ...]
    """Ports facing hosts on the switch's existing VLAN, in config order."""
    rails: tuple[RailPlan, ...]
    roce: RoceQos
    hosts: HostRoce
    """The hosts' PFC priority, trust and MTU the switch must match (host_side)."""

    @property
    def rail_vlans(self) -> list[int]:
        return [rail.vlan for rail in self.rails]

    @property
    def roce_ports(self) -> list[str]:
        """Every port that carries RoCE (hosts first, then each rail's), in config order."""
        return list(self.host_ports) + [p for r in self.rails for p in r.ports]


def rail_vlans(ports: SwitchPorts) -> list[int]:
    """Each rail's VLAN, the guide's 111, 112, ... where none is given."""
    return [r.vlan if r.vlan is not None else FIRST_RAIL_VLAN + i for i, r in enumerate(ports.rails)]


def host_side(vsphere: VsphereFacts | None, pfc_priority: int, trust: str) -> HostRoce:
    """The ESXi hosts' settings when the lab has vSphere; otherwise the bare-metal script's.

    hosts-baremetal.sh follows the switches' priority and trust, so only its MTU can disagree: a
    bare-metal node's RoCE ports get the RDG's MTU (labrules.vsphere.RDMA_MTU).
    """
    if vsphere is not None:
        return vsphere.roce
    return HostRoce(pfc_priority, trust, RDMA_MTU, "(hosts-baremetal.sh)",
                    "(hosts-baremetal.sh)", "(hosts-baremetal.sh: labrules.vsphere.RDMA_MTU)")


def switch_plan(sw: SwitchConfig, vsphere: VsphereFacts | None) -> SwitchPlan:
    """The facts of a validated switch, with the hosts' side of the lab it is in."""
    roce = sw.roce
    return SwitchPlan(
        name=sw.name,
        os=sw.os,
        management_address=str(sw.management_address),
        user=sw.user,
        ssh_port=sw.ssh_port,
        host_key=sw.host_key,
        connect_timeout_seconds=sw.connect_timeout_seconds,
        connect_attempts=sw.connect_attempts,
        host_ports=tuple(sw.ports.hosts),
        rails=tuple(RailPlan(vlan, rail.subnet, tuple(rail.ports), rail.host_interface)
                    for rail, vlan in zip(sw.ports.rails, rail_vlans(sw.ports), strict=True)),
        roce=RoceQos(roce.traffic_class, roce.ecn_min_kb, roce.ecn_max_kb, roce.pfc_mode, roce.pfc_priority,
                     roce.trust, roce.mtu, roce.buffer_kb),
        hosts=host_side(vsphere, roce.pfc_priority, roce.trust),
    )
