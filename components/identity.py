"""LabIdentity: what a running lab cannot change in place, and the guard that refuses such a change.

Some edits of the stack file are fine on paper and wrong for a lab that runs:

- the cluster's name, base domain, networks, network type, platform or topology: the install runs
  once (components/openshift/component.py), so DNS, HAProxy and the certificates would no longer
  agree with the cluster;
- a node's address: its ignition kernel arguments are first-boot inputs, its DNS name and CSRs
  were made for the old one;
- a node moved implicitly: worker addresses given as `{first: ...}` and hosts given round-robin
  are positional, so removing a worker from the middle of `names` would move every later worker.

`identity_of(plan)` states the lab's identity; `identity_problems(old, new)` says, for each change
that cannot be made in place, the key, the old and the new value and what to write instead. The
engine hands a dynamic provider's `check` the inputs of the last deployment beside the new ones,
so one `LabIdentity` resource refuses such an edit while `pulumi preview` (and the preview `pulumi
up` starts with) checks the resources, before any step runs. `make diff` compares the same two
identities offline.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from components.lab_plan import LabPlan

KIND = "lab-identity"
DYNAMIC_PACKAGE = "pulumi-python"
REBUILD = "rebuild the lab on purpose instead (docs/day2.md, \"Take a lab down\")"

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


def identity_of(plan: LabPlan) -> dict[str, Any]:
    """The lab's identity as the guard's inputs: the cluster (when there is one) and every node.

    Nodes are the VMs that exist now (the bootstrap VM comes and goes by design, so it is left
    out) and the cluster's bare-metal nodes; each with the config key it is written under and
    its position there, so a refusal can say which lists to write.
    """
    nodes: dict[str, dict[str, Any]] = {}
    if plan.vsphere is not None:
        positions: dict[str, int] = {}
        for vm in plan.vsphere.vms:
            if vm.role == "bootstrap":
                continue
            group = "vsphere.workers" if vm.role == "worker" else "vsphere.controlPlane"
            positions[group] = positions.get(group, -1) + 1
            nodes[vm.name] = {"group": group, "position": positions[group], "address": vm.management_address,
                              "rdmaAddress": vm.rdma_address, "host": vm.host}
    cluster = None
    if plan.cluster is not None:
        oc = plan.cluster.config
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
        for i, node in enumerate(oc.nodes):
            if node.platform == "baremetal" and node.role != "bootstrap":
                nodes[node.name] = {"group": "openshift.nodes", "position": i,
                                    "address": str(node.address) if node.address else None,
                                    "rdmaAddress": None, "host": None}
    return {"cluster": cluster, "nodes": nodes}


def identity_problems(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Every change from `old` to `new` that a running lab cannot take, as messages; [] when none."""
    problems = _cluster_problems(old.get("cluster"), new.get("cluster"))
    old_nodes: Mapping[str, Mapping[str, Any]] = old.get("nodes") or {}
    new_nodes: Mapping[str, Mapping[str, Any]] = new.get("nodes") or {}
    membership_changed = set(old_nodes) != set(new_nodes)
    moved: dict[str, list[str]] = {}
    for name in sorted(set(old_nodes) & set(new_nodes)):
        before, after = old_nodes[name], new_nodes[name]
        changes = [f"{label} {before.get(key)} -> {after.get(key)}"
                   for key, label in (("address", "address"), ("rdmaAddress", "RDMA address"))
                   if before.get(key) != after.get(key)]
        # An explicit host change alone is a migration the provider makes in place; with a node
        # added or removed in the same edit it is the positional round-robin moving workers.
        if before.get("host") != after.get("host") and (changes or membership_changed):
            changes.append(f"host {before.get('host')} -> {after.get('host')}")
        if changes:
            moved.setdefault(str(after.get("group")), []).append(f"{name} ({', '.join(changes)})")
    for group, entries in sorted(moved.items()):
        why = ("the edit adds or removes a node and the positional {first: ...} addresses or the round-robin "
               "hosts move the others" if membership_changed else "a running node keeps its addresses")
        problems.append(f"{group}: running nodes would move: {'; '.join(entries)}; {why}. "
                        f"{_keeping_edit(group, old_nodes, new_nodes)}")
    return problems


def _cluster_problems(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    if old is None:
        return []
    if new is None:
        return [f"openshift: the section is gone but a cluster is installed; put it back, or {REBUILD}"]
    return [f"{path}: {old.get(key)!r} -> {new.get(key)!r}: the cluster is installed once and cannot take this "
            f"change in place; put {old.get(key)!r} back, or {REBUILD}"
            for key, path in CLUSTER_KEYS.items() if old.get(key) != new.get(key)]


def _keeping_edit(group: str, old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]) -> str:
    """The lists that keep every running node of `group` where it is, new nodes as planned."""
    if group == "openshift.nodes":
        return ("Set the address back; to re-address a node, remove it in one `pulumi up` (it is drained) "
                "and add it with its new address in the next.")
    members = sorted((n for n in new if new[n].get("group") == group), key=lambda n: new[n]["position"])
    kept = {n: old[n] if n in old else new[n] for n in members}
    keys = [("managementAddresses", "address"), ("rdmaAddresses", "rdmaAddress"), ("hosts", "host")]
    if group != "vsphere.workers":
        keys = keys[:1]
    lines = [f"{option}: [{', '.join(str(kept[n].get(key)) for n in members)}]"
             for option, key in keys if any(kept[n].get(key) for n in members)]
    taken = [n for n in members if n not in old
             and any(new[n].get(k) == old[m].get(k) for m in old for k in ("address", "rdmaAddress") if new[n].get(k))]
    clash = f" ({', '.join(taken)}: pick a free address, it has one of a running node)" if taken else ""
    return f"Keep them with explicit lists under {group}, in the order of names: {'; '.join(lines)}{clash}."


class _IdentityProvider(ResourceProvider):
    """Holds the identity in the state; its check refuses a change a running lab cannot take."""

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        old, new = _plain(olds), _plain(news)
        if not old:  # created now: nothing runs yet to protect
            return CheckResult(news, [])
        # An empty property name: the engine then reports the reason alone, not the whole property value.
        return CheckResult(news, [CheckFailure("", problem) for problem in identity_problems(old, new)])

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=_plain(olds) != _plain(news), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(KIND, _plain(props))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(_plain(news))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        return None


def _plain(props: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in props.items() if k in ("kind", "cluster", "nodes")}


_PROVIDER = _IdentityProvider()


def guard_provider() -> pulumi.ProviderResource:
    """The guard's own dynamic provider, configured with nothing: the engine's default one would get
    the whole stack config, secrets included (see components/vsphere/dynamic.py, pyvmomi_provider)."""
    return pulumi.ProviderResource(DYNAMIC_PACKAGE, "lab-guard", {})


class LabIdentity(Resource):
    """The lab's identity in the state; a preview that would change it in place fails, naming the change."""

    def __init__(self, name: str, identity: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(_PROVIDER, name, {"kind": KIND, **identity}, opts)
