"""NodeRoll: every change that powers a cluster node's VM off (vCPUs, memory, reservation, vGPU
profile, hardware version), one node at a time, drained, in the plan's order, stopping at the first
failure; pulumi-vsphere would power every VM of a group off at once. It fails closed: a node the stack
says is in a cluster is changed only through that cluster, and a roll cut short (a failure, a killed
run) is finished first by the next `up`, from what the node itself records. The steps, the failure
handling, the resume and the live power check: docs/engine.md ("The node roll").
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    ConfigureRequest,
    CreateResult,
    DiffResult,
    ReadResult,
    Resource,
    UpdateResult,
)

from components.dynamic.provider import (
    CLUSTER_CONFIG,
    NodeDrainError,
    VcenterLogin,
    VsphereOperationError,
    _configured,
    _known,
    _plain,
    _VcenterProvider,
)
from components.vsphere.provider_facts import ROLLED_VM_SETTINGS
from labrules.openshift import DEFAULT_OC, NODE_DRAIN_TIMEOUT_S
from labrules.types import VM_ROLL_KIND
from labrules.vsphere import MAX_MEMORY_GB, MAX_VCPUS  # noqa: F401 - the bounds check() applies

KIND = VM_ROLL_KIND
ROLLED = tuple(ROLLED_VM_SETTINGS)
"""The VM settings a NodeRoll applies, each of which needs the VM powered off to change."""
POWERED_ON = "poweredOn"
NODE_KEYS = ("vmName", "role", "nodeName", "drainTimeoutS")
"""The node's names, role and how long its drain may take: changing them changes nothing on vSphere."""
NEW_VM = "newVm"
"""True when the deployment that creates the roll creates its VM too: the VM is no node of any cluster
yet (it boots its ignition), so the create gives it what the clone could not (its vGPU) without a drain and
beside the other new VMs, not one at a time. Read at create only (the roll ignores its later changes)."""
STEPS = ("ask the cluster", "health before", "cordon", "drain", "power-off", "reconfigure", "power-on", "Ready",
         "health after", "uncordon")
"""The steps of one node's roll, as the error names them."""

REBOOT_TIMEOUT_S = 900
READY_TIMEOUT_S = 1200
HEALTH_TIMEOUT_S = 900
HEALTH_DWELL_S = 60.0
"""How long the control plane must stay healthy, polled, before the roll goes on: a ClusterOperator's
conditions lag its operands, so one good answer right after a member restarts proves little."""
_OC_GET_TIMEOUT_S = 60
_POLL_S = 5.0
HEALTH_OPERATORS = ("etcd", "kube-apiserver")
ETCD_NAMESPACE = "openshift-etcd"
ETCD_POD_LABEL = "app=etcd"
"""The etcd members' static pods, one `etcd-<node>` per control-plane node (openshift/cluster-etcd-operator,
bindata/etcd/pod.yaml: namespace openshift-etcd, labels app: etcd, etcd: "true")."""
ROLL_MARK = "gpu-lab.io/roll-boot-id"
"""The node annotation a roll sets before it cordons and removes once the node is back and uncordoned:
the boot id the node had before its VM went down. A run that finds it (a kill, a failure) finishes
that node first: settings, power, a new boot, Ready, health, uncordon. As the Machine Config Operator
keeps its per-node state on the node."""
ROLL_PHASE = "gpu-lab.io/roll-phase"
"""Beside the mark: `cordoned` until the roll powers the VM off, `down` from just before. A node whose
VM runs and whose phase is `down` went through a power cycle: its next Ready counts only with a new
boot id, however long its kubelet takes to say so (a node stays Ready some 40 s after its machine
stops: the node lifecycle controller's grace period)."""
CLUSTER_GONE = "GPU_LAB_CLUSTER_GONE"
"""Set to 1 for one `pulumi up` (the environment, never the stack file) when the cluster the stack names
is really gone: nodes' VMs then change, and leaving nodes are removed, without asking it. Nothing else
lets a node the stack holds in a cluster change undrained."""


_ONE_AT_A_TIME = threading.Lock()
"""Held while a node is rolled: every NodeRoll of an `up` is served by one provider process, so no two
nodes go down at once even where the chain of dependencies is missing (a state the program could not
read, a first `up` that stopped before it wrote its outputs)."""
_FAILED_IN_THIS_RUN: list[str] = []
"""The nodes whose roll failed in this provider process (one `up`): no roll starts after a failure."""


