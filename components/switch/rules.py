"""The `switches` section's rules: each switch's QoS and ports, the fabric, and the hosts' side.

MTU: Onyx and Cumulus both count the interface MTU without the Ethernet header (like Linux and
ESXi), so the switch MTU must be at least the hosts' MTU; 9216 leaves room for any host MTU up
to 9216.
"""

from __future__ import annotations

import ipaddress

from components.facts import VsphereFacts
from components.model import Problem, duplicates
from components.switch.dialects import DIALECTS
from components.switch.model import SwitchConfig
from components.switch.plan import FIRST_RAIL_VLAN, host_side, rail_vlans
from labrules.roce import DEFAULT_ECN_MAX_KB, DEFAULT_ECN_MIN_KB, SWITCH_MAX_MTU, ecn_thresholds_ordered


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
    host = host_side(vsphere, roce.pfc_priority, roce.trust)
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
    pattern, example = DIALECTS[sw.os].port_pattern, DIALECTS[sw.os].port_example
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
    vlans = rail_vlans(sw.ports)
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
