"""`make diff STACK=lab [BASE=<git ref>] [FAIL_ON=replace,reboot,rerun,delete]`: what the engine would do
to a lab built from BASE if the working tree were deployed, offline like `make plan`.

Both programs run under the same mocks (the base commit's program and stack file from a temporary
git worktree, in a subprocess that puts that tree first on sys.path and loads this checkout's
harness), and the two recordings are compared with the rules the engine and the providers apply,
each cited where it is encoded below:

- the engine: URNs and aliases, ignore_changes, replace_on_changes, protect, retain_on_delete,
  deleted_with, explicit providers (`pulumi/pulumi` pkg/resource/deploy/step_generator.go);
- pulumi-command 1.2.1: `triggers` replaces, any other change is an update that runs `update`,
  else `create`, else nothing;
- pulumi-vsphere 4.17 (terraform-provider-vsphere v2.16.1): ForceNew inputs and the VM reboot list;
- pulumi-kubernetes: the fields that replace an object, the Helm Release's, the provider's DiffConfig;
- our dynamic providers (components/vsphere/dynamic.py): their own `diff`, loaded and called.

A value that a replaced (or, for a Command, re-run) resource only knows after the update is unknown
in a real preview: it is unknown here too, in every input that depends on it
(`propertyDependencies`), and the dependent's own rules then decide.

Writes build/<stack>/diff.json: {"base", "stack", "changes": [{"type", "name", "op", "keys",
"effects"}], "moved", "refused", "baseMissing"}. Secrets are compared by a hash and never shown:
`keys` names inputs only. Exit 1 when an effect listed in FAIL_ON occurs, 2 on bad input (an
invalid stack, an unknown BASE or FAIL_ON word), else 0.
"""

from __future__ import annotations

import argparse
import base64
import copy
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pulumi.dynamic import ResourceProvider

from tools.mockrun import Recorded, Run, unwrap_secrets
from tools.plan import describe_assets, tidy_numbers

REPO = Path(__file__).resolve().parent.parent
OPS = ("create", "update", "replace", "delete")
EFFECTS = ("rerun", "reboot", "replace", "delete")
SECRET = "[secret sha256]"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
"""A value not known before the update: the string the engine's wire format uses for it
(`pulumi.runtime.rpc.UNKNOWN`), which is what a dynamic provider's diff receives too."""
ROOT_STACK_TYPE = "pulumi:pulumi:Stack"

Path_ = tuple[str | int, ...]


# ---------------------------------------------------------------- recorded resources, comparable


@dataclass
class Planned:
    """One registered resource in comparable form: secrets replaced by their hash, assets by their content hash."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    provider: str  # the explicit provider's URN, "" for the default provider
    id: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    protect: bool = False
    retain_on_delete: bool = False
    delete_before_replace: bool | None = None
    ignore_changes: list[str] = field(default_factory=list)
    replace_on_changes: list[str] = field(default_factory=list)
    aliases: list[dict[str, Any]] = field(default_factory=list)
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    deleted_with: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    """Derived from secret inputs before hashing: what a provider's rule needs (the kubeconfig's active cluster)."""
    provider_pickle: str | None = field(default=None, repr=False, compare=False)
    """A dynamic resource's serialized provider (in-process recordings only; never written)."""

    def document(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "provider_pickle"}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Planned:
        return cls(**doc)


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def comparable(value: Any) -> Any:
    """Recorded inputs as plain JSON: secrets as {SECRET: sha256 of the value}, assets by content hash."""
    from components.sdk_internals import is_secret_value

    if is_secret_value(value):
        return {SECRET: digest(comparable(value["value"]))}
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return describe_assets(tidy_numbers(value))


def planned(r: Recorded) -> Planned:
    facts: dict[str, Any] = {}
    if r.type == "pulumi:providers:kubernetes":
        facts["activeCluster"] = _active_cluster(unwrap_secrets(r.inputs))
    pickle = None
    if r.type == DYNAMIC_TYPE and r.inputs.get("__provider") is not None:
        pickle = unwrap_secrets(r.inputs["__provider"])
    return Planned(
        urn=r.urn, type=r.type, name=r.name, parent=_parent(r.parent_urn), custom=r.custom,
        provider=r.provider.rsplit("::", 1)[0] if r.provider else "", id=r.id,
        inputs=comparable(r.inputs), outputs=comparable(r.outputs),
        protect=r.protect, retain_on_delete=r.retain_on_delete, delete_before_replace=r.delete_before_replace,
        ignore_changes=list(r.ignore_changes), replace_on_changes=list(r.replace_on_changes),
        aliases=list(r.aliases), property_dependencies=dict(r.property_dependencies), deleted_with=r.deleted_with,
        facts=facts, provider_pickle=pickle,
    )


def snapshot(run: Run) -> list[Planned]:
    return [planned(r) for r in run.resources]


def _parent(urn: str) -> str:
    return "" if not urn or _urn_type(urn) == ROOT_STACK_TYPE else urn


# ---------------------------------------------------------------- URNs and aliases


def _urn_parts(urn: str) -> list[str]:
    return urn.split("::")  # urn:pulumi:<stack>, <project>, <qualified type>, <name>


def _urn_type(urn: str) -> str:
    return _urn_parts(urn)[2].rsplit("$", 1)[-1]


def _urn_name(urn: str) -> str:
    return urn.split("::", 3)[3]


def create_urn(name: str, type_: str, parent: str, project: str, stack: str) -> str:
    """`resource.CreateURN`: the parent's qualified type prefixes the type (`pulumi/pulumi`
    sdk/go/common/resource/urn.go), except under the root Stack."""
    qualified = type_ if not parent or _urn_type(parent) == ROOT_STACK_TYPE else f"{_urn_parts(parent)[2]}${type_}"
    return f"urn:pulumi:{stack}::{project}::{qualified}::{name}"


