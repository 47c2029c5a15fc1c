"""What a running lab cannot change in place, decided in one place: the lab's identity (the cluster,
each node's addresses and host, the helper's login, the switches' OS) and the problems an edit of it
raises. Pure: the guard (components/dynamic/guard.py) and `make diff` judge with it. Why each of
these cannot change: docs/day2.md.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import yaml
from pydantic import ValidationError

from components.model import AddressRange
from components.vsphere.model import VsphereConfig
from components.vsphere.plan import planned_hosts, planned_vms, worker_placement

if TYPE_CHECKING:  # annotations only: the guard's provider process loads no more than it judges with
    from components.openshift.model import OpenShiftConfig
    from components.switch.model import SwitchConfig

IDENTITY_KEYS = ("kind", "cluster", "vsphere", "bareMetal", "helper", "switches")
"""The keys of an identity as the guard records it (identity_of's and the resource's kind)."""
REBUILD = "rebuild the lab on purpose instead (docs/day2.md, \"Take a lab down\")"
ETCD_REPLACEMENT = (
    "a control-plane machine is an etcd member: replace it by the etcd member replacement procedure (Red Hat, "
    "OpenShift Container Platform, \"Replacing an unhealthy etcd member\", https://docs.openshift.com/"
    "container-platform/4.16/backup_and_restore/control_plane_backup_and_restore/"
    "replacing-unhealthy-etcd-member.html), not by editing vsphere.controlPlane.names")
BOOTSTRAP_TWO_STEPS = (
    "the bootstrap VM's addresses stay reserved until the `pulumi up` after the one that deletes it: drop "
    "vsphere.bootstrap (with openshift.bootstrap: false) in one `pulumi up`, then add the new node with that "
    "address in the next")
SWITCH_TWO_STEPS = (
    "retire the old switch's configuration first: remove it from gpu-lab:switches in one `pulumi up` (its "
    "configuration is undone while it still runs what it ran), then add the new one in the next")
TWO_STEPS = ("remove the old node in one `pulumi up` (it is drained and its VM deleted), then add the new one in "
             "the next, or give the new node addresses (and a host) no removed node holds")

# The cluster's identity: a change of any of these is a new cluster.
CLUSTER_KEYS = {
    "clusterName": "openshift.clusterName",
    "baseDomain": "openshift.baseDomain",
    "platform": "openshift.platform",
    "networkType": "openshift.networkType",
    "machineNetwork": "openshift.networks.machineNetwork",
    "clusterNetwork": "openshift.networks.clusterNetwork",
    "serviceNetwork": "openshift.networks.serviceNetwork",
    "singleNode": "openshift.singleNode",
}


class LabSections(Protocol):
    """What identity_of reads of a lab: its sections as the stack file says them (a LabConfig has them;
    the loader itself sits above this module)."""

    @property
    def vsphere(self) -> VsphereConfig | None: ...

    @property
    def openshift(self) -> OpenShiftConfig | None: ...

    @property
    def switches(self) -> Sequence[SwitchConfig]: ...


def identity_of(lab: LabSections) -> dict[str, Any]:
    """The lab's identity as the guard's inputs: the cluster, the vSphere section (its nodes' places
    follow from it: node_identities below) and the bare-metal nodes."""
    cluster = None
    bare_metal: dict[str, str | None] = {}
    if lab.openshift is not None:
        oc = lab.openshift
        nets = oc.networks
        cluster = {
            "clusterName": oc.cluster_name,
            "baseDomain": oc.base_domain,
            "platform": oc.platform,
            "networkType": oc.network_type,
            "machineNetwork": list(nets.machine_network),
            "clusterNetwork": f"{nets.cluster_network.cidr}/{nets.cluster_network.host_prefix}",
            "serviceNetwork": nets.service_network,
            "singleNode": oc.single_node,
        }
        bare_metal = {n.name: str(n.address) if n.address else None
                      for n in oc.nodes if n.platform == "baremetal" and n.role != "bootstrap"}
    vsphere = lab.vsphere.model_dump(mode="json", by_alias=True) if lab.vsphere is not None else None
    identity: dict[str, Any] = {"cluster": cluster, "vsphere": vsphere, "bareMetal": bare_metal}
    if lab.openshift is not None:
        helper = lab.openshift.helper
        identity["helper"] = {"address": str(helper.address), "port": helper.port, "user": helper.user}
    if lab.switches:
        identity["switches"] = {sw.name: {"os": sw.os, "address": str(sw.management_address)} for sw in lab.switches}
    return identity


def identity_problems(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Every change from `old` to `new` that a running lab cannot take, as messages; [] when none."""
    problems = _cluster_problems(old.get("cluster"), new.get("cluster"))
    problems += _vsphere_problems(old.get("vsphere"), new.get("vsphere"))
    before, after = old.get("bareMetal") or {}, new.get("bareMetal") or {}
    for name in sorted(set(before) & set(after)):
        if before[name] != after[name]:
            problems.append(f"openshift.nodes: {name}: address {before[name]} -> {after[name]}: a running node keeps "
                            "its address; set it back, or remove the node in one `pulumi up` (it is drained) and add "
                            "it with its new address in the next")
    problems += _helper_problems(old.get("helper"), new.get("helper"))
    problems += _switch_problems(old.get("switches"), new.get("switches"))
    return problems


