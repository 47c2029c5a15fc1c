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

- the helper node's address, SSH port or login user: pulumi-command sends a Command's whole
  `connection` as one secret, so no step is replaced when it changes; the helper steps would run
  on the new login while dnsmasq, HAProxy and the published ignition (bootstrap.ign holds the pull
  secret) stay on the old helper, and the running nodes keep the old address as their nameserver
  (a first-boot kernel argument);
- a switch's `os`: its configuration is undone by the old OS's commands, which would then run
  against the new OS.

`identity_of(lab)` states the lab's identity; `identity_problems(old, new)` says, for each change
that cannot be made in place, the key, the old and the new value and what to write instead;
`identity_warnings(old, new)` what the guard could not judge (a section an older gpu-lab wrote that
this one no longer reads). The guard runs twice:

- the engine hands a dynamic provider's `check` the inputs of the last deployment beside the new
  ones, so one `LabIdentity` resource refuses such an edit while `pulumi preview` (and the preview
  `pulumi up` starts with) checks the resources, before any step runs; `make diff` compares the
  same two identities offline;
- the engine skips `check` for a resource that is not targeted (`pulumi up --target`, pulumi/pulumi
  pkg/resource/deploy/step_generator.go: "If not targeted, stub out the provider check") and calls
  it without the old inputs for a resource targeted for replacement (`--replace`, "ignore its old
  state"). So the program also reads the identity the last deployment recorded, before it registers
  anything (`guard_deployed`: the engine's builtin `pulumi:pulumi:readStackResourceOutputs`, served
  by the backend for every operation, targeted or not, pkg/resource/deploy/builtins.go), and stops
  with the same messages.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult
from pydantic import ValidationError

from components.config import LabConfig
from components.model import whole_numbers
from components.vsphere.config import VsphereConfig, node_moves, planned_vms, render_keeping_edit

KIND = "lab-identity"
IDENTITY_KEYS = ("kind", "cluster", "vsphere", "bareMetal", "helper", "switches")
READ_STATE = "pulumi:pulumi:readStackResourceOutputs"
"""The engine's builtin invoke that returns every resource's outputs of a stack's last deployment."""
READ_OUTPUTS = "pulumi:pulumi:readStackOutputs"
"""The builtin invoke behind StackReference: the stack outputs of the last deployment, {} when there is
none. Asked first: READ_STATE dereferences the last deployment without checking that there is one
(pulumi/pulumi pkg/backend/backend.go, GetStackResourceOutputs), which a stack never deployed lacks."""
OUTPUT = "labIdentity"
"""The stack output every deployment of this program has (a digest of the identity), so READ_OUTPUTS
tells a deployed stack from a new one."""
DYNAMIC_PACKAGE = "pulumi-python"
REBUILD = "rebuild the lab on purpose instead (docs/day2.md, \"Take a lab down\")"
ETCD_REPLACEMENT = (
    "a control-plane machine is an etcd member: replace it by the etcd member replacement procedure (Red Hat, "
    "OpenShift Container Platform, \"Replacing an unhealthy etcd member\", https://docs.openshift.com/"
    "container-platform/4.16/backup_and_restore/control_plane_backup_and_restore/"
    "replacing-unhealthy-etcd-member.html), not by editing vsphere.controlPlane.names")
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
    identity: dict[str, Any] = {"cluster": cluster, "vsphere": vsphere, "bareMetal": bare_metal}
    if lab.openshift is not None:
        helper = lab.openshift.helper
        identity["helper"] = {"address": str(helper.address), "port": helper.port, "user": helper.user}
    if lab.switches:
        identity["switches"] = {sw.name: {"os": sw.os} for sw in lab.switches}
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
    old = {vm.name: vm for vm in planned_vms(before, with_bootstrap=False)}
    new = {vm.name: vm for vm in planned_vms(after, with_bootstrap=False)}
    removed = [vm for name, vm in old.items() if name not in new]
    added = [vm for name, vm in new.items() if name not in old]
    problems = []
    gone_cp = [vm.name for vm in removed if vm.role == "control-plane"]
    if gone_cp:
        came = [vm.name for vm in added if vm.role == "control-plane"]
        what = (f"renames control-plane node(s) {', '.join(gone_cp)} to {', '.join(came)}" if came
                else f"removes control-plane node(s) {', '.join(gone_cp)}")
        problems.append(f"vsphere.controlPlane.names: the edit {what}; {ETCD_REPLACEMENT}")
    for new_vm in added:
        for old_vm in removed:
            if old_vm.role == "control-plane":
                continue
            shared = [f"{label} {mine}" for label, mine, theirs in (
                ("management address", new_vm.management_address, old_vm.management_address),
                ("RDMA address", new_vm.rdma_address, old_vm.rdma_address),
                ("MAC", new_vm.mac, old_vm.mac)) if mine is not None and mine == theirs]
            if new_vm.vgpu_profile and old_vm.vgpu_profile and new_vm.host == old_vm.host:
                shared.append(f"the GPU share of host {new_vm.host}")
            if shared:
                problems.append(
                    f"vsphere.{'workers' if new_vm.role == 'worker' else 'controlPlane'}.names: new node "
                    f"{new_vm.name} would take {', '.join(shared)} that node {old_vm.name}, removed in the same "
                    f"`pulumi up`, still holds (the new VM is created before the old one is deleted); "
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

    def warnings(self, olds: dict[str, Any], news: dict[str, Any]) -> list[str]:
        """What the check could not judge (not a gRPC method: `make diff` and guard_deployed print them)."""
        old = _plain(olds)
        return identity_warnings(old, _plain(news)) if old else []

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=_plain(olds) != _plain(news), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(KIND, _plain(props))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(_plain(news))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        return None


def _plain(props: Mapping[str, Any]) -> dict[str, Any]:
    return {k: whole_numbers(v) for k, v in props.items() if k in IDENTITY_KEYS}


_PROVIDER = _IdentityProvider()


def guard_provider() -> pulumi.ProviderResource:
    """The guard's own dynamic provider, configured with nothing: the engine's default one would get
    the whole stack config, secrets included (see components/vsphere/dynamic.py, pyvmomi_provider)."""
    return pulumi.ProviderResource(DYNAMIC_PACKAGE, "lab-guard", {})


class LabIdentity(Resource):
    """The lab's identity in the state; a preview that would change it in place fails, naming the change."""

    def __init__(self, name: str, identity: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(_PROVIDER, name, {"kind": KIND, **identity}, opts)


@dataclass(frozen=True)
class DeployedState:
    """What the stack's last deployment recorded, read once before anything registers."""

    resources: Mapping[str, Mapping[str, Any]] | None
    """URN -> {"type", "outputs"} (the engine's readStackResourceOutputs); None when it could not be read."""
    deployed: bool
    """False for a stack never deployed (nothing to protect, no node that runs)."""
    problem: str = ""
    """Why the state could not be read."""

    def names_of(self, type_: str) -> frozenset[str] | None:
        """The names of the deployed resources of `type_`; None when the state could not be read."""
        if self.resources is None:
            return None
        return frozenset(urn.rsplit("::", 1)[-1] for urn, entry in self.resources.items()
                         if (entry or {}).get("type") == type_)


def read_deployed_state() -> DeployedState:
    """The last deployment's resources and outputs; a failure to read is returned, not raised, so each
    reader decides what is safe without it (the guard warns, the node rolls keep their order)."""
    organization = pulumi.get_organization() or "organization"
    stack = f"{organization}/{pulumi.get_project()}/{pulumi.get_stack()}"
    try:
        outputs = (pulumi.runtime.invoke(READ_OUTPUTS, {"name": stack}).value or {}).get("outputs") or {}
        if not outputs:
            return DeployedState({}, deployed=False)  # never deployed (or by a gpu-lab that exported nothing)
        result = pulumi.runtime.invoke(READ_STATE, {"stackName": stack}).value or {}
    except Exception as err:  # noqa: BLE001 - any failure to read: the readers' safe side, never a silent pass
        return DeployedState(None, deployed=True, problem=f"reading the state of {stack}: {err}")
    return DeployedState(dict(result.get("outputs") or {}), deployed=True)


def guard_deployed(name: str, identity: Mapping[str, Any], state: DeployedState) -> None:
    """Refuse, before anything is registered, an edit the deployed lab cannot take: the identity the
    last deployment recorded (the `name` LabIdentity's state) against `identity`. Holds where the
    resource's check does not run (`--target`, `--replace`; see the module docstring). A deployment
    that recorded none (a new stack) has nothing to protect; an unreadable state is warned about."""
    deployed, why = _deployed_identity(name, state)
    if deployed is None:
        if why:
            pulumi.log.warn(f"lab-identity: the guard cannot read the deployed identity ({why}); only the preview's "
                            "check of lab-identity protects this run, and it does not run under --target or "
                            "--replace")
        return
    for warning in identity_warnings(deployed, identity):
        pulumi.log.warn(f"lab-identity: {warning}")
    problems = identity_problems(deployed, identity)
    if problems:
        raise pulumi.RunError("a running lab cannot take this edit (the deployed lab-identity, read from the stack's "
                              "state, whatever --target or --replace say):\n"
                              + "\n".join(f"  - {problem}" for problem in problems))


def identity_digest(identity: Mapping[str, Any]) -> str:
    """The stack output OUTPUT: which identity the deployment recorded, in short."""
    text = json.dumps(_plain({"kind": KIND, **identity}), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _deployed_identity(name: str, state: DeployedState) -> tuple[dict[str, Any] | None, str]:
    if state.resources is None:
        return None, state.problem
    if not state.deployed:
        return None, ""
    for urn, entry in state.resources.items():
        if urn.endswith(f"::{name}") and (entry or {}).get("type") == f"{DYNAMIC_PACKAGE}:dynamic:Resource":
            outputs = _plain((entry or {}).get("outputs") or {})
            if outputs.get("kind") == KIND:
                return outputs, ""
    return None, f"the stack's state has {len(state.resources)} resource(s) but no {name}"