def alias_urns(r: Planned, parent_alias: str | None) -> list[str]:
    """The URNs the engine looks the resource up by after its own (`generateAliases` and
    `collapseAliasToUrn`, pkg/resource/deploy/step_generator.go): each alias spec with the resource's
    own name, type, parent, project and stack where the spec leaves them out; and, when the parent
    itself was found by an alias, the child under that alias, with the parent's name prefix of the
    child's name renamed too (`inheritedChildAlias`)."""
    stack_part, project, _, _ = _urn_parts(r.urn)
    stack = stack_part[len("urn:pulumi:"):]
    result: list[str] = []

    def add(urn: str) -> None:
        if urn not in result:
            result.append(urn)

    def collapse(spec: Mapping[str, Any]) -> str:
        if spec.get("urn"):
            return str(spec["urn"])
        parent = spec.get("parentUrn") or r.parent
        if spec.get("parentUrn") and parent == r.parent and parent_alias:
            parent = parent_alias
        if spec.get("noParent"):
            parent = ""
        return create_urn(spec.get("name") or r.name, spec.get("type") or r.type, parent,
                          spec.get("project") or project, spec.get("stack") or stack)

    def inherited(child_type: str, child_name: str, alias: str) -> str:
        parent_name = _urn_name(r.parent)
        name = _urn_name(alias) + child_name[len(parent_name):] if child_name.startswith(parent_name) else child_name
        return f"urn:pulumi:{stack}::{project}::{_urn_parts(alias)[2]}${child_type}::{name}"

    for spec in r.aliases:
        add(collapse(spec))
    if r.parent and parent_alias:
        add(inherited(r.type, r.name, parent_alias))
        for spec in r.aliases:
            child = collapse(spec)
            add(inherited(_urn_type(child), _urn_name(child), parent_alias))
    return result


# ---------------------------------------------------------------- property paths


def parse_path(text: str) -> Path_:
    """`resource.ParsePropertyPath`: a.b[0]["key.with.dots"], with * and [*] as wildcards."""
    out: list[str | int] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == ".":
            i += 1
        elif c == "[":
            end = text.index("]", i)
            inner = text[i + 1:end]
            if inner.startswith('"'):
                end = text.index('"]', i + 2) + 1
                out.append(text[i + 2:end - 1])
            elif inner == "*":
                out.append("*")
            else:
                out.append(int(inner))
            i = end + 1
        else:
            j = i
            while j < n and text[j] not in ".[":
                j += 1
            out.append(text[i:j])
            i = j
    return tuple(out)


def format_path(path: Path_) -> str:
    text = ""
    for seg in path:
        if isinstance(seg, int):
            text += f"[{seg}]"
        elif text and any(c in seg for c in ".[]\"*"):
            text += f'["{seg}"]'
        else:
            text += f".{seg}" if text else seg
    return text


def contains(pattern: Path_, path: Path_) -> bool:
    """`PropertyPath.Contains`: path is pattern itself or lies under it; * matches any one segment."""
    return len(pattern) <= len(path) and all(p == "*" or p == s for p, s in zip(pattern, path, strict=False))


def _is_leaf(value: Any) -> bool:
    return not isinstance(value, (dict, list)) or (isinstance(value, dict) and set(value) == {SECRET}) \
        or _is_asset(value)


def _is_asset(value: Any) -> bool:
    return isinstance(value, dict) and ("asset" in value or "archive" in value) and (
        "sha256" in value or "uri" in value or "path" in value or "assets" in value)


_MISSING = object()


