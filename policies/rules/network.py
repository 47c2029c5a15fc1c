"""RoCE / PVRDMA network rules: the vDS, its uplinks, MTU, host readiness, VM NIC placement."""

from __future__ import annotations

import re
from collections import Counter

from pulumi_policy import PolicyConfigSchema

from labrules.roce import ETHERNET_MTU, SWITCH_MAX_MTU
from labrules.types import HOST_ADVANCED_OPTION_KIND, HOST_FIREWALL_RULESET_KIND
from labrules.vsphere import LACP_ALLOWED_ON_RDMA_UPLINKS, PVRDMA_ADAPTER, RDMA_MIN_MTU, RDMA_UPLINKS_PER_HOST

from .declare import MANDATORY, resource_policy, stack_policy
from .props import (
    DPG,
    DVS,
    DYNAMIC,
    LAB_VMS,
    ROCE_FABRIC,
    SPECTRUM,
    UNKNOWN,
    VM,
    VNIC,
    any_unknown,
    as_int,
    as_list,
    dig,
    kind_of,
    known,
    lab_vm_entries,
    name_of,
    of_kind,
    of_type,
    props_of,
    reveal,
    settings,
    stack_resources,
    truthy,
    under_component,
)

VSPHERE_DEFAULT_MTU = ETHERNET_MTU  # what vSphere uses when maxMtu / mtu is not set


def _in_fabric(args) -> bool:
    return under_component(args.urn, ROCE_FABRIC)


# ---------------------------------------------------------------- no LACP


def check_vds_no_lacp(args, report_violation) -> None:
    """The RoCE vDS and its port groups must not use LACP or any other link aggregation. DeepOps RoCE guide: link
    bundles across NICs do not work well with RoCE and RDMA; each RDMA NIC belongs on its own subnet instead."""
    if args.resource_type not in (DVS, DPG) or not _in_fabric(args):
        return
    p = props_of(args)
    if truthy(p.get("lacpEnabled")) and not LACP_ALLOWED_ON_RDMA_UPLINKS:
        what = "vDS" if args.resource_type == DVS else "port group"
        report_violation(
            f"{what} {name_of(p, args.name)!r} has lacpEnabled=true; RDMA uplinks must not be "
            "aggregated: remove lacpEnabled (or set it false) and give each RDMA NIC its own subnet"
        )


vds_no_lacp = resource_policy("vsphere-vds-no-lacp", MANDATORY, check_vds_no_lacp, types=(DVS, DPG))


# ---------------------------------------------------------------- MTU

MTU_SCHEMA = PolicyConfigSchema(properties={
    "minMtu": {
        "type": "integer", "minimum": ETHERNET_MTU, "maximum": SWITCH_MAX_MTU, "default": RDMA_MIN_MTU,
        "description": "smallest MTU allowed on the RDMA network (vDS, vmk, fabric, switch ports)",
    },
})


def check_rdma_mtu(args, report_violation) -> None:
    """Every hop of the RDMA network (vDS, RDMA vmk, fabric setting, switch ports) uses jumbo frames, {min_mtu} by
    default. NVIDIA RDG for vSphere PVRDMA builds the RoCE network with jumbo frames; a
    smaller MTU anywhere on the path caps RDMA message size and throughput."""
    cfg = settings(args, MTU_SCHEMA)
    minimum = int(cfg["minMtu"])
    p = props_of(args)
    t = args.resource_type
    if t == DVS and _in_fabric(args):
        _mtu_at_least(report_violation, f"vDS {name_of(p, args.name)!r} maxMtu",
                      p.get("maxMtu"), minimum, unset=VSPHERE_DEFAULT_MTU)
    elif t == VNIC and _in_fabric(args):
        _mtu_at_least(report_violation, f"vmk {args.name!r} mtu", p.get("mtu"), minimum,
                      unset=VSPHERE_DEFAULT_MTU)
    elif t == ROCE_FABRIC:
        _mtu_at_least(report_violation, f"fabric {args.name!r} rdmaMtu", p.get("rdmaMtu"), minimum, unset=None)
    elif t == SPECTRUM:
        host_mtu = as_int(p.get("hostMtu"))
        need = max(minimum, host_mtu) if isinstance(host_mtu, int) else minimum
        _mtu_at_least(report_violation, f"switch {name_of(p, args.name, 'switchName')!r} mtu",
                      p.get("mtu"), need, unset=None)


