"""The `switches` configuration section: NVIDIA Spectrum switches configured for RoCE.

Defaults are the DeepOps RoCE guide's on the RDG lab's SN2700:
ECN on traffic class 3 with absolute thresholds 150 KB / 1500 KB, DSCP trust, jumbo MTU. The
guide's switch runs ECN only ("lossy"); here PFC on priority 3 (lossless) is the default because
the lab's hosts enable PFC on that priority, and `pfcMode: lossy` gives the guide's exact setup.
Multi-rail designs put each host NIC on its own rail: one VLAN (111, 112, ... as in the guide)
and one subnet per rail, no LACP.

MTU rule: Onyx and Cumulus both count the interface MTU without the Ethernet header (like
Linux and ESXi), so the switch MTU must be at least the hosts' MTU; 9216 leaves room for any
host MTU up to 9216.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal

from pydantic import Field

from components.facts import HostRoce, VsphereFacts
from components.model import Cidr, HostName, IPv4, Model, Problem, SshPublicKey, duplicates, matches
from labrules.commands import DIAL_ERROR_LIMIT, PER_DIAL_TIMEOUT_SECONDS
from labrules.roce import (
    DEFAULT_ECN_MAX_KB,
    DEFAULT_ECN_MIN_KB,
    DEFAULT_PFC_PRIORITY,
    DEFAULT_TRAFFIC_CLASS,
    PFC_PRIORITY_MAX,
    PFC_PRIORITY_MIN,
    SWITCH_MAX_MTU,
    ecn_thresholds_ordered,
)

# The SN2700's shared packet buffer (16 MB); the guide's QoS numbers are in labrules.roce.
SN2700_BUFFER_KB = 16 * 1024
FIRST_RAIL_VLAN = 111
# MTU a bare-metal node's RoCE ports get when no vSphere section says otherwise.
BAREMETAL_MTU = 9000

PORT_PATTERNS = {
    # Onyx: <slot>/<port>[/<subport>] as in `interface ethernet 1/1`.
    "onyx": (re.compile(r"^\d{1,2}/\d{1,2}(/\d)?$"), "<slot>/<port>[/<subport>], e.g. 1/1 or 1/3/2"),
    # Cumulus Linux: swp<N>[s<M>] for breakout ports.
    "cumulus": (re.compile(r"^swp\d{1,3}(s\d)?$"), "swp<N>[s<M>], e.g. swp1 or swp3s1"),
}

# Values end up unquoted on a switch CLI or in a shell line: keep them to safe characters.
Token = Annotated[str, matches(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$",
    "must be 1-32 letters, digits, '.', '_' or '-', starting with a letter or digit",
)]


class Rail(Model):
    """One rail of a multi-rail fabric: one VLAN, one subnet, the switch ports of its host NICs."""

    vlan: int | None = Field(
        default=None, ge=1, le=4094,
        description="access VLAN of the rail's ports; default 111 for the first rail, 112 for the second, ...",
    )
    subnet: Cidr = Field(description="the rail's IP subnet (one subnet per rail, one NIC per subnet on each host)")
    ports: list[str] = Field(min_length=1, description="switch ports facing the hosts' NICs on this rail")
    host_interface: Token | None = Field(
        default=None, description="bare-metal nodes' interface on this rail (e.g. enp5s0), for hosts-baremetal.sh"
    )


class SwitchPorts(Model):
    """Switch ports by role; a port has exactly one role."""

    hosts: list[str] = Field(
        default_factory=list,
        description="ports facing hosts' RoCE NICs on the switch's existing VLAN (RoCE QoS and MTU only)",
    )
    rails: list[Rail] = Field(default_factory=list, description="multi-rail: ports grouped per rail VLAN")


class RoceSettings(Model):
    """QoS for RoCE; defaults are the guide's."""

    traffic_class: int = Field(default=DEFAULT_TRAFFIC_CLASS, ge=PFC_PRIORITY_MIN, le=PFC_PRIORITY_MAX,
                               description="egress traffic class (queue) that carries RoCE and gets ECN marking")
    ecn_min_kb: int = Field(default=DEFAULT_ECN_MIN_KB, ge=1,
                            description="queue depth (KB) where ECN marking starts")
    ecn_max_kb: int = Field(default=DEFAULT_ECN_MAX_KB, ge=1,
                            description="queue depth (KB) where every ECN-capable packet is marked")
    pfc_mode: Literal["lossless", "lossy"] = Field(
        default="lossless", description="lossless: PFC + ECN; lossy: ECN only, as in the guide")
    pfc_priority: int = Field(default=DEFAULT_PFC_PRIORITY, ge=PFC_PRIORITY_MIN, le=PFC_PRIORITY_MAX,
                              description="802.1p priority that PFC protects (RoCE)")
    trust: Literal["dscp", "pcp"] = Field(default="dscp", description="what the switch classifies RoCE by")
    mtu: int = Field(default=SWITCH_MAX_MTU, ge=1500, le=SWITCH_MAX_MTU, description="MTU of the RoCE ports")
    buffer_kb: int = Field(default=SN2700_BUFFER_KB, ge=1,
                           description="shared packet buffer of the switch in KB (SN2700: 16 MB); "
                                       "ECN thresholds must fit")