def changed_paths(old: Any, new: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every leaf path whose value differs (an unknown new value always differs)."""
    if new == UNKNOWN or (old is _MISSING) != (new is _MISSING):
        return [prefix]
    if _is_leaf(old) or _is_leaf(new) or type(old) is not type(new):
        return [] if old == new else [prefix]
    if isinstance(old, dict):
        paths: list[Path_] = []
        for key in sorted(set(old) | set(new)):
            paths += changed_paths(old.get(key, _MISSING), new.get(key, _MISSING), (*prefix, key))
        return paths
    paths = []
    for i in range(max(len(old), len(new))):
        paths += changed_paths(old[i] if i < len(old) else _MISSING, new[i] if i < len(new) else _MISSING,
                               (*prefix, i))
    return paths


def _get(value: Any, path: Path_) -> Any:
    for seg in path:
        if isinstance(value, dict) and isinstance(seg, str) and seg in value:
            value = value[seg]
        elif isinstance(value, list) and isinstance(seg, int) and 0 <= seg < len(value):
            value = value[seg]
        else:
            return _MISSING
    return value


def _expand(pattern: Path_, value: Any, prefix: Path_ = ()) -> list[Path_]:
    """The concrete paths a pattern with wildcards names in value."""
    if not pattern:
        return [prefix]
    head, rest = pattern[0], pattern[1:]
    if head != "*":
        return _expand(rest, _get(value, (head,)), (*prefix, head))
    keys: Iterable[str | int] = value.keys() if isinstance(value, dict) else range(len(value)) \
        if isinstance(value, list) else ()
    return [p for k in keys for p in _expand(rest, _get(value, (k,)), (*prefix, k))]


def reset(pattern: Path_, old: dict[str, Any], new: dict[str, Any]) -> bool:
    """`processIgnoreChanges` (pkg/resource/deploy/step_generator.go) through `PropertyPath.Reset`
    (sdk/go/common/resource/properties_path.go, `reset`), at pulumi v3.259.0: at the path's last key
    the new inputs take the old value, or lose the key when the old inputs lack it (an input the
    program stopped sending is ignored too); an index or an intermediate key only one side has is a
    path error, which the engine reports and then keeps the change. False on a path error."""
    return bool(pattern) and _reset(pattern, old, new)


def _reset(path: Path_, old: Any, new: Any) -> bool:
    # A secret is a digest here, a leaf: a path into it is not reset (the engine would walk into it).
    key, rest = path[0], path[1:]
    if isinstance(key, int):
        if key < 0:
            return False
        if not isinstance(old, list) or not isinstance(new, list):
            return not isinstance(old, list) and not isinstance(new, list)
        if key >= len(old) and key >= len(new):
            return not rest
        if key >= len(old) or key >= len(new):
            return False
        if not rest:
            new[key] = copy.deepcopy(old[key])
            return True
        return _reset(rest, old[key], new[key])
    if key == "*":
        if not rest:
            if isinstance(new, dict):
                if isinstance(old, dict):
                    new.clear()
                    new.update(copy.deepcopy(old))
                return True
            if isinstance(new, list):
                if isinstance(old, list):
                    new[:min(len(old), len(new))] = copy.deepcopy(old[:len(new)])
                    return len(old) == len(new)
                return True
            return False
        if isinstance(old, dict) and isinstance(new, dict):
            return all(k in new and _reset(rest, old[k], new[k]) for k in old)
        if isinstance(old, list) and isinstance(new, list):
            return all(_reset(rest, o, n) for o, n in zip(old, new, strict=False)) and len(old) == len(new)
        return False
    if not rest:
        if isinstance(old, dict) and key in old:
            if not isinstance(new, dict):
                return False
            new[key] = copy.deepcopy(old[key])
        elif isinstance(new, dict):
            new.pop(key, None)
        return True
    if not isinstance(old, dict) or not isinstance(new, dict):
        return not isinstance(old, dict) and not isinstance(new, dict)
    if key in old and key not in new:
        return False
    if key not in old and key not in new:
        return True
    return _reset(rest, old.get(key, _MISSING), new[key])


# ---------------------------------------------------------------- provider rules


@dataclass
class ProviderDiff:
    changes: bool
    replaces: list[str]
    """The changed keys or paths that force a replacement."""


class Context:
    """What a rule may look up besides the resource: the provider resources of the new program."""

    def __init__(self, new_by_urn: Mapping[str, Planned], inputs_of: Callable[[Planned], dict[str, Any]]):
        self.new_by_urn = new_by_urn
        self.inputs_of = inputs_of

    def provider_inputs(self, r: Planned) -> dict[str, Any]:
        provider = self.new_by_urn.get(r.provider)
        return self.inputs_of(provider) if provider else {}


class Rule:
    """The default for a custom resource: any input change is an in-place update with no effect on the lab."""

    def diff(self, old: Planned, new: Planned, inputs: dict[str, Any], paths: list[Path_],
             ctx: Context) -> ProviderDiff:
        return ProviderDiff(bool(paths), [])

    def effects(self, op: str, old: Planned | None, new: Planned | None, inputs: dict[str, Any],
                paths: list[Path_]) -> list[str]:
        return {"replace": ["replace"], "delete": ["delete"]}.get(op, [])


class ForceNewRule(Rule):
    """A bridged Terraform resource: a change under a ForceNew attribute replaces, anything else updates."""

    def __init__(self, *force_new: str):
        self.force_new = [parse_path(p) for p in force_new]

    def replaced(self, paths: list[Path_]) -> list[str]:
        return sorted({format_path(p) for p in paths for f in self.force_new if contains(f, p)})

    def diff(self, old, new, inputs, paths, ctx):
        return ProviderDiff(bool(paths), self.replaced(paths))


class CommandRule(Rule):
    """pulumi-command v1.2.1, local and remote Command.

    - `triggers` is the only input annotated `provider:"replaceOnChanges"` (provider/pkg/provider/
      common/inputs.go, ResourceInputs); the SDK also sends it as replace_on_changes ["triggers[*]"],
      and pulumi-go-provider v1.3.0's infer diff (infer/resource.go, `diff`) replaces on it and makes
      every other changed input an update ("version" and "__" inputs are not compared).
    - Update runs `update` if set, else `create`, and nothing when neither is set (remote/
      commandController.go and local/commandController.go, `Update`); Create runs `create` if set;
      Delete runs `delete` from the old state (`Delete`).
    """

    def diff(self, old, new, inputs, paths, ctx):
        paths = [p for p in paths if p[0] != "version"]
        return ProviderDiff(bool(paths), sorted({format_path(p) for p in paths if p[0] == "triggers"}))

    def effects(self, op, old, new, inputs, paths):
        runs = (new is not None and op == "create" and inputs.get("create") is not None) or (
            op == "update" and (inputs.get("update") is not None or inputs.get("create") is not None))
        if op == "replace":
            return ["replace"] + (["rerun"] if inputs.get("create") is not None else [])
        if op == "delete":
            return ["delete"]
        return ["rerun"] if runs else []


class CopyToRemoteRule(Rule):
    """pulumi-command v1.2.1 remote.CopyToRemote: `triggers` replaces (remote/copy.go, CopyToRemoteInputs);
    Create copies; Update copies again only when the source's hash or remotePath changed
    (remote/copyController.go, `Update`); a connection change alone copies nothing."""

    def diff(self, old, new, inputs, paths, ctx):
        return ProviderDiff(bool(paths), sorted({format_path(p) for p in paths if p[0] == "triggers"}))

    def effects(self, op, old, new, inputs, paths):
        copies = op in ("create", "replace") or (
            op == "update" and any(p[0] in ("source", "remotePath") for p in paths))
        return (["replace"] if op == "replace" else []) + (["rerun"] if copies else []) + (
            ["delete"] if op == "delete" else [])


# terraform-provider-vsphere v2.16.1 (commit 6e5d67ea, the `upstream` of pulumi-vsphere v4.17.0); Pulumi
# names from pulumi-vsphere's provider/cmd/pulumi-resource-vsphere/schema.json (snake_case to camelCase,
# lists plural: network_interface -> networkInterfaces, disk -> disks).
VM_REBOOT_KEYS = {
    # virtual_machine_config_structure.go: read with getWithRestart/getBoolWithRestart (and
    # getCoresPerSocket), which set reboot_required when they changed
    "guestId", "alternateGuestName", "efiSecureBootEnabled", "enableDiskUuid", "hvMode", "eptRviMode",
    "enableLogging", "vbsEnabled", "vvtdEnabled", "toolsUpgradePolicy", "runToolsScriptsAfterPowerOn",
    "runToolsScriptsAfterResume", "runToolsScriptsBeforeGuestStandby", "runToolsScriptsBeforeGuestShutdown",
    "runToolsScriptsBeforeGuestReboot", "numCoresPerSocket", "memoryHotAddEnabled", "cpuHotAddEnabled",
    "cpuHotRemoveEnabled", "swapPlacementPolicy", "firmware", "nestedHvEnabled", "cpuPerformanceCountersEnabled",
    # expandVAppConfig: any vapp change
    "vapp",
    # resource_vsphere_virtual_machine.go: getEvcMode (evc_mode changed), applyVirtualDevices ->
    # NormalizeBus (SCSI/SATA/NVMe/IDE bus layout), the PCI passthrough, vTPM and video card devices
    "evcMode", "scsiType", "scsiControllerCount", "scsiBusSharing", "sataControllerCount", "nvmeControllerCount",
    "ideControllerCount", "pciDeviceIds", "vtpm", "videoCard",
}
VM_DISK_REBOOT_FIELDS = {"unitNumber", "controllerType", "diskMode", "writeThrough", "diskSharing"}


def vm_reboot_reasons(old: Mapping[str, Any], new: Mapping[str, Any], paths: list[Path_]) -> list[str]:
    """Which changed inputs power-cycle a running VM in terraform-provider-vsphere's Update
    (it shuts the VM down when reboot_required is set and the VM is not powered off)."""
    keys = {p[0] for p in paths}
    reasons = sorted(k for k in keys if k in VM_REBOOT_KEYS)

    def num(inputs: Mapping[str, Any], key: str) -> Any:
        return inputs.get(key, 0)

    def flag(inputs: Mapping[str, Any], key: str) -> bool:
        return inputs.get(key) is True
    # expandExtraConfig: any extra_config change, unless extra_config_reboot_required is false
    if "extraConfig" in keys and new.get("extraConfigRebootRequired") is not False:
        reasons.append("extraConfig")
    # expandCPUCountConfig: more CPUs without (the old) cpu_hot_add_enabled, fewer without cpu_hot_remove_enabled
    if "numCpus" in keys:
        o, n = num(old, "numCpus"), num(new, "numCpus")
        if n == UNKNOWN or (isinstance(o, int) and isinstance(n, int) and (
                (n > o and not flag(old, "cpuHotAddEnabled")) or (n < o and not flag(old, "cpuHotRemoveEnabled")))):
            reasons.append("numCpus")
    # expandMemorySizeConfig: more memory without (the old) memory_hot_add_enabled; less memory always
    if "memory" in keys:
        o, n = num(old, "memory"), num(new, "memory")
        if n == UNKNOWN or (isinstance(o, int) and isinstance(n, int) and (
                (n > o and not flag(old, "memoryHotAddEnabled")) or n < o)):
            reasons.append("memory")
    # getVirtualNuma: num_cores_per_numa_node, from hardware version 20
    if "numCoresPerNumaNode" in keys and (new.get("hardwareVersion") or 0) >= 20:
        reasons.append("numCoresPerNumaNode")
    # Update: a hardware version upgrade
    if "hardwareVersion" in keys:
        o, n = old.get("hardwareVersion"), new.get("hardwareVersion")
        if n == UNKNOWN or (isinstance(n, int) and (not isinstance(o, int) or n > o)):
            reasons.append("hardwareVersion")
    # virtual_machine_disk_subresource.go: unit number or controller (SetRestart), disk_mode,
    # write_through, disk_sharing (GetWithRestart)
    if any(p[0] == "disks" and (len(p) < 3 or p[2] in VM_DISK_REBOOT_FIELDS) and _get(old, p[:2]) is not _MISSING
           and _get(new, p[:2]) is not _MISSING for p in paths):
        reasons.append("disks")
    # virtual_machine_network_interface_subresource.go: an adapter_type change or a removed NIC needs
    # a restart when VMware Tools are not running in the guest (unknown offline: counted); an SR-IOV
    # physical_function change always
    if any(p[0] == "networkInterfaces" and ((len(p) >= 3 and p[2] in ("adapterType", "physicalFunction"))
                                             or _get(new, p[:2]) is _MISSING) for p in paths):
        reasons.append("networkInterfaces")
    return sorted(set(reasons))


class VirtualMachineRule(ForceNewRule):
    """vsphere_virtual_machine: `resourceVSphereVirtualMachineCustomizeDiff` forces a new VM for any
    change under clone.0 except clone.0.timeout and clone.0.customize.0.network_interface; `replace_trigger`
    is ForceNew (virtual_machine_config_structure.go). Everything else updates in place, power-cycling
    the VM for the inputs `vm_reboot_reasons` lists."""

    def __init__(self) -> None:
        super().__init__("replaceTrigger")

    def diff(self, old, new, inputs, paths, ctx):
        replaces = set(self.replaced(paths))
        for p in paths:
            if p[0] == "clone" and not (p[1:2] == ("timeout",) or p[1:3] == ("customize", "networkInterfaces")):
                replaces.add(format_path(p))
        return ProviderDiff(bool(paths), sorted(replaces))

    def effects(self, op, old, new, inputs, paths):
        if op == "update" and old is not None and vm_reboot_reasons(old.inputs, inputs, paths):
            return ["reboot"]
        return super().effects(op, old, new, inputs, paths)


# pulumi-kubernetes provider/pkg/provider/diff.go (`forceNew`, `forceNewProperties`): besides
# .metadata.name and .metadata.namespace, the fields that replace an object, by group/version/kind.
_LABEL_SELECTOR = (".matchExpressions", ".matchExpressions.key", ".matchExpressions.operator",
                   ".matchExpressions.values", ".matchLabels")


def _selector(prefix: str) -> tuple[str, ...]:
    return (prefix, *(prefix + s for s in _LABEL_SELECTOR))


def _containers(*prefixes: str) -> tuple[str, ...]:
    fields = (".args", ".command", ".env", ".env.value", ".image", ".imagePullPolicy", ".lifecycle",
              ".livenessProbe", ".ports", ".readinessProbe", ".resources", ".securityContext", ".stdin",
              ".stdinOnce", ".terminationMessagePath", ".terminationMessagePolicy", ".tty", ".volumeDevices",
              ".volumeMounts", ".workingDir")
    return tuple(p + f for p in prefixes for f in fields)


_APPS = {"DaemonSet": _selector(".spec.selector"), "Deployment": _selector(".spec.selector"),
         "StatefulSet": (".spec.podManagementPolicy", ".spec.revisionHistoryLimit", ".spec.serviceName",
                         ".spec.volumeClaimTemplates", *_selector(".spec.selector"))}
_JOB = (".spec.completions", ".spec.parallelism", ".spec.template", *_selector(".spec.selector"))
_ROLE_BINDING = (".roleRef",)
_CORE = {
    "PersistentVolume": tuple(f".spec.{s}" for s in (
        "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc", "flexVolume", "flocker",
        "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local", "nfs", "photonPersistentDisk",
        "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "vsphereVolume")),
    "PersistentVolumeClaim": (".spec.accessModes", ".spec.storageClassName", ".spec.volumeName",
                              *_selector(".spec.selector")),
    "Pod": (*(f".spec.{s}" for s in (
        "affinity", "automountServiceAccountToken", "dnsConfig", "dnsPolicy", "enableServiceLinks", "hostAliases",
        "hostIPC", "hostNetwork", "hostPID", "hostname", "imagePullSecrets", "nodeName", "nodeSelector", "overhead",
        "preemptionPolicy", "priority", "priorityClassName", "readinessGates", "restartPolicy", "runtimeClassName",
        "schedulerName", "securityContext", "serviceAccount", "serviceAccountName", "shareProcessNamespace",
        "subdomain", "terminationGracePeriodSeconds", "volumes")),
        *_containers(".spec.containers[*]", ".spec.initContainers[*]")),
    "ResourceQuota": (".spec.scopes",),
    "Secret": (".type",),
    "Service": (".spec.clusterIP",),
}
KUBERNETES_FORCE_NEW: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {
    ("apps", "v1"): _APPS, ("apps", "v1beta2"): _APPS,
    ("apps", "v1beta1"): {"StatefulSet": _APPS["StatefulSet"]},
    ("core", "v1"): _CORE,
    ("policy", "v1beta1"): {"PodDisruptionBudget": (".spec",)},
    ("rbac.authorization.k8s.io", "v1"): {"ClusterRoleBinding": _ROLE_BINDING, "RoleBinding": _ROLE_BINDING},
    ("rbac.authorization.k8s.io", "v1beta1"): {"ClusterRoleBinding": _ROLE_BINDING, "RoleBinding": _ROLE_BINDING},
    ("rbac.authorization.k8s.io", "v1alpha1"): {"ClusterRoleBinding": _ROLE_BINDING, "RoleBinding": _ROLE_BINDING},
    ("storage.k8s.io", "v1"): {"StorageClass": (".parameters", ".provisioner")},
    ("batch", "v1"): {"Job": _JOB}, ("batch", "v1beta1"): {"Job": _JOB}, ("batch", "v2alpha1"): {"Job": _JOB},
}


def kubernetes_gvk(type_token: str) -> tuple[str, str, str]:
    """("batch", "v1", "Job") from kubernetes:batch/v1:Job; the core group is "core"."""
    group_version, kind = type_token[len("kubernetes:"):].rsplit(":", 1)
    group, _, version = group_version.rpartition("/")
    return group, version, kind


class KubernetesRule(Rule):
    """pulumi-kubernetes `Diff` (provider/pkg/provider/provider.go): a patch of old against new inputs;
    a change under a `forceNewProperties` path replaces (.metadata.name and .metadata.namespace for every
    kind). A Secret's .type, .stringData and .data replace unless the provider sets enableSecretMutable
    (and the Secret is not immutable); a ConfigMap's .data and .binaryData unless enableConfigMapMutable."""

    def diff(self, old, new, inputs, paths, ctx):
        group, version, kind = kubernetes_gvk(new.type)
        fields = [".metadata.name", ".metadata.namespace"]
        provider = ctx.provider_inputs(new)
        immutable = inputs.get("immutable") is True
        if (group, kind) == ("core", "Secret") and (provider.get("enableSecretMutable") is not True or immutable):
            fields += [".type", ".stringData", ".data"]
        elif kind in KUBERNETES_FORCE_NEW.get((group, version), {}):
            fields += KUBERNETES_FORCE_NEW[(group, version)][kind]
        elif (group, kind) == ("core", "ConfigMap") and (
                provider.get("enableConfigMapMutable") is not True or immutable):
            fields += [".binaryData", ".data"]
        patterns = [parse_path(f[1:]) for f in fields]
        return ProviderDiff(bool(paths), sorted({format_path(p) for p in paths for f in patterns if contains(f, p)}))


class HelmReleaseRule(ForceNewRule):
    """pulumi-kubernetes helmReleaseProvider `Diff` (provider/pkg/provider/helm_release.go): only .name and
    .namespace replace; values, chart and version changes upgrade the release in place."""

    def __init__(self) -> None:
        super().__init__("name", "namespace")


class KubernetesProviderRule(Rule):
    """pulumi-kubernetes `DiffConfig` (provider/pkg/provider/provider.go): a kubeconfig, context or cluster
    not known yet replaces (conservatively); so does a changed clusterIdentifier or renderYamlToDirectory;
    a changed kubeconfig/context/cluster replaces when the active cluster it names changed; anything
    else updates the provider in place."""

    def diff(self, old, new, inputs, paths, ctx):
        keys = {p[0] for p in paths}
        unknown = [k for k in ("kubeconfig", "context", "cluster") if inputs.get(k) == UNKNOWN]
        if unknown:
            return ProviderDiff(True, unknown)
        replaces = [k for k in ("clusterIdentifier", "renderYamlToDirectory") if k in keys]
        if keys & {"kubeconfig", "context", "cluster"} and old.facts.get("activeCluster") != new.facts.get(
                "activeCluster"):
            replaces += sorted(keys & {"kubeconfig", "context", "cluster"})
        return ProviderDiff(bool(paths), replaces)


DYNAMIC_TYPE = "pulumi-python:dynamic:Resource"
# What an update, replacement or delete of one of our dynamic resources does beyond the setting itself:
# a vGPU change power-cycles a running VM (components/vsphere/hostops.py, set_vgpu_profile).
DYNAMIC_REBOOTS = {"vsphere-vm-vgpu": "profile"}
"""Dynamic kinds that power-cycle a VM, and the input whose change does it: vSphere changes a vGPU
device only on a powered-off VM (components/vsphere/hostops.py, set_vgpu_profile), and an update
that finds the same profile changes nothing."""


class DynamicRule(Rule):
    """Our own dynamic providers: the engine calls the provider's `diff(id, olds, news)` (pulumi
    `pulumi.dynamic.__main__`, DynamicResourceProviderServicer.Diff, the provider unpickled from the new
    inputs' __provider); so does this rule. `changes` None falls back to comparing the inputs
    (`diffResource`, step_generator.go: DiffUnknown)."""

    _loaded: dict[str, Any] = {}

    def provider(self, new: Planned) -> Any:
        if not new.provider_pickle:
            raise ValueError(f"{new.urn}: no serialized provider to diff with (a recording from another process?)")
        if new.provider_pickle not in self._loaded:
            import dill  # type: ignore[import-untyped]

            self._loaded[new.provider_pickle] = dill.loads(base64.b64decode(new.provider_pickle))
        return self._loaded[new.provider_pickle]

    def diff(self, old, new, inputs, paths, ctx):
        def plain(values: Mapping[str, Any]) -> dict[str, Any]:
            return {k: (f"sha256:{v[SECRET]}" if isinstance(v, dict) and set(v) == {SECRET} else v)
                    for k, v in values.items() if k != "__provider"}
        result = self.provider(new).diff(old.id, plain(old.inputs), plain(inputs))
        if result.changes is None:
            return ProviderDiff(bool(paths), list(result.replaces or []))
        return ProviderDiff(bool(result.changes), list(result.replaces or []))

    def check(self, old: Planned, new: Planned, inputs: dict[str, Any]) -> list[str]:
        """The provider's `check(olds, news)`, which the engine calls before any step of a preview
        (`DynamicResourceProviderServicer.Check`): a failure stops the preview. Our identity guard
        (components/identity.py) refuses an edit a running lab cannot take there."""
        def plain(values: Mapping[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in values.items() if k != "__provider"}
        provider = self.provider(new)
        if type(provider).check is ResourceProvider.check:
            return []
        return [f.reason for f in provider.check(plain(old.inputs), plain(inputs)).failures or []]

    def effects(self, op, old, new, inputs, paths):
        r = new or old
        kind = r.inputs.get("kind") if r is not None else None
        trigger = DYNAMIC_REBOOTS.get(str(kind))
        rebooted = trigger is not None and (op in ("replace", "delete")
                                           or (op == "update" and any(p[:1] == (trigger,) for p in paths)))
        extra = ["reboot"] if rebooted else []
        return sorted(set(super().effects(op, old, new, inputs, paths) + extra), key=EFFECTS.index)


RULES: dict[str, Rule] = {
    "command:local:Command": CommandRule(),
    "command:remote:Command": CommandRule(),
    "command:remote:CopyToRemote": CopyToRemoteRule(),
    "vsphere:index/virtualMachine:VirtualMachine": VirtualMachineRule(),
    # ForceNew attributes (resource_vsphere_<name>.go and the schemas it merges)
    "vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch": ForceNewRule("datacenterId", "folder"),
    "vsphere:index/distributedPortGroup:DistributedPortGroup": ForceNewRule("distributedVirtualSwitchUuid"),
    "vsphere:index/vnic:Vnic": ForceNewRule("host", "netstack"),
    "vsphere:index/computeClusterVmAntiAffinityRule:ComputeClusterVmAntiAffinityRule": ForceNewRule("computeClusterId"),
    "kubernetes:helm.sh/v3:Release": HelmReleaseRule(),
    "pulumi:providers:kubernetes": KubernetesProviderRule(),
    DYNAMIC_TYPE: DynamicRule(),
}
DEFAULT_RULE = Rule()
KUBERNETES_RULE = KubernetesRule()


def rule_for(type_token: str) -> Rule:
    if type_token in RULES:
        return RULES[type_token]
    if type_token.startswith("kubernetes:") and not type_token.startswith("kubernetes:helm.sh/"):
        return KUBERNETES_RULE
    return DEFAULT_RULE


# ---------------------------------------------------------------- the engine's step generation


@dataclass
class Step:
    urn: str
    type: str
    name: str
    op: str
    keys: list[str]
    effects: list[str]
    group: str
    notes: list[str] = field(default_factory=list)
    refused: str = ""
    moved_from: str = ""

    def entry(self) -> dict[str, Any]:
        return {"type": self.type, "name": self.name, "op": self.op, "keys": self.keys, "effects": self.effects}


@dataclass
class _Seen:
    step: Step | None
    old: Planned | None
    inputs: dict[str, Any]
    volatile: list[Any]
    """Output values a real preview would not know yet (the id, outputs that do not mirror an input)."""


def _volatile(r: Planned, with_id: bool) -> list[Any]:
    values: list[Any] = [r.id] if with_id and r.id else []
    values += [v for k, v in sorted(r.outputs.items())
               if r.inputs.get(k, _MISSING) != v and v not in (None, "", [], {})]
    return values


def _unknown_where(value: Any, volatile: list[Any]) -> tuple[Any, bool]:
    """value with each leaf that is (or contains) a volatile value made unknown; False when none was."""
    if any(value == v for v in volatile):
        return UNKNOWN, True
    if isinstance(value, str):
        hit = any(isinstance(v, str) and len(v) >= 6 and v in value for v in volatile)
        return (UNKNOWN, True) if hit else (value, False)
    if isinstance(value, dict) and not _is_leaf(value):
        out, hit = {}, False
        for k, v in value.items():
            out[k], h = _unknown_where(v, volatile)
            hit = hit or h
        return out, hit
    if isinstance(value, list):
        items = [_unknown_where(v, volatile) for v in value]
        return [v for v, _ in items], any(h for _, h in items)
    return value, False


class Engine:
    """Step generation of `pulumi preview` for a lab built from `base`, given the program's new registrations."""

    def __init__(self, base: list[Planned], new: list[Planned]):
        self.base = {r.urn: r for r in base}
        self.new = {r.urn: r for r in new}
        self.order = [r.urn for r in new]
        self.seen: dict[str, _Seen] = {}
        self.claimed: dict[str, str] = {}  # base URN -> new URN
        self.refusals: list[str] = []
        """What the providers' check refuses (a preview fails with it, before any step runs)."""
        self.ctx = Context(self.new, lambda r: self.visit(r.urn).inputs)

    def group(self, urn: str, table: Mapping[str, Planned]) -> str:
        r = table[urn]
        while r.parent and r.parent in table:
            r = table[r.parent]
        return r.name

    def visit(self, urn: str) -> _Seen:
        if urn in self.seen:
            return self.seen[urn]
        r = self.new[urn]
        parent = self.visit(r.parent) if r.parent in self.new else None
        parent_alias = parent.old.urn if parent and parent.old and parent.old.urn != r.parent else None
        old = self.base.get(urn)
        if old is None:
            old = next((self.base[a] for a in alias_urns(r, parent_alias) if a in self.base), None)
        if old is not None:
            self.claimed[old.urn] = urn
        self.seen[urn] = seen = _Seen(None, old, dict(r.inputs), [])  # a cycle cannot happen; this guards it
        seen.inputs = inputs = self.preview_inputs(r, old)
        rule = rule_for(r.type)
        group = self.group(urn, self.new)
        if old is not None and isinstance(rule, DynamicRule):
            self.refusals += [f"{r.name}: {reason}" for reason in rule.check(old, r, inputs)]
        if old is None:
            seen.step = Step(urn, r.type, r.name, "create", [], rule.effects("create", None, r, inputs, []), group)
            seen.volatile = _volatile(r, with_id=True)
            return seen
        paths = [p for p in changed_paths(old.inputs, inputs) if not str(p[0]).startswith("__")]
        provider_replaced = r.custom and self.provider_replaces(old, r)
        moved = old.urn if old.urn != urn else ""
        if not r.custom:  # a component: `diff` in step_generator.go compares the inputs, nothing else
            if paths:
                seen.step = Step(urn, r.type, r.name, "update", _keys(paths), [], group, moved_from=moved)
            elif moved:
                seen.step = Step(urn, r.type, r.name, "same", [], [], group, moved_from=moved)
            return seen
        result = rule.diff(old, r, inputs, paths, self.ctx) if paths else ProviderDiff(False, [])
        replace_on_changes = [parse_path(p) for p in r.replace_on_changes]
        forced = [p for p in paths for pattern in replace_on_changes if contains(pattern, p)]
        replaced = provider_replaced or bool(result.replaces) or bool(forced)
        if not (result.changes or replaced):
            if moved:
                seen.step = Step(urn, r.type, r.name, "same", [], [], group, moved_from=moved)
            return seen
        op = "replace" if replaced else "update"
        step = Step(urn, r.type, r.name, op, _keys(paths), rule.effects(op, old, r, inputs, paths), group,
                    moved_from=moved)
        if provider_replaced:
            step.notes.append("its provider is replaced")
        if op == "replace" and r.protect and old.protect:
            step.refused = "protected: the engine refuses to replace it (unprotect it first)"
        if op == "replace" and old.retain_on_delete:
            step.notes.append("retain_on_delete: the old one is left in place")
        if op == "update" and r.type == "vsphere:index/virtualMachine:VirtualMachine" and step.effects:
            step.notes.append("power-cycled for " + ", ".join(vm_reboot_reasons(old.inputs, inputs, paths)))
        seen.step = step
        if op == "replace":
            seen.volatile = _volatile(r, with_id=True)
        elif r.type.startswith("command:") and step.effects:
            # infer marks the outputs that do not mirror an input unknown in a preview of an update
            # (pulumi-go-provider infer/resource.go, `markComputed`): a Command's stdout and stderr
            seen.volatile = _volatile(r, with_id=False)
        return seen

    def preview_inputs(self, r: Planned, old: Planned | None) -> dict[str, Any]:
        """The inputs as the engine diffs them in a preview: values from resources whose outputs are not
        known yet made unknown (propertyDependencies), then the ignore_changes paths reset to the old
        values (`processIgnoreChanges`, applied before the provider's Diff)."""
        inputs = copy.deepcopy(r.inputs)
        for key, deps in r.property_dependencies.items():
            if key not in inputs:
                continue
            volatile = [v for d in deps if d in self.new and d != r.urn for v in self.visit(d).volatile]
            if not volatile:
                continue
            value, hit = _unknown_where(inputs[key], volatile)
            inputs[key] = value if hit else UNKNOWN
        if old is not None:
            for pattern in r.ignore_changes:
                reset(parse_path(pattern), old.inputs, inputs)
        return inputs

    def provider_replaces(self, old: Planned, new: Planned) -> bool:
        """`providerChanged` (step_generator.go): a resource whose provider reference changed is replaced
        when the new provider's DiffConfig says replace. A provider replaced in this preview has an unknown
        id, so its reference changes and its DiffConfig (the reason it is replaced) replaces its resources."""
        if not new.provider:
            return False
        provider = self.visit(new.provider)
        if old.provider and provider.old is not None and provider.old.urn == old.provider:
            return provider.step is not None and provider.step.op == "replace"
        if old.provider == new.provider:
            return False
        # Another provider: pulumi-python has no DiffConfig (components/vsphere/dynamic.py, pyvmomi_provider);
        # for the others, their DiffConfig on the old provider's inputs, or a replace when that was the
        # default provider (its config is the stack's, which the mocks do not record).
        if _urn_type(new.provider) == "pulumi:providers:pulumi-python":
            return False
        previous = self.base.get(old.provider)
        if previous is None or _urn_type(old.provider) != _urn_type(new.provider):
            return True
        inputs = provider.inputs
        paths = changed_paths(previous.inputs, inputs)
        return bool(rule_for(_urn_type(new.provider)).diff(previous, self.new[new.provider], inputs, paths,
                                                           self.ctx).replaces)

    def run(self) -> list[Step]:
        steps = [s.step for urn in self.order if (s := self.visit(urn)).step is not None]
        for urn, old in self.base.items():
            if urn in self.claimed:
                continue
            step = Step(urn, old.type, old.name, "delete", [], [], self.group(urn, self.base))
            if old.retain_on_delete:
                step.notes.append("retain_on_delete: left in place, only dropped from the state")
            elif old.deleted_with and old.deleted_with in self.base and old.deleted_with not in self.claimed:
                step.notes.append(f"deleted with {_urn_name(old.deleted_with)}: no delete of its own")
            elif old.custom:
                step.effects = rule_for(old.type).effects("delete", old, None, old.inputs, [])
            if old.protect:
                step.refused = "protected: the engine refuses to delete it (unprotect it first)"
            steps.append(step)
        return sorted(steps, key=lambda s: (s.urn, OPS.index(s.op) if s.op in OPS else -1))


def _keys(paths: list[Path_]) -> list[str]:
    return sorted({str(p[0]) for p in paths})


def steps_between(base: list[Planned], new: list[Planned]) -> list[Step]:
    return Engine(base, new).run()


def refusals(base: Run, new: Run) -> list[str]:
    """What the preview of `new` on a lab built from `base` would refuse before any step runs (the
    providers' check: the identity guard's messages), as `make diff` prints them."""
    engine = Engine(snapshot(base), snapshot(new))
    engine.run()
    return engine.refusals


def changes(base: Run, new: Run) -> list[dict[str, Any]]:
    """diff.json's `changes` for a lab built from `base` and updated to `new` (both recorded by
    tools.mockrun.run_program): {"type", "name", "op", "keys", "effects"} per resource that is not
    unchanged, in URN order."""
    return [s.entry() for s in steps_between(snapshot(base), snapshot(new)) if s.op in OPS]


def document(steps: list[Step], base: str, stack: str, base_missing: bool = False) -> dict[str, Any]:
    return {
        "base": base,
        "stack": stack,
        "baseMissing": base_missing,
        "changes": [s.entry() for s in steps if s.op in OPS],
        "moved": [{"from": s.moved_from, "to": s.urn} for s in steps if s.moved_from],
        "refused": [{"type": s.type, "name": s.name, "op": s.op, "reason": s.refused} for s in steps if s.refused],
    }


# ---------------------------------------------------------------- kubeconfig facts


def _active_cluster(inputs: Mapping[str, Any]) -> str | None:
    """A hash of the cluster entry the kubeconfig's active context names (DiffConfig's
    getActiveClusterFromConfig), None when it cannot be read."""
    try:
        config = yaml.safe_load(inputs.get("kubeconfig") or "")
        context_name = inputs.get("context") or config.get("current-context")
        context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
        cluster_name = inputs.get("cluster") or context["cluster"]
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == cluster_name)
        return digest(cluster)
    except Exception:  # noqa: BLE001 - any unreadable kubeconfig: unknown
        return None


# ---------------------------------------------------------------- the command line


class BadInput(Exception):
    """A message for the user, exit status 2."""


def parse_fail_on(text: str) -> list[str]:
    words = [w.strip() for w in text.split(",") if w.strip()]
    unknown = [w for w in words if w not in EFFECTS]
    if unknown:
        raise BadInput(f"FAIL_ON: unknown effect {', '.join(repr(w) for w in unknown)}; "
                       f"allowed: {', '.join(EFFECTS)} (comma-separated, any subset)")
    return words


def resolve_base(ref: str) -> str:
    from tools.releases import UnknownRelease, resolve_release  # a tag, else release/releases.txt
    try:
        return resolve_release(ref, REPO)
    except UnknownRelease as err:
        raise BadInput(f"BASE: {err}") from None


def base_snapshot(commit: str, stack: str) -> list[Planned] | None:
    """The stack as planned at `commit`: its program and stack file in a temporary worktree, run by
    this checkout's harness in a subprocess. None when the stack file does not exist there."""
    with tempfile.TemporaryDirectory(prefix="gpu-lab-diff-") as tmp:
        tree = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--quiet", "--detach", str(tree), commit],
                       check=True, capture_output=True)
        try:
            if not (tree / f"Pulumi.{stack}.yaml").exists():
                return None
            done = subprocess.run([sys.executable, str(REPO / "tools" / "plan_tree.py"), str(tree), stack],
                                  capture_output=True, text=True, cwd=tree,
                                  env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
            if done.returncode != 0:
                raise BadInput(f"the stack {stack!r} does not plan at {commit[:12]}:\n"
                               + (done.stderr.strip().splitlines() or ["(no message)"])[-1])
            return [Planned.from_document(d) for d in json.loads(done.stdout)]
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                           capture_output=True)