def _mtu_at_least(report_violation, what: str, raw, minimum: int, unset) -> None:
    mtu = as_int(raw)
    if mtu is UNKNOWN:
        return
    if mtu is None:
        if unset is None:
            return
        report_violation(f"{what} is not set, so vSphere uses {unset}; set it to {minimum} or more (jumbo frames)")
    elif mtu < minimum:
        report_violation(f"{what} is {mtu}; RoCE needs jumbo frames end to end: set {minimum} or more")


# The description names labrules' floor, minMtu's default: a docstring cannot be an f-string (under -OO, no
# docstring stays none, and declare refuses the rule as before).
check_rdma_mtu.__doc__ = (check_rdma_mtu.__doc__ or "").format(min_mtu=RDMA_MIN_MTU) or None
rdma_mtu = resource_policy("vsphere-rdma-mtu", MANDATORY, check_rdma_mtu, MTU_SCHEMA,
                           types=(DVS, VNIC, ROCE_FABRIC, SPECTRUM))


# ---------------------------------------------------------------- one uplink


def check_vds_single_uplink(args, report_violation) -> None:
    """The PVRDMA vDS has exactly one uplink per host: the RDMA NIC, with no standby or extra active uplinks.
    NVIDIA RDG for vSphere PVRDMA: PVRDMA between hosts uses the physical RDMA devices that
    are the vDS uplinks; traffic that leaves through any other NIC falls back to TCP."""
    if args.resource_type != DVS or not _in_fabric(args):
        return
    p = props_of(args)
    name = name_of(p, args.name)
    uplinks = reveal(p.get("uplinks"))
    if isinstance(uplinks, list) and len(uplinks) != RDMA_UPLINKS_PER_HOST:
        report_violation(
            f"vDS {name!r} defines {len(uplinks)} uplinks {uplinks}; the RDMA card must be its only uplink: "
            "define exactly one"
        )
    active = reveal(p.get("activeUplinks"))
    if isinstance(active, list) and len(active) > RDMA_UPLINKS_PER_HOST:
        report_violation(f"vDS {name!r} has {len(active)} active uplinks {active}; keep exactly one (the RDMA NIC)")
    standby = reveal(p.get("standbyUplinks"))
    if isinstance(standby, list) and standby:
        report_violation(
            f"vDS {name!r} has standby uplinks {standby}; a failover to a non-RDMA NIC silently drops "
            "PVRDMA to TCP: remove them"
        )
    for i, host in enumerate(as_list(p.get("hosts"))):
        devices = reveal(dig(host, "devices"))
        if not isinstance(devices, list):
            continue
        if len(devices) != RDMA_UPLINKS_PER_HOST:
            host_id = dig(host, "hostSystemId")
            host_id = host_id if known(host_id) else f"hosts[{i}]"
            report_violation(
                f"vDS {name!r} takes {len(devices)} NICs {devices} from host {host_id}; "
                "give it exactly one, the host's RDMA NIC"
            )


vds_single_uplink = resource_policy("vsphere-pvrdma-vds-single-uplink", MANDATORY, check_vds_single_uplink,
                                    types=(DVS,))


# ---------------------------------------------------------------- one NIC per subnet