class SwitchConfig(Model):
    """One NVIDIA Spectrum switch reached over SSH; its password is the secret gpu-lab:switchPasswords.<name>."""

    name: HostName
    os: Literal["onyx", "cumulus"] = Field(description="onyx (SN2700 in the guides) or cumulus (Cumulus Linux, NVUE)")
    management_address: IPv4 = Field(description="SSH address of the switch's management port")
    user: Token = Field(default="admin", description="SSH user (Onyx: admin; Cumulus: cumulus)")
    ssh_port: int = Field(default=22, ge=1, le=65535)
    host_key: SshPublicKey | None = Field(
        default=None, description="expected SSH host key ('ssh-ed25519 AAAA...', from ssh-keyscan); unset means any "
                                  "key is accepted and the policy pack reports it")
    connect_timeout_seconds: int = Field(default=10, ge=PER_DIAL_TIMEOUT_SECONDS[0], le=PER_DIAL_TIMEOUT_SECONDS[1],
                                         description="per attempt; an unreachable switch fails after "
                                                     "attempts x timeout")
    connect_attempts: int = Field(default=2, ge=DIAL_ERROR_LIMIT[0], le=DIAL_ERROR_LIMIT[1],
                                  description="SSH dial attempts before giving up")
    ports: SwitchPorts
    roce: RoceSettings = RoceSettings()

    def rail_vlans(self) -> list[int]:
        """Each rail's VLAN, the guide's 111, 112, ... where none is given."""
        return [r.vlan if r.vlan is not None else FIRST_RAIL_VLAN + i for i, r in enumerate(self.ports.rails)]

    def roce_ports(self) -> list[str]:
        """Every port that carries RoCE (hosts first, then each rail's), in config order."""
        return list(self.ports.hosts) + [p for r in self.ports.rails for p in r.ports]


# ---------------------------------------------------------------- the hosts' side


def host_side(vsphere: VsphereFacts | None, switch: SwitchConfig) -> HostRoce:
    """The ESXi hosts' settings when the lab has vSphere; otherwise the bare-metal script's.

    hosts-baremetal.sh follows the switches' priority and trust, so only its MTU can disagree.
    """
    if vsphere is not None:
        return vsphere.roce
    return HostRoce(switch.roce.pfc_priority, switch.roce.trust, BAREMETAL_MTU, "(hosts-baremetal.sh)",
                    "(hosts-baremetal.sh)", "(hosts-baremetal.sh: BAREMETAL_MTU)")


# ---------------------------------------------------------------- rules


def check(switches: list[SwitchConfig], vsphere: VsphereFacts | None) -> list[Problem]:
    """Rules across the switches and between the switches and the hosts."""
    p: list[Problem] = []
    for i, sw in enumerate(switches):
        p += _switch_problems(sw, vsphere, f"switches[{i}]")
    p += _fabric_problems(switches, vsphere)
    return p