def table(steps: list[Step], stack: str, base: str, ref: str, base_missing: bool) -> list[str]:
    lines = [f"make diff: stack {stack!r}, base {base[:12]} ({ref}) -> working tree"]
    if base_missing:
        lines.append(f"the stack {stack!r} does not exist at {ref}: every resource is a create")
    shown = [s for s in steps if s.op in OPS or s.moved_from]
    if not shown:
        lines.append("no changes: the engine would leave a lab built from the base as it is")
        return lines
    groups: dict[str, list[Step]] = {}
    for s in shown:
        groups.setdefault(s.group, []).append(s)
    width = max(len(s.name) for s in shown)
    for group in sorted(groups):
        lines.append(f"\n{group}")
        for s in groups[group]:
            what = s.op if s.op in OPS else "moved"
            row = f"  {what:<8} {s.name:<{width}}  {s.type}"
            if s.keys:
                row += f"  keys: {', '.join(s.keys)}"
            if s.effects:
                row += f"  effects: {', '.join(s.effects)}"
            lines.append(row)
            for note in s.notes:
                lines.append(f"           ({note})")
            if s.moved_from:
                lines.append(f"           (alias of {s.moved_from})")
            if s.refused:
                lines.append(f"           REFUSED: {s.refused}")
    counts = {op: sum(1 for s in steps if s.op == op) for op in OPS}
    effects = {e: sum(1 for s in steps if e in s.effects) for e in EFFECTS}
    lines.append("\n" + ", ".join(f"{n} to {op}" for op, n in counts.items() if n)
                 + ("; effects: " + ", ".join(f"{e} {n}" for e, n in effects.items() if n) if any(effects.values())
                    else "; no effect on the lab beyond the updates"))
    refused = [s for s in steps if s.refused]
    if refused:
        lines.append(f"{len(refused)} protected resource(s) would stop `pulumi up` (see REFUSED)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="lab")
    parser.add_argument("--stack-file", type=Path, help="the working side reads this file, not Pulumi.<stack>.yaml")
    parser.add_argument("--base", default="HEAD", help="git ref of the lab as built (default HEAD)")
    parser.add_argument("--fail-on", default="", help="comma-separated effects that make the exit status 1")
    parser.add_argument("--out", type=Path, help="output directory (default build/<stack>)")
    args = parser.parse_args(argv)
    out = args.out or Path("build") / args.stack
    started = time.perf_counter()
    try:
        fail_on = parse_fail_on(args.fail_on)
        commit = resolve_base(args.base)
        with _Background(lambda: base_snapshot(commit, args.stack)) as base_job:
            new = _plan_working_tree(args.stack, args.stack_file)
            base = base_job.result()
    except BadInput as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    engine = Engine(base or [], new)
    steps = engine.run()
    if engine.refusals:
        print("error: a running lab cannot take this edit; `pulumi preview` would refuse it too:", file=sys.stderr)
        print("\n".join(f"  - {reason}" for reason in engine.refusals), file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    doc = document(steps, commit, args.stack, base_missing=base is None)
    (out / "diff.json").write_text(json.dumps(doc, indent=2) + "\n")
    print("\n".join(table(steps, args.stack, commit, args.base, base is None)))
    print(f"diff written to {out / 'diff.json'} ({time.perf_counter() - started:.2f} s)")
    hit = sorted({e for s in steps for e in s.effects if e in fail_on}, key=EFFECTS.index)
    if hit:
        print(f"FAIL_ON: {', '.join(hit)} would happen", file=sys.stderr)
        return 1
    return 0


def _plan_working_tree(stack: str, stack_file: Path | None = None) -> list[Planned]:
    from components.model import ConfigError
    from tools.mockrun import run_program
    from tools.stackfile import load_stack_config, offline_secrets

    try:
        config = load_stack_config(stack, stack_file)
        return snapshot(run_program(config, stack=stack, secrets=offline_secrets(config)))
    except ConfigError as err:
        raise BadInput(str(err)) from None
    except Exception as err:
        if type(err).__name__ == "RunError":
            raise BadInput(str(err)) from None
        raise


class _Background:
    """Runs a function on a thread (the base plan is a subprocess: it overlaps with the in-process plan)."""

    def __init__(self, fn: Callable[[], Any]):
        import threading

        self.fn = fn
        self.value: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.value = self.fn()
        except BaseException as err:  # noqa: BLE001 - re-raised in result()
            self.error = err

    def __enter__(self) -> _Background:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.thread.join()

    def result(self) -> Any:
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.value


if __name__ == "__main__":
    sys.exit(main())