def check_one_nic_per_subnet(args, report_violation) -> None:
    """A VM has at most one NIC on any subnet (port group). DeepOps RoCE guide: each NIC goes
    on a separate subnet; two NICs on one subnet make RDMA and routing pick paths unpredictably."""
    p = props_of(args)
    if args.resource_type == VM:
        for network, n in _repeated(dig(nic, "networkId") for nic in as_list(p.get("networkInterfaces"))):
            report_violation(
                f"VM {name_of(p, args.name)!r} has {n} NICs on network {network}; give each NIC its own subnet"
            )
    elif args.resource_type == LAB_VMS:
        for vm in as_list(p.get("vms")):
            for subnet, n in _repeated(dig(nic, "subnet") for nic in as_list(dig(vm, "nics"))):
                report_violation(
                    f"VM {dig(vm, 'name')!r} has {n} NICs on subnet {subnet}; give each NIC its own subnet"
                )


def _repeated(values) -> list[tuple]:
    """(value, count) for each known value that occurs more than once."""
    return [(v, n) for v, n in Counter(v for v in values if known(v)).items() if n > 1]


one_nic_per_subnet = resource_policy("vsphere-vm-one-nic-per-subnet", MANDATORY, check_one_nic_per_subnet,
                                     types=(VM, LAB_VMS))


# ---------------------------------------------------------------- PVRDMA NICs on a DPG


def check_pvrdma_nic_on_dpg(args, report_violation) -> None:
    """PVRDMA (vmxnet3vrdma) NICs attach to a distributed port group of the lab's RDMA vDS. NVIDIA RDG for vSphere
    PVRDMA: VMs that talk PVRDMA must be connected to the same vSphere Distributed Switch; a
    PVRDMA adapter on a standard switch cannot use the RDMA uplink."""
    resources = stack_resources(args)
    dpgs = of_type(resources, DPG)
    port_groups = {r.get("name") for r in dpgs if known(r.get("name"))}
    names_unknown = any_unknown(dpgs, "name")
    for labvms, vm in lab_vm_entries(resources):
        for i, nic in enumerate(as_list(dig(vm, "nics"))):
            network = dig(nic, "network")
            if dig(nic, "adapterType") != PVRDMA_ADAPTER or not known(network):
                continue
            if network not in port_groups and not names_unknown:
                report_violation(
                    f"VM {dig(vm, 'name')!r} NIC {i} is a PVRDMA (vmxnet3vrdma) adapter on network {network!r}, which "
                    f"is not a distributed port group of this stack ({sorted(port_groups) or 'none'}); "
                    "attach it to the RDMA vDS port group",
                    labvms.urn,
                )
    for vm in of_type(resources, VM):
        nics = as_list(vm.get("networkInterfaces"))
        if not any(dig(n, "adapterType") == PVRDMA_ADAPTER for n in nics):
            continue
        if vm.prop_deps is None or "networkInterfaces" not in vm.prop_deps:
            continue  # the engine gave no dependency information: nothing to judge
        if DPG not in vm.dep_types.get("networkInterfaces", []):
            report_violation(
                f"VM {vm.get('name') or vm.name!r} has a PVRDMA (vmxnet3vrdma) NIC but none of its networks is a "
                "distributed port group of this stack; attach the PVRDMA NIC to the RDMA vDS port group",
                vm.urn,
            )


pvrdma_nic_on_dpg = stack_policy("vsphere-pvrdma-nic-on-distributed-port-group", MANDATORY, check_pvrdma_nic_on_dpg)


# ---------------------------------------------------------------- hosts ready for PVRDMA

_VMK = re.compile(r"^vmk\d+$")


