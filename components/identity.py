"""LabIdentity: what a running lab cannot change in place, and the guard that refuses such a change.

Some edits of the stack file are fine on paper and wrong for a lab that runs:

- the cluster's name, base domain, networks, network type, platform or topology: the install runs
  once (components/openshift/component.py), so DNS, HAProxy and the certificates would no longer
  agree with the cluster;
- a node's address: its ignition kernel arguments are first-boot inputs, its DNS name and CSRs
  were made for the old one;
- a node moved implicitly: worker addresses given as `{first: ...}` and hosts given round-robin
  are positional, so removing a worker from the middle of `names` would move every later worker
  (components/vsphere/config.py, node_moves and the lists that keep them, render_keeping_edit).

`identity_of(lab)` states the lab's identity; `identity_problems(old, new)` says, for each change
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
from pydantic import ValidationError

from components.config import LabConfig
from components.vsphere.config import VsphereConfig, node_moves, render_keeping_edit

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


def identity_of(lab: LabConfig) -> dict[str, Any]:
    """The lab's identity as the guard's inputs: the cluster, the vSphere section (its nodes' places
    follow from it: components/vsphere/config.py, node_identities) and the bare-metal nodes."""
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
    return {"cluster": cluster, "vsphere": vsphere, "bareMetal": bare_metal}


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
    return problems


def _vsphere_problems(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    if not old or not new:
        return []
    try:
        before = VsphereConfig.model_validate(old)
    except ValidationError:  # a section written by an older gpu-lab the model no longer reads
        return []
    after = VsphereConfig.model_validate(new)
    moves = node_moves(before, after)
    problems = []
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


def _cluster_problems(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    if old is None:
        return []
    if new is None:
        return [f"openshift: the section is gone but a cluster is installed; put it back, or {REBUILD}"]
    return [f"{path}: {old.get(key)!r} -> {new.get(key)!r}: the cluster is installed once and cannot take this "
            f"change in place; put {old.get(key)!r} back, or {REBUILD}"
            for key, path in CLUSTER_KEYS.items() if old.get(key) != new.get(key)]


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
    return {k: v for k, v in props.items() if k in ("kind", "cluster", "vsphere", "bareMetal")}


_PROVIDER = _IdentityProvider()


def guard_provider() -> pulumi.ProviderResource:
    """The guard's own dynamic provider, configured with nothing: the engine's default one would get
    the whole stack config, secrets included (see components/vsphere/dynamic.py, pyvmomi_provider)."""
    return pulumi.ProviderResource(DYNAMIC_PACKAGE, "lab-guard", {})


class LabIdentity(Resource):
    """The lab's identity in the state; a preview that would change it in place fails, naming the change."""

    def __init__(self, name: str, identity: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(_PROVIDER, name, {"kind": KIND, **identity}, opts)