def _switch_problems(sw: SwitchConfig, vsphere: VsphereFacts | None, at: str) -> list[Problem]:
    p: list[Problem] = []
    roce = sw.roce
    r = f"{at}.roce"

    # ECN thresholds: a ramp from min to max that fits in the switch's buffer.
    if not ecn_thresholds_ordered(roce.ecn_min_kb, roce.ecn_max_kb):
        p.append(Problem(f"{r}.ecnMinKb", f"{roce.ecn_min_kb} is not below ecnMaxKb {roce.ecn_max_kb}; marking "
                                          "ramps up between the two, so the minimum must be below the maximum "
                                          f"(guide: {DEFAULT_ECN_MIN_KB} and {DEFAULT_ECN_MAX_KB})"))
    for key, value in (("ecnMinKb", roce.ecn_min_kb), ("ecnMaxKb", roce.ecn_max_kb)):
        if value > roce.buffer_kb:
            p.append(Problem(f"{r}.{key}", f"{value} KB is beyond the switch's {roce.buffer_kb} KB shared buffer "
                                           f"(bufferKb); allowed: 1-{roce.buffer_kb}"))
    # The renderers rely on the identity priority -> traffic-class map, so ECN lands on RoCE's queue.
    if roce.traffic_class != roce.pfc_priority:
        p.append(Problem(f"{r}.trafficClass", f"{roce.traffic_class} differs from pfcPriority {roce.pfc_priority}; "
                                              "RoCE's priority maps to the traffic class of the same number, "
                                              "so set both to the same value (guide: 3)"))

    # The hosts must send on the priority the switch protects, classified the same way, fitting the MTU.
    host = host_side(vsphere, sw)
    if roce.pfc_priority != host.pfc_priority:
        p.append(Problem(f"{r}.pfcPriority", f"{roce.pfc_priority} differs from the hosts' PFC priority "
                                             f"{host.pfc_priority} ({host.pfc_path}); set both to the same 0-7 value"))
    if roce.trust != host.trust:
        p.append(Problem(f"{r}.trust", f"{roce.trust!r} differs from the hosts' trust {host.trust!r} "
                                       f"({host.trust_path}); set both to 'dscp' or both to 'pcp'"))
    if roce.mtu < host.mtu:
        p.append(Problem(f"{r}.mtu", f"{roce.mtu} is below the hosts' MTU {host.mtu} ({host.mtu_path}); "
                                     f"allowed: {host.mtu}-{SWITCH_MAX_MTU}"))

    # Ports: the OS's naming, and one role per port.
    pattern, example = PORT_PATTERNS[sw.os]
    seen: dict[str, str] = {}
    located = [(port, f"{at}.ports.hosts[{j}]") for j, port in enumerate(sw.ports.hosts)]
    for k, rail in enumerate(sw.ports.rails):
        located += [(port, f"{at}.ports.rails[{k}].ports[{j}]") for j, port in enumerate(rail.ports)]
    for port, path in located:
        if not pattern.match(port):
            p.append(Problem(path, f"{port!r} is not a {sw.os} port name: use {example}"))
        if port in seen:
            p.append(Problem(path, f"port {port} is already used at {seen[port]}; a port has one role on one rail"))
        else:
            seen[port] = path
    if not located:
        p.append(Problem(f"{at}.ports", "no ports: list the ports facing the hosts under hosts or rails"))

    # Rails: one VLAN and one subnet each.
    vlans = sw.rail_vlans()
    for vlan in duplicates(vlans):
        where = [k for k, v in enumerate(vlans) if v == vlan]
        p.append(Problem(f"{at}.ports.rails[{where[1]}].vlan",
                         f"VLAN {vlan} is already rail {where[0]}'s; each rail needs its own VLAN "
                         f"(the guide uses {FIRST_RAIL_VLAN}, {FIRST_RAIL_VLAN + 1}, ...)"))
    nets = [ipaddress.IPv4Network(rail.subnet) for rail in sw.ports.rails]
    for k, net in enumerate(nets):
        for m in range(k):
            if net.overlaps(nets[m]):
                p.append(Problem(f"{at}.ports.rails[{k}].subnet",
                                 f"{net} overlaps rail {m}'s subnet {nets[m]}; each rail needs its own subnet "
                                 "(one NIC per subnet)"))
        if vsphere is not None:
            for key, cidr in vsphere.management_cidrs:
                if net.overlaps(ipaddress.IPv4Network(cidr)):
                    p.append(Problem(f"{at}.ports.rails[{k}].subnet",
                                     f"{net} overlaps the management network {cidr} (vsphere.networks.management."
                                     f"{key}); a rail needs a subnet of its own"))
    return p


def _fabric_problems(switches: list[SwitchConfig], vsphere: VsphereFacts | None) -> list[Problem]:
    p: list[Problem] = []
    for name in duplicates([s.name for s in switches]):
        p.append(Problem("switches", f"switch name {name!r} appears more than once; names must be unique"))
    for addr in duplicates([s.management_address for s in switches]):
        p.append(Problem("switches", f"management address {addr} is given to more than one switch"))

    # One fabric: every switch protects the same priority the same way (hosts-baremetal.sh is one script).
    if switches:
        first = switches[0].roce
        for i, sw in enumerate(switches[1:], start=1):
            for key, attr in (("pfcPriority", "pfc_priority"), ("trust", "trust"), ("pfcMode", "pfc_mode")):
                if getattr(sw.roce, attr) != getattr(first, attr):
                    p.append(Problem(f"switches[{i}].roce.{key}",
                                     f"{getattr(sw.roce, attr)!r} differs from {switches[0].name}'s "
                                     f"{getattr(first, attr)!r}; all switches of the fabric must agree"))

    # A switch's management address must not be taken by a planned host or VM address.
    if vsphere is not None:
        taken = {h.vmk_address: f"host {h.name}'s vmk" for h in vsphere.hosts}
        for vm in vsphere.vms:
            for addr in (vm.management_address, vm.rdma_address):
                if addr:
                    taken[addr] = f"VM {vm.name}"
        for i, sw in enumerate(switches):
            owner = taken.get(str(sw.management_address))
            if owner:
                p.append(Problem(f"switches[{i}].managementAddress",
                                 f"{sw.management_address} is already {owner}'s address; give the switch its own"))
    return p
