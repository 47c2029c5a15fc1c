"""Node identity of the `vsphere` section: where each node is, and the edit that keeps it there.

A node's management address, RDMA address and host belong to its name. The derived forms
({first: ...} addresses, round-robin hosts) give them by position, so removing a node from the
middle of a list moves every later one; listed addresses and `workers.hosts` pin them per node.
These functions let a guard compare the section a lab was built from with the edited one.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import NamedTuple

import yaml

from components.model import AddressRange
from components.vsphere.model import VsphereConfig
from components.vsphere.plan import planned_hosts, planned_vms

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
        return vs.workers.hosts is None
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