def check_rdma_host_ready(args, report_violation) -> None:
    """Every host of the RoCE fabric has its RDMA NIC as an uplink of the RDMA vDS, the Net.PVRDMAVmknic
    advanced option naming its RDMA vmk, and the pvrdma firewall ruleset enabled. NVIDIA RDG for vSphere
    PVRDMA: PVRDMA between hosts needs a physical RDMA uplink on the vDS (else it falls back
    to TCP), a vmk tagged for PVRDMA, and port 28250 open."""
    resources = stack_resources(args)
    options = of_kind(resources, HOST_ADVANCED_OPTION_KIND)
    rulesets = of_kind(resources, HOST_FIREWALL_RULESET_KIND)
    # a pyvmomi resource whose kind is unknown (preview) could be any of them
    unsure = [r for r in of_type(resources, DYNAMIC) if not known(kind_of(r.props))]
    for fabric in of_type(resources, ROCE_FABRIC):
        entries = as_list(fabric.get("hosts"))
        hosts = [h for h in entries if isinstance(h, dict)]
        all_hosts_known = len(hosts) == len(entries)
        rdma_nics = {n for h in hosts for n in as_list(h.get("rdmaUplinks")) if known(n)}
        vds_name = fabric.get("vdsName")
        switches = [r for r in of_type(resources, DVS)
                    if (known(vds_name) and r.get("name") == vds_name)
                    or (not known(vds_name) and under_component(r.urn, ROCE_FABRIC))]
        names_unknown = any_unknown(of_type(resources, DVS), "name")
        if known(vds_name) and not switches and not names_unknown:
            report_violation(
                f"fabric {fabric.name!r} names vDS {vds_name!r}, but no vDS of that name is in the stack; "
                "its hosts would have no RDMA uplink",
                fabric.urn,
            )
        for vds in switches:
            members = vds.get("hosts")
            if isinstance(members, list) and hosts and all_hosts_known and len(members) != len(hosts):
                report_violation(
                    f"vDS {vds.get('name')!r} joins {len(members)} hosts but the fabric has {len(hosts)} "
                    f"({', '.join(str(h.get('name')) for h in hosts)}); every RDMA host needs its RDMA NIC "
                    "as an uplink of the vDS",
                    vds.urn,
                )
            for i, member in enumerate(as_list(members)):
                devices = reveal(dig(member, "devices"))
                if not isinstance(devices, list) or not rdma_nics or any(not known(d) for d in devices):
                    continue
                if not set(devices) & rdma_nics:
                    host_id = dig(member, "hostSystemId")
                    report_violation(
                        f"vDS {vds.get('name')!r} member {host_id if known(host_id) else i} has no RDMA uplink: "
                        f"{devices} are not among the fabric's RDMA NICs {sorted(rdma_nics)}",
                        vds.urn,
                    )
        for host in hosts:
            name = reveal(host.get("name"))
            if not known(name):
                continue
            uplinks = host.get("rdmaUplinks")
            if isinstance(uplinks, list) and not uplinks:
                report_violation(f"host {name} has no RDMA uplink in the fabric; list its ConnectX NIC",
                                 fabric.urn)
            mine = [o for o in options if o.get("hostName") == name
                    and str(o.get("key", "")).lower() == "net.pvrdmavmknic"]
            values = [o.get("value") for o in mine]
            if not mine and not unsure and not any_unknown(options, "hostName", "key"):
                report_violation(
                    f"host {name} does not set the advanced option Net.PVRDMAVmknic; PVRDMA needs it to "
                    "name the RDMA vmk",
                    fabric.urn,
                )
            elif mine and all(known(v) and not _VMK.match(str(v)) for v in values):
                report_violation(
                    f"host {name} sets Net.PVRDMAVmknic to {values[0]!r}, which is not a vmk name (e.g. vmk3)",
                    fabric.urn,
                )
            mine_rs = [r for r in rulesets if r.get("hostName") == name
                       and str(r.get("ruleset", "")).lower() == "pvrdma"]
            if mine_rs:
                disabled = all(known(r.get("enabled")) and not truthy(r.get("enabled")) for r in mine_rs)
            else:
                disabled = not unsure and not any_unknown(rulesets, "hostName", "ruleset")
            if disabled:
                report_violation(
                    f"host {name} does not enable the pvrdma firewall ruleset; PVRDMA traffic (port 28250) "
                    "would be blocked",
                    fabric.urn,
                )


rdma_host_ready = stack_policy("vsphere-rdma-host-ready", MANDATORY, check_rdma_host_ready)


POLICIES = [vds_no_lacp, rdma_mtu, vds_single_uplink, one_nic_per_subnet, pvrdma_nic_on_dpg, rdma_host_ready]