def identity_warnings(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What the guard cannot judge from what the last deployment recorded: it says so instead of passing."""
    warnings = []
    if old.get("vsphere") and new.get("vsphere"):
        try:
            VsphereConfig.model_validate(old["vsphere"])
        except ValidationError as err:
            warnings.append(
                "vsphere: the deployed section was written by an older gpu-lab and cannot be read "
                f"({err.error_count()} problem(s), first: {_first_error(err)}); running nodes' moves are not checked "
                "in this run: compare `make diff` with the lab before `pulumi up`")
    for key, what in (("helper", "openshift.helper address, port and user"), ("switches", "switches' os")):
        if new.get(key) and key not in old:
            warnings.append(f"{what}: the deployed lab was built by a gpu-lab that did not record them; this run "
                            "records them and cannot check a change of them: compare `make diff` with the lab")
    before, after = old.get("switches") or {}, new.get("switches") or {}
    if any("address" not in v for v in before.values()) and after:
        warnings.append("switches' addresses: the deployed lab was built by a gpu-lab that did not record them; this "
                        "run records them and cannot tell a renamed switch from a new one: compare `make diff` with "
                        "the lab")
    return warnings


def _first_error(err: ValidationError) -> str:
    first = err.errors()[0]
    return f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}"


def _helper_problems(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    if not old or not new:
        return []
    problems = []
    for key in ("address", "port", "user"):
        if old.get(key) == new.get(key):
            continue
        why = ("the running nodes use the helper's address as their nameserver (a first-boot kernel argument of "
               "their ignition), and " if key == "address" else "")
        problems.append(
            f"openshift.helper.{key}: {old.get(key)!r} -> {new.get(key)!r}: the helper cannot move under a running "
            f"lab: {why}pulumi-command sends a Command's whole connection as one secret, so no helper step is replaced "
            "and none undoes its work on the old helper (dnsmasq, HAProxy and bootstrap.ign, which holds the pull "
            f"secret, would stay there); put {old.get(key)!r} back, or {REBUILD}")
    return problems


def _switch_problems(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    if not old or not new:
        return []
    problems = []
    for name in sorted(set(old) & set(new)):
        before, after = old[name].get("os"), new[name].get("os")
        if before != after:
            problems.append(
                f"switches: {name}: os {before!r} -> {after!r}: the switch's RoCE configuration is undone by "
                f"{before}'s commands, which would run against {after}; remove the switch from gpu-lab:switches in "
                f"one `pulumi up` (its configuration is undone while it still runs {before}), reinstall it, then add "
                f"it back with os {after!r} in the next")
    # A switch is its address as well as its name: a new name on the address of a removed switch is the
    # same device, and the removed name's undo (in its old OS's commands) would run after the new apply.
    for new_name, old_name, _ in held_by_removed(
            [(n, {"address": new[n].get("address")}) for n in sorted(set(new) - set(old))],
            [(n, {"address": old[n].get("address")}) for n in sorted(set(old) - set(new))]):
        before, after = old[old_name].get("os"), new[new_name].get("os")
        os_change = f", and its os {before!r} -> {after!r}" if before != after else ""
        problems.append(
            f"switches: {new_name} takes address {new[new_name]['address']} of {old_name}, removed in the same "
            f"`pulumi up`{os_change}: one device under two names; the new switch is configured before "
            f"{old_name}'s configuration is undone by {before}'s commands against the same address; "
            + SWITCH_TWO_STEPS)
    return problems


def _vsphere_problems(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    if not old or not new:
        return []
    try:
        before = VsphereConfig.model_validate(old)
    except ValidationError:  # a section written by an older gpu-lab the model no longer reads: identity_warnings
        return []
    after = VsphereConfig.model_validate(new)
    moves = node_moves(before, after)
    problems = _replacement_problems(before, after)
    positional = [m for m in moves if any(c.positional for c in m.changes)]
    if positional:
        problems.append(
            "vsphere: the edit adds or removes a node, and the positional {first: ...} addresses or round-robin "
            "hosts would move running nodes: " + "; ".join(m.describe() for m in positional)
            + ". Keep them where they are by writing these lists (then make the edit):\n"
            + render_keeping_edit(before, after).rstrip())
    for move in moves:
        for change in move.changes:
            # A host written for the node is a migration the provider makes in place; an address is not.
            if not change.positional and change.attribute != "host":
                problems.append(f"{change.key}: {move.name}: {change.attribute} {change.before} -> {change.after}: a "
                                "running node keeps its addresses; set it back, or remove the node in one `pulumi up` "
                                "(it is drained) and add it with its new address in the next")
    return problems


def _replacement_problems(before: VsphereConfig, after: VsphereConfig) -> list[str]:
    """Removals and additions in one `up` that a running lab cannot take: a control-plane node leaving
    (a rename too), a new node taking what a removed one still holds (the engine creates the new VM
    before it deletes the old one, so both run at once with the same address, or want the same
    host's GPU share), and a new worker beside a vGPU profile change (its create would race the
    roll for the host's GPU share)."""
    # The bootstrap VM counts as removed when the section drops it: its delete follows the creates too.
    old = {vm.name: vm for vm in planned_vms(before, with_bootstrap=True)}
    new = {vm.name: vm for vm in planned_vms(after, with_bootstrap=True)}
    removed = [vm for name, vm in old.items() if name not in new]
    added = [vm for name, vm in new.items() if name not in old and vm.role != "bootstrap"]
    problems = []
    gone_cp = [vm.name for vm in removed if vm.role == "control-plane"]
    if gone_cp:
        came = [vm.name for vm in added if vm.role == "control-plane"]
        what = (f"renames control-plane node(s) {', '.join(gone_cp)} to {', '.join(came)}" if came
                else f"removes control-plane node(s) {', '.join(gone_cp)}")
        problems.append(f"vsphere.controlPlane.names: the edit {what}; {ETCD_REPLACEMENT}")
    def holds(vm: Any) -> dict[str, str | None]:
        held = {"management address": vm.management_address, "RDMA address": vm.rdma_address, "MAC": vm.mac}
        if vm.vgpu_profile:
            held[f"the GPU share of host {vm.host}"] = "gpu"
        return held

    for new_vm, old_vm, shared in held_by_removed(
            [(vm, holds(vm)) for vm in added],
            [(vm, holds(vm)) for vm in removed if vm.role != "control-plane"]):
        key = f"vsphere.{'workers' if new_vm.role == 'worker' else 'controlPlane'}.names"
        if old_vm.role == "bootstrap":
            problems.append(
                f"{key}: new node {new_vm.name} would take {', '.join(shared)} of the bootstrap VM "
                f"{old_vm.name}, which this `pulumi up` deletes (the new VM is created before it is): "
                + BOOTSTRAP_TWO_STEPS)
        else:
            problems.append(
                f"{key}: new node {new_vm.name} would take {', '.join(shared)} that node {old_vm.name}, removed "
                f"in the same `pulumi up`, still holds (the new VM is created before the old one is deleted); "
                + TWO_STEPS)
    if before.workers.vgpu_profile != after.workers.vgpu_profile:
        new_workers = [vm.name for vm in added if vm.role == "worker"]
        if new_workers:
            problems.append(
                f"vsphere.workers.vgpuProfile: {before.workers.vgpu_profile} -> {after.workers.vgpu_profile} in the "
                f"same `pulumi up` as new worker(s) {', '.join(new_workers)}: a new worker's create would race the "
                "roll of the running workers for their hosts' GPU share; change the profile in one `pulumi up` "
                "and add the workers in the next")
    return problems


def held_by_removed(added: list[tuple[Any, Mapping[str, Any]]], removed: list[tuple[Any, Mapping[str, Any]]]
                    ) -> list[tuple[Any, Any, list[str]]]:
    """(new item, removed item, what they share) for each new item that would take what an item removed
    in the same `up` still holds: the engine creates before it deletes, so both hold it at once, and the
    removed item's delete then undoes it under the new one. Each item comes with {label: value}; a None
    value holds nothing."""
    found = []
    for new_item, mine in added:
        for old_item, theirs in removed:
            shared = [label if value == "gpu" else f"{label} {value}" for label, value in mine.items()
                      if value is not None and theirs.get(label) == value]
            if shared:
                found.append((new_item, old_item, shared))
    return found


def _cluster_problems(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    if old is None:
        return []
    if new is None:
        return [f"openshift: the section is gone but a cluster is installed; put it back, or {REBUILD}"]
    return [f"{path}: {old.get(key)!r} -> {new.get(key)!r}: the cluster is installed once and cannot take this "
            f"change in place; put {old.get(key)!r} back, or {REBUILD}"
            for key, path in CLUSTER_KEYS.items() if old.get(key) != new.get(key)]


# ---------------------------------------------------------------- node identity
#
# A node's management address, RDMA address and host belong to its name. The derived forms
# ({first: ...} addresses, round-robin hosts) give them by position, so removing a node from the
# middle of a list moves every later one; listed addresses and `workers.hosts` pin them per node.
# These functions let a guard compare the section a lab was built from with the edited one.

IDENTITY_ATTRIBUTES = ("managementAddress", "rdmaAddress", "host")


class NodeIdentity(NamedTuple):
    """Where a node is: its management address (None for plain DHCP), its RDMA address (None
    off the RDMA network) and its ESXi host."""

    management_address: str | None
    rdma_address: str | None
    host: str


def node_identities(vs: VsphereConfig) -> dict[str, NodeIdentity]:
    """Every VM the section describes (bootstrap included), by name."""
    return {vm.name: NodeIdentity(vm.management_address, vm.rdma_address, vm.host)
            for vm in planned_vms(vs, with_bootstrap=True)}


@dataclass(frozen=True)
class IdentityChange:
    attribute: str
    """managementAddress, rdmaAddress or host."""
    key: str
    """The key that gives the node this value, e.g. vsphere.workers.rdmaAddresses."""
    before: str | None
    after: str | None
    positional: bool
    """The new value comes from the node's position ({first: ...}, round-robin), not from a value
    written for it: the change is a side effect of another node being added or removed."""


@dataclass(frozen=True)
class NodeMove:
    name: str
    role: str
    changes: tuple[IdentityChange, ...]

    def describe(self) -> str:
        return f"{self.name}: " + ", ".join(f"{c.attribute} {c.before} -> {c.after} ({c.key})" for c in self.changes)


def node_moves(old: VsphereConfig, new: VsphereConfig) -> list[NodeMove]:
    """The nodes of both sections whose address or host differs, in the new section's order."""
    before = node_identities(old)
    moves = []
    for vm in planned_vms(new, with_bootstrap=True):
        if vm.name not in before:
            continue
        after = NodeIdentity(vm.management_address, vm.rdma_address, vm.host)
        changes = tuple(
            IdentityChange(attribute, _identity_key(vm.role, attribute), was, now,
                           _positional(new, vm.role, attribute))
            for attribute, was, now in zip(IDENTITY_ATTRIBUTES, before[vm.name], after, strict=True)
            if was != now
        )
        if changes:
            moves.append(NodeMove(vm.name, vm.role, changes))
    return moves


_GROUP_KEYS = {"control-plane": "controlPlane", "worker": "workers"}
_LIST_KEYS = {"managementAddress": "managementAddresses", "rdmaAddress": "rdmaAddresses", "host": "hosts"}


def _identity_key(role: str, attribute: str) -> str:
    if role == "bootstrap":
        return "vsphere.managementHost" if attribute == "host" else "vsphere.bootstrap.managementAddress"
    if role == "control-plane" and attribute == "host":
        return "vsphere.managementHost"
    return f"vsphere.{_GROUP_KEYS[role]}.{_LIST_KEYS[attribute]}"


def _positional(vs: VsphereConfig, role: str, attribute: str) -> bool:
    if role == "bootstrap" or (role == "control-plane" and attribute == "host"):
        return False
    if attribute == "host":
        return worker_placement(vs).drs == "spread"  # hosts by position: one removed moves the later ones
    group = vs.control_plane if role == "control-plane" else vs.workers
    plan = group.management_addresses if attribute == "managementAddress" else vs.workers.rdma_addresses
    return isinstance(plan, AddressRange)


def keeping_edit(old: VsphereConfig, new: VsphereConfig) -> dict[str, dict[str, list[str]]]:
    """The lists to write into the new section so that no node of both sections moves.

    {"workers": {"hosts": [...], "rdmaAddresses": [...]}, ...}: for each group with a moved node,
    each moved attribute as a full list in the order of the new names. A node of both keeps its old
    value; a new node keeps its new address unless a kept node holds it, then gets the next free
    address of its network, and goes to the worker host with the fewest workers. Empty when nothing
    moves. Only positional moves are undone: a value
    written for the node itself is the user's own edit.
    """
    moved = {(m.name, c.attribute) for m in node_moves(old, new) for c in m.changes if c.positional}
    if not moved:
        return {}
    before = node_identities(old)
    after = node_identities(new)
    edit: dict[str, dict[str, list[str]]] = {}
    for role, group_key in _GROUP_KEYS.items():
        group = new.control_plane if role == "control-plane" else new.workers
        for index, attribute in enumerate(IDENTITY_ATTRIBUTES):
            if not any((name, attribute) in moved for name in group.names):
                continue
            kept = [name for name in group.names if name in before]
            values: dict[str, str | None] = {name: before[name][index] for name in kept}
            # what the other groups hold, before and after, and what this group's kept nodes keep
            taken = {ident[index] for identities in (before, after) for name, ident in identities.items()
                     if name not in group.names}
            taken |= set(values.values())
            if attribute == "rdmaAddress":
                taken |= {h.vmk_address for h in planned_hosts(new)}
            for name in group.names:
                if name in values:
                    continue
                wanted: str | None
                if attribute == "host":
                    wanted = _least_used_host(new, list(values.values()))
                else:
                    wanted = after[name][index]
                    if wanted in taken:
                        wanted = _next_free(new, attribute, taken)
                values[name] = wanted
                taken.add(wanted)
            edit.setdefault(group_key, {})[_LIST_KEYS[attribute]] = [str(values[name]) for name in group.names]
    return edit


def _least_used_host(vs: VsphereConfig, placed: list[str | None]) -> str:
    """The worker host with the fewest workers placed on it, the first listed on a tie."""
    return min((h.name for h in vs.worker_hosts), key=placed.count)


def _next_free(vs: VsphereConfig, attribute: str, taken: set[str | None]) -> str | None:
    """The lowest free address above every taken one in the attribute's network (None when full)."""
    cidr = vs.networks.rdma.cidr if attribute == "rdmaAddress" else vs.networks.management.vm_cidr
    net = ipaddress.IPv4Network(cidr)
    used = [ipaddress.IPv4Address(a) for a in taken if a is not None and ipaddress.IPv4Address(a) in net]
    candidate = max(used, default=net.network_address) + 1
    while candidate < net.broadcast_address:
        if str(candidate) not in taken:
            return str(candidate)
        candidate += 1
    return None


def render_keeping_edit(old: VsphereConfig, new: VsphereConfig) -> str:
    """keeping_edit as the YAML to put under `config:` in the stack file ("" when nothing moves)."""
    edit = keeping_edit(old, new)
    if not edit:
        return ""
    return yaml.safe_dump({"gpu-lab:vsphere": edit}, sort_keys=False, default_flow_style=None, width=200)