def in_provider_server() -> bool:
    """True in the engine's dynamic provider process (`python -m pulumi.dynamic`), where the diff may
    read vSphere; False in the program, its tests under mocks and `make diff`, which stay offline."""
    return callable(getattr(sys.modules.get("__main__"), "_abort_with_traceback", None))


LIVE_DIFF = in_provider_server()
"""Whether `diff` reads the VM's power state (tests switch it on)."""


class RollStepError(VsphereOperationError):
    """One node's roll failed at one step; the message names node, step, what happened and what to do."""

    def __init__(self, node: str, step: str, reason: str, todo: str) -> None:
        self.node, self.step, self.reason = node, step, reason
        super().__init__(f"node {node}: the roll stopped at step {step}: {reason}. {todo}")


def _show(value: Any) -> str:
    """A setting as the log line shows it: 32768, not the 32768.0 the engine hands over."""
    return str(int(value)) if _whole(value) else repr(value)


def _whole(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer()


def wanted_settings(props: dict[str, Any]) -> dict[str, Any]:
    """What the stack asks of the VM; None means "leave as it is" (no reservation asked, the template's
    hardware version)."""
    return {k: props.get(k) for k in ROLLED}


def differences(live: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """The settings to change, in ROLLED order; a hardware version is only ever upgraded."""
    keys = []
    for key in ROLLED:
        want = wanted.get(key)
        if key == "vgpuProfile":
            if (live.get(key) or "") != (want or ""):
                keys.append(key)
        elif want is None:
            continue
        elif key == "hardwareVersion":
            if int(live.get(key) or 0) < int(want):
                keys.append(key)
        elif live.get(key) != want:
            keys.append(key)
    return keys


@dataclass
class _Vm:
    """The VM under roll: the pyVmomi object, its label and the steps that talk to vSphere."""

    vm: Any
    label: str

    def settings(self) -> dict[str, Any]:
        from components.dynamic import hostops

        return hostops.get_roll_settings(self.vm)

    def powered_on(self) -> bool:
        from components.dynamic import hostops

        return hostops.is_powered_on(self.vm)


@dataclass(frozen=True)
class ClusterAccess:
    """How the rolls reach the cluster their nodes are in, from their explicit provider's configuration
    (components/dynamic/provider.py): whether the stack names one, its admin kubeconfig and the oc binary."""

    named: bool
    """The stack names a cluster (a kubeconfig, known or not yet): its nodes change only through it."""
    kubeconfig: str | None
    oc: str = DEFAULT_OC


class NodeRollProvider(_VcenterProvider):
    """Dynamic provider of NodeRoll."""

    kind = KIND
    cluster: ClusterAccess = ClusterAccess(False, None)

    def configure(self, req: ConfigureRequest) -> None:
        super().configure(req)
        named = req.config.get(CLUSTER_CONFIG["kubeconfig"]) not in (None, "")
        kubeconfig = _configured(req.config, CLUSTER_CONFIG["kubeconfig"])
        self.cluster = ClusterAccess(named, str(kubeconfig) if kubeconfig else None,
                                     str(_configured(req.config, CLUSTER_CONFIG["oc"]) or DEFAULT_OC))

    # -- engine calls

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        plain = _plain(news)
        cpus: Any = plain.get("cpus")
        memory: Any = plain.get("memoryMb")
        # Numbers reach a dynamic provider as floats (a protobuf Struct holds doubles): 4 arrives as 4.0.
        if _known(cpus) and not (_whole(cpus) and 0 < cpus <= MAX_VCPUS):
            failures.append(CheckFailure("cpus", f"cpus {cpus!r}: vSphere 8 allows 1 to {MAX_VCPUS} vCPUs per VM"))
        if _known(memory) and not (_whole(memory) and 0 < memory <= MAX_MEMORY_GB * 1024):
            failures.append(CheckFailure("memoryMb", f"memoryMb {memory!r}: vSphere 8 allows up to "
                                                     f"{MAX_MEMORY_GB * 1024} MB (24 TB) per VM"))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        old, new = _plain(olds), _plain(news)
        replaces = [k for k in ("vmId",) if old.get(k) != new.get(k)]
        changed = [k for k in (*ROLLED, POWERED_ON, *NODE_KEYS) if old.get(k) != new.get(k)]
        if not replaces and not changed and LIVE_DIFF and new.get(POWERED_ON) and not self._live_on(old):
            changed.append(POWERED_ON)  # the VM is off: the update powers it on
        return DiffResult(changes=bool(replaces or changed), replaces=replaces, delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = _plain(props)
        return CreateResult(f"{inputs['vmId']}:roll", self._converge(inputs, first_boot=bool(inputs.get(NEW_VM))))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(self._converge(_plain(news)))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing: the settings stay with the VM (deleted with it, or kept by a lab that leaves gpu-lab)."""
        return None

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """`pulumi refresh`: the live settings and power state, so the next `up` rolls what differs and
        powers on what is off."""
        state = _plain(props)
        from components.dynamic import hostops

        try:
            with self._session() as si:
                try:
                    vm = hostops.find_vm(si, state["vmId"])
                except hostops.VsphereLookupError:
                    return ReadResult(None, {})
                live = hostops.get_roll_settings(vm)
                on = hostops.is_powered_on(vm)
        except VsphereOperationError:
            raise
        except Exception as error:  # noqa: BLE001 - one line for a vSphere or network failure
            raise self._vsphere_error(state, "read", error) from None
        outs = {**state, POWERED_ON: on}
        for key in ROLLED:
            if state.get(key) is not None or key == "vgpuProfile":
                outs[key] = live.get(key)
        return ReadResult(id_, outs)

    # -- the roll of one node

    def _converge(self, inputs: dict[str, Any], first_boot: bool = False) -> dict[str, Any]:
        """Bring the VM to the stack's settings. `first_boot`: a VM this deployment created, no cluster's node
        yet, gets what the clone did not (its vGPU) with no cluster to ask and no other node to wait for."""
        from components.dynamic import hostops

        name = str(inputs.get("nodeName") or inputs["vmName"])
        try:
            with self._session() as si:
                vm = _Vm(hostops.find_vm(si, inputs["vmId"], inputs.get("vmName")), f"VM {inputs.get('vmName')!r}")
                live = vm.settings()
                changes = differences(live, wanted_settings(inputs))
                on = vm.powered_on()
                if first_boot:
                    if changes or not on:
                        self._roll(inputs, name, vm, live, changes, None)
                elif changes or not on:
                    with _ONE_AT_A_TIME, _machine_lock(self.login(), name):
                        _after_no_failure(name)
                        live = vm.settings()  # again: another node's roll may have run while this one waited
                        try:
                            with _cluster(inputs, name, self.cluster) as node:
                                self._roll(inputs, name, vm, live, differences(live, wanted_settings(inputs)), node)
                        except RollStepError:
                            _FAILED_IN_THIS_RUN.append(name)
                            raise
                elif _member(inputs, self.cluster) and not cluster_gone():
                    self._finish_if_marked(inputs, name, vm)
        except VsphereOperationError:
            raise
        except Exception as error:  # noqa: BLE001 - one line for a vSphere or network failure
            raise self._vsphere_error(inputs, "roll", error) from None
        return {**inputs, POWERED_ON: True}

    def _finish_if_marked(self, inputs: dict[str, Any], name: str, vm: _Vm) -> None:
        """The VM runs as the stack says: the node may still be one an earlier run left half-rolled
        (killed while waiting for Ready, say), cordoned. Nothing here is disruptive, so a cluster that
        does not answer is a warning; any roll that would power a VM off asks it again and stops."""
        try:
            with _ONE_AT_A_TIME, _machine_lock(self.login(), name), _cluster(inputs, name, self.cluster) as node:
                if node is not None and node.roll_mark()[0] is not None:
                    self._roll(inputs, name, vm, vm.settings(), [], node)
        except RollStepError as error:
            if error.step != "ask the cluster":
                raise
            pulumi.log.warn(f"node {name}: could not check for an unfinished roll ({error.reason}); its VM is "
                            "as the stack says and was not touched")

    def _roll(self, inputs: dict[str, Any], name: str, vm: _Vm, live: dict[str, Any], changes: list[str],
              node: _RollNode | None) -> None:
        """Bring one node to the stack's settings, running and Ready: whatever an earlier run left (the
        mark on the node says where), one step after the other, stopping at the first failure."""
        from components.dynamic import hostops

        wanted = wanted_settings(inputs)
        control_plane = inputs.get("role") == "control-plane"
        was_on = vm.powered_on()
        mark, phase = node.roll_mark() if node is not None else (None, None)
        said = ", ".join(f"{k} {_show(live.get(k))} -> {_show(wanted.get(k))}" for k in changes)
        if changes and inputs.get(NEW_VM):
            pulumi.log.info(f"node {name}: its new VM gets {said} before it joins a cluster")
        elif changes:
            pulumi.log.info(f"node {name}: rolling ({said})")
        elif mark is not None:
            pulumi.log.info(f"node {name}: finishing the roll an earlier run left (its VM is "
                            f"{'on' if was_on else 'off'})")
        else:
            pulumi.log.info(f"node {name}: its VM is off; powering it on")
        step = "health before"
        went_down = not was_on
        try:
            boot = None
            if node is not None:
                if was_on and changes:
                    down = node.others_down()
                    if down:
                        raise RollStepError(name, step, f"another node is out of service: {', '.join(down)}",
                                            _todo("others down", name))
                    if control_plane:
                        _wait_healthy(node, name, step)
                    step = "cordon"
                    boot = node.boot_id()
                    node.set_roll_mark(boot, "cordoned")  # before anything changes: a kill after this is resumed
                    node.cordon()
                    step = "drain"
                    node.drain_for(int(inputs.get("drainTimeoutS") or NODE_DRAIN_TIMEOUT_S))
                else:
                    step = "cordon"
                    boot = mark if mark is not None else node.boot_id()
                    if mark is None:
                        node.set_roll_mark(boot, "cordoned" if was_on else "down")
            if was_on and changes:
                step = "power-off"
                if node is not None:
                    node.set_roll_mark(boot or "", "down")
                went_down = True
                hostops.power_off(vm.vm)
            if changes:
                step = "reconfigure"
                hostops.reconfigure_for_roll(vm.vm, {k: wanted[k] for k in changes})
            if not vm.powered_on():
                step = "power-on"
                went_down = True
                try:
                    hostops.power_on(vm.vm)
                except Exception:
                    if changes:
                        # The new settings do not start (admission control, a host without room): back to
                        # the old ones, running, before the error is reported.
                        _restore(vm, live, changes)
                    raise
            if node is not None and boot is not None:
                step = "Ready"
                if went_down or phase == "down":
                    node.wait_rebooted(boot)
                node.wait_ready()
                if control_plane:
                    step = "health after"
                    _wait_healthy(node, name, step)
                step = "uncordon"
                node.uncordon()
                node.clear_roll_mark()
        except RollStepError:
            raise
        except Exception as error:
            if step in ("power-off", "reconfigure"):
                _power_back_on(vm, was_on)
            if node is not None and step in ("cordon", "drain", "power-off", "reconfigure", "power-on"):
                _back_in_service(node, vm, went_down)
            raise RollStepError(name, step, _reason(error, self._where()), _todo(step, name)) from None

    # -- vSphere plumbing

    def _live_on(self, state: dict[str, Any]) -> bool:
        """Whether the VM runs; True when vSphere cannot say (the update would then fail with the reason)."""
        from components.dynamic import hostops

        try:
            with self._session() as si:
                return hostops.is_powered_on(hostops.find_vm(si, state["vmId"]))
        except Exception:  # noqa: BLE001 - a preview is not the place to fail on a vCenter outage
            return True

    def _vsphere_error(self, props: dict[str, Any], action: str, error: Exception) -> Exception:
        from components.dynamic import hostops

        reason = hostops.describe_failure(error, *self._where())
        if reason is None:
            return error
        return VsphereOperationError(f"VM {props.get('vmName')!r} ({props.get('vmId')}): {action} failed: {reason}")


@contextmanager
def _machine_lock(vcenter: VcenterLogin, name: str) -> Iterator[None]:
    """One roll at a time on this machine for one vCenter, across processes: a `pulumi up` killed with
    -9 leaves its dynamic provider running the roll it was in to its end, and a new `up` started meanwhile
    (after `pulumi cancel`) has a provider process, and a lock, of its own. Under TMPDIR, which the up
    job keeps private."""
    digest = hashlib.sha256(f"{vcenter.server}:{vcenter.port}".encode()).hexdigest()[:16]
    path = os.path.join(tempfile.gettempdir(), f"gpu-lab-node-roll-{digest}.lock")
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pulumi.log.info(f"node {name}: waiting for a roll another process runs against the same vCenter "
                            "(an earlier `pulumi up` that was killed finishes its node first)")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _after_no_failure(name: str) -> None:
    if _FAILED_IN_THIS_RUN:
        raise RollStepError(name, "ask the cluster", f"the roll of {', '.join(_FAILED_IN_THIS_RUN)} failed earlier "
                            "in this run", "Nothing was changed: no node rolls after a failed one. Fix what that "
                            "error names, then `pulumi up`")


def _reason(error: BaseException, vcenter: tuple[str | None, int]) -> str:
    from components.dynamic import hostops

    if isinstance(error, NodeDrainError):
        return str(error).split(": ", 1)[-1] if ", node " in str(error) else str(error)
    said = hostops.describe_failure(error, *vcenter)
    return said or f"{type(error).__name__}: {error}"


def _todo(step: str, name: str) -> str:
    later = "the nodes after it were not touched; the next `pulumi up` resumes the roll with this node"
    return {
        "ask the cluster": f"Nothing was changed: the stack holds this node in a cluster, and a node in a cluster is "
                           f"changed only through it (drained, then Ready again). Renew the kubeconfig "
                           f"(gpu-lab:kubeconfig, or the install's) or bring the API server back, check that "
                           f"`oc get node {name}` answers, then `pulumi up`. Only for a cluster that is really "
                           f"gone: `{CLUSTER_GONE}=1 pulumi up` changes the VMs undrained (`{CLUSTER_GONE}=1 make "
                           f"diff` shows it first); {later}",
        "others down": "Nothing was changed: one node at a time. Bring that node back (an unfinished roll: "
                       "`pulumi up --target` with its NodeRoll's URN finishes it; `pulumi stack --show-urns` lists "
                       f"them), then `pulumi up`; {later}",
        "health before": f"The cluster is not healthy enough to take a control-plane node out; nothing was changed. "
                         f"Bring etcd and the API server back (oc get clusteroperators etcd kube-apiserver; "
                         f"oc get pods -n {ETCD_NAMESPACE} -l {ETCD_POD_LABEL}), then "
                         f"`pulumi up`; {later}",
        "cordon": f"Its VM was not touched (a node found cordoned is uncordoned again). Check that the cluster "
                  f"answers, then `pulumi up`; {later}",
        "drain": f"Its VM was not touched and it is uncordoned again. Move or delete the pods that keep it from "
                 f"draining (a PodDisruptionBudget, a pod no controller recreates: oc adm drain {name} "
                 f"--ignore-daemonsets --delete-emptydir-data --dry-run=server), or raise "
                 f"openshift.drainTimeoutS, then `pulumi up`; {later}",
        "power-off": f"It runs on its old settings and is uncordoned, or, where its VM did not come back on, stays "
                     f"cordoned. Check the VM in vCenter, then `pulumi up`; {later}",
        "reconfigure": f"vSphere refused the new settings; it was powered on again on its old settings and "
                       f"uncordoned where vSphere allowed it. Fix what vSphere names (host capacity, vGPU profile, "
                       f"reservation), then `pulumi up`; {later}",
        "power-on": f"The VM did not power on with the new settings; it was put back on its old settings and "
                    f"powered on where vSphere allowed it. Make room on its host (or choose smaller settings), "
                    f"then `pulumi up`; {later}",
        "Ready": f"The VM runs with the new settings but the node is not Ready; it stays cordoned. Look at the node "
                 f"(oc describe node {name}) and fix it; the next `pulumi up` waits for Ready again, then "
                 f"uncordons it before any other node",
        "health after": "The node is back but the control plane is not healthy; it stays cordoned. Wait for etcd "
                        "and the ClusterOperators; the next `pulumi up` checks them again, then uncordons it "
                        "before any other node",
        "uncordon": f"The node runs with the new settings; the next `pulumi up` uncordons it before any other node "
                    f"(or: oc adm uncordon {name})",
    }[step]


def _power_back_on(vm: _Vm, was_on: bool) -> None:
    from components.dynamic import hostops

    if not was_on:
        return
    try:
        if not vm.powered_on():
            hostops.power_on(vm.vm)
    except Exception:  # noqa: BLE001 - the first error is the one to report
        pass


def _restore(vm: _Vm, live: dict[str, Any], changes: list[str]) -> None:
    """Put the settings found before the roll back and power the VM on (best effort)."""
    from components.dynamic import hostops

    try:
        if vm.powered_on():
            return
        back = {k: live.get(k) for k in changes if k != "hardwareVersion"}  # an upgrade cannot be undone
        hostops.reconfigure_for_roll(vm.vm, back)
        hostops.power_on(vm.vm)
    except Exception:  # noqa: BLE001 - the first error is the one to report
        pass


# ---------------------------------------------------------------- the node in the cluster


def cluster_gone() -> bool:
    """Whether this run was told the cluster is gone (CLUSTER_GONE=1 in the environment)."""
    value = os.environ.get(CLUSTER_GONE, "")
    if value not in ("", "0", "1"):
        raise VsphereOperationError(f"{CLUSTER_GONE}={value!r}: set it to 1 (the cluster is gone: change and remove "
                                    "nodes without asking it) or leave it unset")
    return value == "1"


def _member(inputs: dict[str, Any], cluster: ClusterAccess) -> bool:
    """Whether the stack holds this node in a cluster: it names one (a kubeconfig), or the node is a
    control-plane node, which serves one by definition. Decided from the stack, never from whether
    a cluster answers."""
    return cluster.named or inputs.get("role") == "control-plane"


class _RollNode:
    """A node driven with oc and a kubeconfig file of its own for a roll: the drain takes the stack's timeout,
    the roll's mark lives on it."""

    def __init__(self, oc: str, kubeconfig_path: str, name: str, label: str) -> None:
        self.oc, self.kubeconfig_path, self.name, self.label = oc, kubeconfig_path, name, label

    last_stderr = ""
    """What the last oc call printed on stderr (a failure's detail may precede its last line)."""

    def run(self, *args: str, timeout: float) -> subprocess.CompletedProcess:
        done = subprocess.run([self.oc, *args], env={**os.environ, "KUBECONFIG": self.kubeconfig_path},
                              capture_output=True, text=True, timeout=timeout, check=False)
        self.last_stderr = done.stderr
        return done

    def must(self, what: str, *args: str, timeout: float) -> str:
        try:
            done = self.run(*args, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise NodeDrainError(f"{self.label}, node {self.name}: {what} did not finish in {timeout:.0f} s") from None
        if done.returncode != 0:
            said = ((done.stderr.strip() or done.stdout.strip()).splitlines() or ["no output"])[-1]
            raise NodeDrainError(f"{self.label}, node {self.name}: {what} failed (oc exit {done.returncode}): {said}")
        return done.stdout.strip()

    def boot_id(self) -> str:
        return self.must("reading the node's boot id", "get", f"node/{self.name}",
                         "-o", "jsonpath={.status.nodeInfo.bootID}", timeout=_OC_GET_TIMEOUT_S)

    def cordon(self) -> None:
        self.must("oc adm cordon", "adm", "cordon", self.name, timeout=_OC_GET_TIMEOUT_S)

    def wait_rebooted(self, boot_before: str) -> None:
        """Until the kubelet reports a new boot: right after the power-on the node may still show the
        Ready status it had before the power-off."""
        deadline = time.monotonic() + REBOOT_TIMEOUT_S
        while time.monotonic() < deadline:
            done = self.run("get", f"node/{self.name}", "-o", "jsonpath={.status.nodeInfo.bootID}",
                            timeout=_OC_GET_TIMEOUT_S)
            if done.returncode == 0 and done.stdout.strip() not in ("", boot_before):
                return
            time.sleep(_POLL_S)
        raise NodeDrainError(f"{self.label}, node {self.name}: the node did not report a new boot within "
                             f"{REBOOT_TIMEOUT_S} s of the power-on")

    def wait_ready(self) -> None:
        self.must("oc wait --for=condition=Ready", "wait", "--for=condition=Ready", f"node/{self.name}",
                  f"--timeout={READY_TIMEOUT_S}s", timeout=READY_TIMEOUT_S + 60)

    def uncordon(self) -> None:
        self.must("oc adm uncordon", "adm", "uncordon", self.name, timeout=_OC_GET_TIMEOUT_S)

    cluster: list[dict[str, Any]] = []
    """Every node of the cluster as `oc get nodes` listed them when the roll began."""

    def others_down(self) -> list[str]:
        """The other nodes that are not Ready or carry an unfinished roll's mark: as the Machine Config
        Operator counts a pool's unavailable nodes, whatever made them so, before it takes one more out."""
        down = []
        for item in self.cluster:
            other = str(item.get("metadata", {}).get("name"))
            if other == self.name:
                continue
            ready = {c.get("type"): c.get("status") for c in item.get("status", {}).get("conditions", [])}
            if ROLL_MARK in (item.get("metadata", {}).get("annotations") or {}):
                down.append(f"{other} (an unfinished roll)")
            elif ready.get("Ready") != "True":
                down.append(f"{other} (not Ready)")
        return down

    def drain_for(self, timeout_s: int) -> None:
        # No --force: a pod no controller would recreate stops the drain instead of being lost, and
        # oc adm drain evicts (PodDisruptionBudgets are respected) until the timeout.
        try:
            self.must("oc adm drain", "adm", "drain", self.name, "--ignore-daemonsets", "--delete-emptydir-data",
                      f"--timeout={timeout_s}s", timeout=timeout_s + 60)
        except NodeDrainError as error:
            # A budget that blocks: oc retries each eviction until the timeout and ends on "global timeout
            # reached"; the budget is named in the retries before it.
            said = [line for line in self.last_stderr.splitlines() if "disruption budget" in line]
            if not said or "disruption budget" in str(error):
                raise
            raise NodeDrainError(f"{error}; {said[-1].strip()}") from None

    def roll_mark(self) -> tuple[str | None, str | None]:
        """The boot id and phase an unfinished roll recorded (ROLL_MARK, ROLL_PHASE), from the nodes `oc get
        nodes` listed when the roll began; None when no roll is under way."""
        (item,) = [i for i in self.cluster if i.get("metadata", {}).get("name") == self.name]
        annotations = item.get("metadata", {}).get("annotations") or {}
        mark = annotations.get(ROLL_MARK)
        return (str(mark), str(annotations.get(ROLL_PHASE) or "down")) if mark else (None, None)

    def set_roll_mark(self, boot: str, phase: str) -> None:
        self.must("marking the roll on the node", "annotate", "--overwrite", f"node/{self.name}",
                  f"{ROLL_MARK}={boot}", f"{ROLL_PHASE}={phase}", timeout=_OC_GET_TIMEOUT_S)

    def clear_roll_mark(self) -> None:
        self.must("removing the roll's mark", "annotate", f"node/{self.name}", f"{ROLL_MARK}-", f"{ROLL_PHASE}-",
                  timeout=_OC_GET_TIMEOUT_S)

    def json_of(self, what: str, *args: str) -> dict[str, Any] | str:
        """oc's JSON answer, or what is wrong as one line."""
        try:
            done = self.run(*args, "-o", "json", timeout=_OC_GET_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"{what} did not answer in {_OC_GET_TIMEOUT_S} s"
        if done.returncode != 0:
            return f"{what}: " + ((done.stderr.strip() or "oc failed").splitlines()[-1])
        try:
            return dict(json.loads(done.stdout))
        except ValueError:
            return f"{what}: oc did not answer JSON"

    def healthy(self) -> str | None:
        """None when the control plane is whole as the etcd operator sees it: /readyz answers ok; the
        etcd and kube-apiserver ClusterOperators are Available, not Progressing, not Degraded; every etcd
        member's pod is Ready, this node's among them. Else what is wrong."""
        try:
            ready = self.run("get", "--raw", "/readyz", timeout=_OC_GET_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"/readyz did not answer in {_OC_GET_TIMEOUT_S} s"
        if ready.returncode != 0 or ready.stdout.strip() != "ok":
            said = (ready.stderr.strip() or ready.stdout.strip() or "no answer").splitlines()[-1]
            return f"/readyz: {said}"
        listed = self.json_of("ClusterOperators", "get", "clusteroperator", *HEALTH_OPERATORS)
        if isinstance(listed, str):
            return listed
        seen: dict[str, dict[str, str]] = {}
        for item in listed.get("items", []):
            conditions = {c.get("type"): c.get("status") for c in item.get("status", {}).get("conditions", [])}
            seen[item.get("metadata", {}).get("name")] = conditions
        for operator in HEALTH_OPERATORS:
            if operator not in seen:
                return f"ClusterOperator {operator} not found"
            conditions = seen[operator]
            if (conditions.get("Available"), conditions.get("Progressing"), conditions.get("Degraded")) != (
                    "True", "False", "False"):
                return (f"ClusterOperator {operator} Available={conditions.get('Available')} "
                        f"Progressing={conditions.get('Progressing')} Degraded={conditions.get('Degraded')}")
        pods = self.json_of("etcd members", "get", "pods", "-n", ETCD_NAMESPACE, "-l", ETCD_POD_LABEL)
        if isinstance(pods, str):
            return pods
        ready_on: dict[str, bool] = {}
        for pod in pods.get("items", []):
            conditions = {c.get("type"): c.get("status") for c in pod.get("status", {}).get("conditions", [])}
            ready_on[str(pod.get("spec", {}).get("nodeName"))] = conditions.get("Ready") == "True"
        if self.name not in ready_on:
            return f"no etcd member pod on node {self.name} in {ETCD_NAMESPACE}"
        not_ready = sorted(node for node, ready in ready_on.items() if not ready)
        if not_ready:
            return f"etcd member not Ready on {', '.join(not_ready)}"
        return None


def _wait_healthy(node: _RollNode, name: str, step: str) -> None:
    """Until the control plane has been healthy for HEALTH_DWELL_S without a break."""
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    healthy_since: float | None = None
    while True:
        wrong = node.healthy()
        now = time.monotonic()
        if wrong is None:
            healthy_since = now if healthy_since is None else healthy_since
            if now - healthy_since >= HEALTH_DWELL_S:
                return
        else:
            healthy_since = None
        if now >= deadline:
            reason = wrong if wrong is not None else f"healthy for less than {HEALTH_DWELL_S:.0f} s at a time"
            raise RollStepError(name, step, f"not healthy within {HEALTH_TIMEOUT_S} s: {reason}", _todo(step, name))
        time.sleep(_POLL_S)


def _back_in_service(node: _RollNode, vm: _Vm, went_down: bool) -> None:
    """After a failure: a node whose VM runs is uncordoned; one that never went down loses the roll's mark
    too. A VM that is off (or whose state vSphere does not tell) keeps its node cordoned and marked, and the
    next `up` finishes it."""
    try:
        if not vm.powered_on():
            return
        node.uncordon()
        if not went_down:
            node.clear_roll_mark()
    except Exception:  # noqa: BLE001 - the first error is the one to report
        pass


@contextmanager
def _cluster(inputs: dict[str, Any], name: str, cluster: ClusterAccess) -> Iterator[_RollNode | None]:
    """The node in its cluster; None only for a node the stack holds in no cluster, or with CLUSTER_GONE=1.
    A node the stack holds in a cluster (`_member`) is changed through it or not at all: no kubeconfig, an
    API that refuses, fails or does not answer, a node it does not list, each stops the roll here, before
    anything changes."""
    if cluster_gone():
        pulumi.log.warn(f"node {name}: {CLUSTER_GONE}=1: its VM changes without asking the cluster (no drain, no "
                        "Ready wait, no quorum check)")
        yield None
        return
    if not _member(inputs, cluster):
        pulumi.log.warn(f"node {name}: the stack names no cluster for it; its VM changes without a drain")
        yield None
        return
    kubeconfig = cluster.kubeconfig
    if not kubeconfig:
        why = ("its cluster's kubeconfig is not known" if cluster.named
               else "a control-plane node and no kubeconfig for its cluster")
        raise RollStepError(name, "ask the cluster", why, _todo("ask the cluster", name))
    oc = shutil.which(cluster.oc)
    if oc is None:
        raise RollStepError(name, "ask the cluster", f"oc not found as {cluster.oc!r}",
                            "Set gpu-lab:openshift.oc to the oc binary; nothing was changed. Then `pulumi up`")
    handle, path = tempfile.mkstemp(prefix="gpu-lab-kubeconfig-")  # mode 0600, under TMPDIR
    try:
        with os.fdopen(handle, "w") as out:
            out.write(str(kubeconfig))
        node = _RollNode(oc, path, name, f"VM {inputs.get('vmName')!r}")
        listed = node.json_of("`oc get nodes`", "get", "nodes")
        if isinstance(listed, str):
            raise RollStepError(name, "ask the cluster", f"the cluster did not answer {listed}",
                                _todo("ask the cluster", name))
        node.cluster = [item for item in listed.get("items", []) if isinstance(item, dict)]
        names = [str(item.get("metadata", {}).get("name")) for item in node.cluster]
        found = [n for n in names if n == name] or [n for n in names if n.startswith(f"{name}.")]
        if len(found) != 1:
            raise RollStepError(name, "ask the cluster",
                                f"the cluster lists {len(names)} node(s), {'none' if not found else 'several'} "
                                f"named {name} or {name}.<domain>", _todo("ask the cluster", name))
        node.name = found[0]
        yield node
    finally:
        os.unlink(path)


# ---------------------------------------------------------------- the resource


_NODE_ROLL = NodeRollProvider()


class NodeRoll(Resource):
    """The settings of one cluster node's VM that need it powered off, applied one node at a time
    (module docstring); components/vsphere/vms.py makes each running node's depend on the previous one's.
    Its provider (``opts.provider``, components/dynamic/provider.py `node_roll_provider`) holds how to reach
    vCenter and the cluster: the state keeps one copy of those credentials, not one per node."""

    def __init__(
        self,
        name: str,
        *,
        vm_id: pulumi.Input[str],
        vm_name: str,
        role: str,
        cpus: int,
        memory_mb: int,
        memory_reservation_mb: int | None,
        hardware_version: int | None,
        vgpu_profile: str | None,
        drain_timeout_s: int,
        new_vm: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {
            "kind": KIND,
            "vmId": vm_id,
            "vmName": vm_name,
            "nodeName": vm_name,
            "role": role,
            "cpus": cpus,
            "memoryMb": memory_mb,
            "memoryReservationMb": memory_reservation_mb,
            "hardwareVersion": hardware_version,
            "vgpuProfile": vgpu_profile or "",
            POWERED_ON: True,
            "drainTimeoutS": drain_timeout_s,
            NEW_VM: new_vm,
        }
        super().__init__(_NODE_ROLL, name, props, pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(ignore_changes=[NEW_VM])))
