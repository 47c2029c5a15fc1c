"""The providers' rules: how each provider diffs a resource's inputs (what updates in place, what
replaces) and what a step does to a running lab (reruns a script, power-cycles a VM), each rule
citing the provider source it follows."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi.dynamic import ResourceProvider

from components.addons.jobs import LABEL as ACCEPTANCE_LABEL
from components.dynamic.roll import CLUSTER_GONE, ROLLED, cluster_gone, differences
from components.dynamic.roll import KIND as ROLL_KIND
from components.dynamic.vgpu import VgpuProfileProvider
from components.vsphere.provider_facts import (
    FORCE_NEW,
    MIGRATE_INPUTS,
    NETWORK_INPUTS,
    ROLLED_VM_SETTINGS,
    SOURCES,
    VIRTUAL_MACHINE,
    VM_CLONE_IN_PLACE,
    VM_DISK_REBOOT_FIELDS,
    VM_REBOOT_KEYS,
)
from components.vsphere.vms import TYPE as LAB_VMS
from tools.diff.paths import (
    _MISSING,
    DYNAMIC_TYPE,
    EFFECTS,
    SECRET,
    UNKNOWN,
    Path_,
    _get,
    contains,
    format_path,
    parse_path,
    touches,
)
from tools.diff.recording import Planned

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
    """The default for a custom resource: any input change is an in-place update with no effect on the lab.
    Every type the program registers has an explicit rule (`explicit_rule`); this one is the fallback for
    a type added without one, which tests/tools/test_rule_coverage.py refuses."""

    source = ""
    """The provider source the rule follows: repository and file."""

    def diff(self, old: Planned, new: Planned, inputs: dict[str, Any], paths: list[Path_],
             ctx: Context) -> ProviderDiff:
        return ProviderDiff(bool(paths), [])

    def effects(self, op: str, old: Planned | None, new: Planned | None, inputs: dict[str, Any],
                paths: list[Path_]) -> list[str]:
        return {"replace": ["replace"], "delete": ["delete"]}.get(op, [])


class ForceNewRule(Rule):
    """A bridged Terraform resource: a change under a ForceNew attribute replaces, anything else updates."""

    def __init__(self, *force_new: str, source: str = ""):
        self.force_new = [parse_path(p) for p in force_new]
        self.source = source

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

    source = ("pulumi/pulumi-command provider/pkg/provider/common/inputs.go, remote/commandController.go, "
              "local/commandController.go")

    def diff(self, old, new, inputs, paths, ctx):
        paths = [p for p in paths if p[0] != "version"]
        return ProviderDiff(bool(paths), sorted({format_path(p) for p in paths if p[0] == "triggers"}))

    def effects(self, op, old, new, inputs, paths):
        runs = (new is not None and op == "create" and inputs.get("create") is not None) or (
            op == "update" and (inputs.get("update") is not None or inputs.get("create") is not None))
        if op == "replace":
            return ["replace"] + (["rerun"] if inputs.get("create") is not None else [])
        if op == "delete":
            # A node's removal (components/openshift/scripts/remove-node.sh) reads GPU_LAB_CLUSTER_GONE
            # from the environment of the run: with it, the node's machine goes without a drain.
            undrained = old is not None and CLUSTER_GONE in str(old.inputs.get("delete") or "") and cluster_gone()
            return ["delete", *(["undrained"] if undrained else [])]
        return ["rerun"] if runs else []


class CopyToRemoteRule(Rule):
    """pulumi-command v1.2.1 remote.CopyToRemote: `triggers` replaces (remote/copy.go, CopyToRemoteInputs);
    Create copies; Update copies again only when the source's hash or remotePath changed
    (remote/copyController.go, `Update`); a connection change alone copies nothing."""

    source = "pulumi/pulumi-command provider/pkg/provider/remote/copy.go, remote/copyController.go"

    def diff(self, old, new, inputs, paths, ctx):
        return ProviderDiff(bool(paths), sorted({format_path(p) for p in paths if p[0] == "triggers"}))

    def effects(self, op, old, new, inputs, paths):
        copies = op in ("create", "replace") or (
            op == "update" and any(p[0] in ("source", "remotePath") for p in paths))
        return (["replace"] if op == "replace" else []) + (["rerun"] if copies else []) + (
            ["delete"] if op == "delete" else [])


# pulumi-vsphere's facts (ForceNew inputs, the VM reboot list) are the components' too:
# components/vsphere/provider_facts.py, each citing terraform-provider-vsphere.


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
        super().__init__(*FORCE_NEW[VIRTUAL_MACHINE],
                         source=f"vmware/terraform-provider-vsphere {SOURCES[VIRTUAL_MACHINE]}")
        self.in_place = [parse_path(p) for p in VM_CLONE_IN_PLACE]

    def diff(self, old, new, inputs, paths, ctx):
        replaces = set(self.replaced(paths))
        for p in paths:
            if p[0] == "clone" and not any(contains(f, p) for f in self.in_place):
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

    source = "pulumi/pulumi-kubernetes provider/pkg/provider/provider.go, diff.go; restarts: RESTARTS"

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

    def effects(self, op, old, new, inputs, paths):
        r = new or old
        found = super().effects(op, old, new, inputs, paths)
        if op == "update" and r is not None and restarts(r.type, inputs, paths):
            found.append("restart")
        return found


# What an in-place update of an add-on restarts: pods on the nodes the add-on runs on (the GPU and RDMA
# nodes). Kubernetes kinds by (group, kind) -> the changed paths that restart, with the source.
RESTARTS: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {
    # "With RollingUpdate update strategy, after you update a DaemonSet template, old DaemonSet pods will
    # be killed, and new DaemonSet pods will be created automatically" (OnDelete: only when a pod is deleted).
    ("apps", "DaemonSet"): (("spec.template",),
                            "https://kubernetes.io/docs/tasks/manage-daemon/update-daemon-set/"),
    # The GPU operator renders its operands (driver, toolkit, device plugin, DCGM, MIG manager...) as
    # DaemonSets from the ClusterPolicy's spec and updates them when it changes (NVIDIA/gpu-operator
    # controllers/object_controls.go); a driver upgrade drains and restarts the driver pod on every GPU node
    # (https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-driver-upgrades.html).
    ("nvidia.com", "ClusterPolicy"): (("spec",), "NVIDIA/gpu-operator controllers/object_controls.go; "
                                      "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/"
                                      "gpu-driver-upgrades.html"),
    # The network operator's states render the OFED driver, device plugins and CNI plugins as DaemonSets
    # from the NicClusterPolicy's spec (Mellanox/network-operator pkg/state, controllers/
    # nicclusterpolicy_controller.go): a spec change updates them, and they roll.
    ("mellanox.com", "NicClusterPolicy"): (("spec",), "Mellanox/network-operator "
                                           "controllers/nicclusterpolicy_controller.go, pkg/state/"),
}
HELM_RESTART_KEYS = ("chart", "version", "values", "valueYamlFiles")
"""A Helm release's inputs whose change is an upgrade: `helm upgrade` applies the chart's new manifests
(https://helm.sh/docs/helm/helm_upgrade/), and every pod template they change rolls. Offline the chart is
not rendered, so any chart, version or values change counts as a restart of the release's pods."""


def restarts(type_token: str, inputs: Mapping[str, Any], paths: list[Path_]) -> bool:
    """An in-place update of these paths restarts pods of an add-on (RESTARTS, HELM_RESTART_KEYS)."""
    if type_token == "kubernetes:helm.sh/v3:Release":
        return any(p[:1] and p[0] in HELM_RESTART_KEYS for p in paths)
    if not type_token.startswith("kubernetes:"):
        return False
    group, _, kind = kubernetes_gvk(type_token)
    if (group, kind) not in RESTARTS:
        return False
    if kind == "DaemonSet" and _get(inputs, ("spec", "updateStrategy", "type")) == "OnDelete":
        return False
    patterns = [parse_path(f) for f in RESTARTS[(group, kind)][0]]
    return any(contains(f, p) for f in patterns for p in paths)


def restart_nodes(inputs: Mapping[str, Any], gpu_nodes: list[str]) -> tuple[str, list[str]]:
    """Which nodes a restart touches, where the plan knows them: the hostnames the pod template's node
    affinity lists, else the GPU nodes (the operators' pods run on every GPU node)."""
    named = _hostnames(_get(inputs, ("spec", "template", "spec", "affinity")))
    return ("nodes", named) if named else ("GPU nodes", gpu_nodes)


def _hostnames(value: Any) -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        if value.get("key") == HOSTNAME_KEY and isinstance(value.get("values"), list):
            found += [str(v) for v in value["values"]]
        for v in value.values():
            found += _hostnames(v)
    elif isinstance(value, list):
        for v in value:
            found += _hostnames(v)
    return found


HOSTNAME_KEY = "kubernetes.io/hostname"


def acceptance_rerun(type_token: str, old: Mapping[str, Any], new: Mapping[str, Any], paths: list[Path_]) -> bool:
    """An acceptance benchmark (components/addons/jobs.py: a Job or MPIJob labelled gpu-lab.io/acceptance)
    replaced only because the set of workers changed: every changed path is its workers' hostnames (the
    node affinity), the MPI worker count or mpirun's `-np` (workers x GPUs). Its spec is replaced on any
    change (a Job's template is immutable): the benchmark runs again on the new workers, and nothing of the
    lab is lost but the previous run's pods and their logs."""
    if not type_token.startswith("kubernetes:") or kubernetes_gvk(type_token)[2] not in ("Job", "MPIJob"):
        return False
    labels = _get(new, ("metadata", "labels"))
    if not isinstance(labels, dict) or ACCEPTANCE_LABEL not in labels:
        return False
    return bool(paths) and all(_node_set_path(p, old, new) for p in paths)


def _node_set_path(p: Path_, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    if "nodeAffinity" in p and "values" in p:
        at = p.index("values")
        return HOSTNAME_KEY in (_get(new, (*p[:at], "key")), _get(old, (*p[:at], "key")))
    if p[-3:] == ("mpiReplicaSpecs", "Worker", "replicas"):
        return True
    index = p[-1] if p else None
    if isinstance(index, int) and index > 0 and p[-2:-1] == ("command",):
        return _get(new, (*p[:-1], index - 1)) == _get(old, (*p[:-1], index - 1)) == "-np"
    return False


class HelmReleaseRule(ForceNewRule):
    """pulumi-kubernetes helmReleaseProvider `Diff` (provider/pkg/provider/helm_release.go): only .name and
    .namespace replace; values, chart and version changes upgrade the release in place, which restarts its
    pods (HELM_RESTART_KEYS)."""

    def __init__(self) -> None:
        super().__init__("name", "namespace", source="pulumi/pulumi-kubernetes provider/pkg/provider/helm_release.go; "
                                                      "https://helm.sh/docs/helm/helm_upgrade/")

    def effects(self, op, old, new, inputs, paths):
        found = super().effects(op, old, new, inputs, paths)
        return found + (["restart"] if op == "update" and restarts("kubernetes:helm.sh/v3:Release", inputs, paths)
                        else [])


class KubernetesProviderRule(Rule):
    """pulumi-kubernetes `DiffConfig` (provider/pkg/provider/provider.go): a kubeconfig, context or cluster
    not known yet replaces (conservatively); so does a changed clusterIdentifier or renderYamlToDirectory;
    a changed kubeconfig/context/cluster replaces when the active cluster it names changed; anything
    else updates the provider in place."""

    source = "pulumi/pulumi-kubernetes provider/pkg/provider/provider.go"

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


# What an update of one of our dynamic resources does beyond the setting itself: a node's roll powers its
# VM off and on for any setting it applies (components/dynamic/roll.py, ROLLED); an update that finds the
# same settings changes nothing. A roll's delete runs nothing, and its replacement (a new VM) finds the VM
# as the stack made it.
DYNAMIC_REBOOTS: dict[str, tuple[str, ...]] = {ROLL_KIND: ROLLED}
"""Dynamic kinds that power-cycle a VM, and the inputs whose change does it."""
VGPU_KIND = VgpuProfileProvider.kind
RETIRED_KINDS = {VGPU_KIND: "the node's roll holds the vGPU profile now: this delete leaves the vGPU on "
                                    "its VM (components/dynamic/vgpu.py, VgpuProfileProvider.delete)"}
"""Dynamic kinds no program registers any more, whose delete (the provider is unpickled by module and
name, so today's code runs it) does nothing on vSphere: dropping them from a lab's state is no loss."""


class DynamicRule(Rule):
    """Our own dynamic providers: the engine calls the provider's `diff(id, olds, news)` (pulumi
    `pulumi.dynamic.__main__`, DynamicResourceProviderServicer.Diff, the provider unpickled from the new
    inputs' __provider); so does this rule. `changes` None falls back to comparing the inputs
    (`diffResource`, step_generator.go: DiffUnknown)."""

    source = ("pulumi/pulumi sdk/python/lib/pulumi/dynamic/__main__.py; our providers: components/dynamic/")
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
        (components/dynamic/guard.py) refuses an edit a running lab cannot take there."""
        def plain(values: Mapping[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in values.items() if k != "__provider"}
        provider = self.provider(new)
        if type(provider).check is ResourceProvider.check:
            return []
        return [f.reason for f in provider.check(plain(old.inputs), plain(inputs)).failures or []]

    def warnings(self, old: Planned, new: Planned, inputs: dict[str, Any]) -> list[str]:
        """What the provider's check could not judge, where it says (components/dynamic/guard.py, `warnings`)."""
        provider = self.provider(new)
        if not hasattr(provider, "warnings"):
            return []
        drop = "__provider"
        return list(provider.warnings({k: v for k, v in old.inputs.items() if k != drop},
                                      {k: v for k, v in inputs.items() if k != drop}))

    def effects(self, op, old, new, inputs, paths, base: Mapping[str, Planned] | None = None):
        r = new or old
        kind = r.inputs.get("kind") if r is not None else None
        if op == "delete" and kind in RETIRED_KINDS:
            return []
        triggers = DYNAMIC_REBOOTS.get(str(kind), ())
        rebooted = (op == "update" and any(p[:1] and p[0] in triggers for p in paths)) or (
            op == "create" and kind == ROLL_KIND and bool(roll_converges(inputs, base or {})))
        extra = ["reboot"] if rebooted else []
        if rebooted and kind == ROLL_KIND and cluster_gone():
            extra.append("undrained")
        return sorted(set(super().effects(op, old, new, inputs, paths) + extra), key=EFFECTS.index)


def roll_converges(inputs: Mapping[str, Any], base: Mapping[str, Planned]) -> list[str]:
    """The settings a new NodeRoll changes on a VM that already runs: its create converges the VM it
    finds (components/dynamic/roll.py, `differences`), powering it off and on when any differs. The VM
    is the base's VM whose managed object id (`moid`, components/vsphere/vms.py) is the roll's vmId; its
    vGPU profile is what the base says it was given. [] when the VM is not in the base or its id is not
    known yet (a new VM is created as asked)."""
    vm_id = inputs.get("vmId")
    if not isinstance(vm_id, str) or vm_id == UNKNOWN:
        return []
    vm = next((b for b in base.values() if b.type == VIRTUAL_MACHINE and vm_id in (b.id, b.outputs.get("moid"))),
              None)
    if vm is None:
        return []
    # the VM's vGPU: the vGPU resource of a lab built before rolls held it, else what the last `up` gave it
    # (the LabVms component's record of each VM, components/vsphere/vms.py `_intent`)
    held = next((b.inputs.get("profile") for b in base.values() if b.type == DYNAMIC_TYPE
                 and b.inputs.get("kind") == VGPU_KIND and b.inputs.get("vmId") == vm_id), None)
    if held is None:
        held = next((entry.get("vgpuProfile") for b in base.values() if b.type == LAB_VMS
                     for entry in b.inputs.get("vms") or [] if entry.get("name") == vm.inputs.get("name")), "")
    # each setting's value is its first pulumi-vsphere input's; the vGPU profile has none
    live = {key: vm.inputs.get(vm_inputs[0]) if vm_inputs else held for key, vm_inputs in ROLLED_VM_SETTINGS.items()}
    return differences(live, {k: inputs.get(k) for k in ROLLED})


class NoDiffConfigProviderRule(Rule):
    """A provider resource whose plugin has no DiffConfig (pulumi-python, the dynamic providers' host:
    `DiffConfig` is unimplemented in sdk/python/lib/pulumi/dynamic/__main__.py): the engine then answers
    "changed, nothing replaced" (sdk/go/common/resource/plugin/provider_plugin.go, `DiffConfig` on
    codes.Unimplemented), so its resources are never replaced through it."""

    source = "pulumi/pulumi sdk/go/common/resource/plugin/provider_plugin.go"


RULES: dict[str, Rule] = {
    "command:local:Command": CommandRule(),
    "command:remote:Command": CommandRule(),
    "command:remote:CopyToRemote": CopyToRemoteRule(),
    # ForceNew attributes (resource_vsphere_<name>.go and the schemas it merges: provider_facts.FORCE_NEW)
    **{type_: ForceNewRule(*paths, source=f"vmware/terraform-provider-vsphere {SOURCES[type_]}")
       for type_, paths in FORCE_NEW.items() if type_ != VIRTUAL_MACHINE},
    VIRTUAL_MACHINE: VirtualMachineRule(),
    "kubernetes:helm.sh/v3:Release": HelmReleaseRule(),
    "pulumi:providers:kubernetes": KubernetesProviderRule(),
    "pulumi:providers:pulumi-python": NoDiffConfigProviderRule(),
    DYNAMIC_TYPE: DynamicRule(),
}
DEFAULT_RULE = Rule()
KUBERNETES_RULE = KubernetesRule()


def explicit_rule(type_token: str) -> Rule | None:
    """The rule written for this type (every Kubernetes object kind shares pulumi-kubernetes' one), None
    when there is none and `make diff` would fall back to DEFAULT_RULE."""
    if type_token in RULES:
        return RULES[type_token]
    if type_token.startswith("kubernetes:") and not type_token.startswith("kubernetes:helm.sh/"):
        return KUBERNETES_RULE
    return None


def rule_for(type_token: str) -> Rule:
    return explicit_rule(type_token) or DEFAULT_RULE


_MIGRATE = {t: [parse_path(p) for p in paths] for t, paths in MIGRATE_INPUTS.items()}
POD_NETWORK_INPUTS: dict[str, tuple[str, ...]] = {
    # Mellanox/nvidia-k8s-ipam at network-operator-v26.4.1, pkg/ipam-controller/allocator/allocator.go: a
    # node's range of another block size fails the check and is dropped, and every node gets a new range
    # from the start of the subnet, while running pods keep their addresses (each node checks only its
    # own store, pkg/ipam-node/store/store.go): new pods may take addresses running pods hold.
    "kubernetes:nv-ipam.nvidia.com/v1alpha1:IPPool": ("spec.perNodeBlockSize", "spec.subnet"),
}
"""Kubernetes objects whose in-place update moves the RDMA pods' addresses."""
_NETWORK = {t: [parse_path(p) for p in paths] for t, paths in {**NETWORK_INPUTS, **POD_NETWORK_INPUTS}.items()}


def lab_effects(type_token: str, paths: list[Path_]) -> list[str]:
    """What an in-place update of these paths does to the running lab besides the update itself:
    `migrate` (a vMotion) and `network` (traffic moves), from provider_facts' MIGRATE_INPUTS and
    NETWORK_INPUTS."""
    found = []
    if any(touches(f, p) for f in _MIGRATE.get(type_token, []) for p in paths):
        found.append("migrate")
    if any(touches(f, p) for f in _NETWORK.get(type_token, []) for p in paths):
        found.append("network")
    return found


def lab_effect_keys(type_token: str, effect: str, paths: list[Path_]) -> list[str]:
    """The changed inputs behind `migrate` or `network`, for the table's note."""
    table = {"migrate": _MIGRATE, "network": _NETWORK}[effect].get(type_token, [])
    return sorted({format_path(p) for p in paths for f in table if touches(f, p)})
