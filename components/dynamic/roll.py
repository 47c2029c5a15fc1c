"""NodeRoll: every change that powers a cluster node's VM off (vCPUs, memory, reservation, vGPU
profile, hardware version), one node at a time, drained, in the plan's order, stopping at the first
failure; pulumi-vsphere would power every VM of a group off at once. The steps, the failure handling
and the live power check: docs/engine.md ("The node roll").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)

from components.dynamic.provider import (
    SECRET_OUTPUTS,
    NodeDrainError,
    VcenterConnection,
    VsphereOperationError,
    _connection_props,
    _known,
    _plain,
)
from components.dynamic.vgpu import _Node
from labrules.vsphere import MAX_MEMORY_GB, MAX_VCPUS  # noqa: F401 - the bounds check() applies

KIND = "vsphere-vm-roll"
ROLLED = ("cpus", "memoryMb", "memoryReservationMb", "hardwareVersion", "vgpuProfile")
"""The VM settings a NodeRoll applies, each of which needs the VM powered off to change."""
POWERED_ON = "poweredOn"
NODE_KEYS = ("vmName", "role", "kubeconfig", "oc", "nodeName", "drainTimeoutS")
"""How to reach the node and how long its drain may take: changing them changes nothing on vSphere."""
STEPS = ("health before", "cordon", "drain", "power-off", "reconfigure", "power-on", "Ready", "health after",
         "uncordon")
"""The steps of one node's roll, as the error names them."""

DEFAULT_DRAIN_TIMEOUT_S = 900
REBOOT_TIMEOUT_S = 900
READY_TIMEOUT_S = 1200
HEALTH_TIMEOUT_S = 900
_OC_GET_TIMEOUT_S = 60
_POLL_S = 5.0
HEALTH_OPERATORS = ("etcd", "kube-apiserver")


def in_provider_server() -> bool:
    """True in the engine's dynamic provider process (`python -m pulumi.dynamic`), where the diff may
    read vSphere; False in the program, its tests under mocks and `make diff`, which stay offline."""
    return callable(getattr(sys.modules.get("__main__"), "_abort_with_traceback", None))


LIVE_DIFF = in_provider_server()
"""Whether `diff` reads the VM's power state (tests switch it on)."""


class RollStepError(VsphereOperationError):
    """One node's roll failed at one step; the message names node, step, what happened and what to do."""

    def __init__(self, node: str, step: str, reason: str, todo: str) -> None:
        self.node, self.step = node, step
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


class NodeRollProvider(ResourceProvider):
    """Dynamic provider of NodeRoll."""

    kind = KIND

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
        replaces = [k for k in ("server", "vmId") if old.get(k) != new.get(k)]
        changed = [k for k in (*ROLLED, POWERED_ON, "user", "password", "insecure", "port", *NODE_KEYS)
                   if old.get(k) != new.get(k)]
        if not replaces and not changed and LIVE_DIFF and new.get(POWERED_ON) and not self._live_on(old):
            changed.append(POWERED_ON)  # the VM is off: the update powers it on
        return DiffResult(changes=bool(replaces or changed), replaces=replaces, delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = _plain(props)
        outs = self._converge(inputs)
        return CreateResult(f"{inputs['vmId']}:roll", outs)

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
            with self._session(state) as si:
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

    def _converge(self, inputs: dict[str, Any]) -> dict[str, Any]:
        from components.dynamic import hostops

        name = str(inputs.get("nodeName") or inputs["vmName"])
        try:
            with self._session(inputs) as si:
                vm = _Vm(hostops.find_vm(si, inputs["vmId"], inputs.get("vmName")), f"VM {inputs.get('vmName')!r}")
                live = vm.settings()
                changes = differences(live, wanted_settings(inputs))
                if changes:
                    self._roll(inputs, name, vm, live, changes)
                elif not vm.powered_on():
                    self._power_on_only(inputs, name, vm)
        except VsphereOperationError:
            raise
        except Exception as error:  # noqa: BLE001 - one line for a vSphere or network failure
            raise self._vsphere_error(inputs, "roll", error) from None
        return {**inputs, POWERED_ON: True}

    def _roll(self, inputs: dict[str, Any], name: str, vm: _Vm, live: dict[str, Any], changes: list[str]) -> None:
        from components.dynamic import hostops

        wanted = wanted_settings(inputs)
        said = ", ".join(f"{k} {_show(live.get(k))} -> {_show(wanted.get(k))}" for k in changes)
        pulumi.log.info(f"node {name}: rolling ({said})")
        control_plane = inputs.get("role") == "control-plane"
        was_on = vm.powered_on()
        with _cluster(inputs, name, needed=was_on) as node:
            step = "health before"
            if node is not None and control_plane:
                _wait_healthy(node, name, step)
            boot = node.boot_id() if node is not None else None
            cordoned = False
            try:
                if node is not None:
                    step = "cordon"
                    node.cordon()
                    cordoned = True
                    step = "drain"
                    node.drain_for(int(inputs.get("drainTimeoutS") or DEFAULT_DRAIN_TIMEOUT_S))
                step = "power-off"
                if was_on:
                    hostops.power_off(vm.vm)
                step = "reconfigure"
                hostops.reconfigure_for_roll(vm.vm, {k: wanted[k] for k in changes})
                step = "power-on"
                try:
                    hostops.power_on(vm.vm)
                except Exception:
                    # The new settings do not start (admission control, a host without room): back to
                    # the old ones, running, before the error is reported.
                    _restore(vm, live, changes)
                    raise
                if node is not None and boot is not None:
                    step = "Ready"
                    node.wait_rebooted(boot)
                    node.wait_ready()
                    if control_plane:
                        step = "health after"
                        _wait_healthy(node, name, step)
                step = "uncordon"
                if node is not None:
                    node.uncordon()
                    cordoned = False
            except RollStepError:
                raise
            except Exception as error:
                if step == "reconfigure":
                    _power_back_on(vm, was_on)
                elif step == "power-off" and was_on:
                    _power_back_on(vm, was_on)
                if cordoned and step in ("drain", "power-off", "reconfigure", "power-on"):
                    # It runs on its old settings (or never stopped): let pods back on it.
                    try:
                        node.uncordon()  # type: ignore[union-attr]
                    except Exception:  # noqa: BLE001 - the first error is the one to report
                        pass
                raise RollStepError(name, step, _reason(error, inputs), _todo(step, name)) from None

    def _power_on_only(self, inputs: dict[str, Any], name: str, vm: _Vm) -> None:
        """A node whose VM is off (by hand, or a roll interrupted before this gpu-lab): power it on and
        wait until it is Ready."""
        from components.dynamic import hostops

        pulumi.log.info(f"node {name}: its VM is off; powering it on")
        try:
            hostops.power_on(vm.vm)
        except Exception as error:  # noqa: BLE001 - named below
            raise RollStepError(name, "power-on", _reason(error, inputs), _todo("power-on", name)) from None
        with _cluster(inputs, name, needed=True) as node:
            if node is None:
                return
            try:
                node.wait_ready()
                node.uncordon()  # a node left cordoned by an interrupted roll
            except NodeDrainError as error:
                raise RollStepError(name, "Ready", _reason(error, inputs), _todo("Ready", name)) from None

    # -- vSphere plumbing

    @contextmanager
    def _session(self, props: dict[str, Any]) -> Iterator[Any]:
        from components.dynamic import hostops

        with hostops.shared_session(props["server"], props["user"], props["password"],
                                    port=int(props.get("port") or 443), insecure=bool(props.get("insecure"))) as si:
            yield si

    def _live_on(self, state: dict[str, Any]) -> bool:
        """Whether the VM runs; True when vSphere cannot say (the update would then fail with the reason)."""
        from components.dynamic import hostops

        try:
            with self._session(state) as si:
                return hostops.is_powered_on(hostops.find_vm(si, state["vmId"]))
        except Exception:  # noqa: BLE001 - a preview is not the place to fail on a vCenter outage
            return True

    def _vsphere_error(self, props: dict[str, Any], action: str, error: Exception) -> Exception:
        from components.dynamic import hostops

        reason = hostops.describe_failure(error, props.get("server"), props.get("port") or 443)
        if reason is None:
            return error
        return VsphereOperationError(f"VM {props.get('vmName')!r} ({props.get('vmId')}): {action} failed: {reason}")


def _reason(error: BaseException, props: dict[str, Any]) -> str:
    from components.dynamic import hostops

    if isinstance(error, NodeDrainError):
        return str(error).split(": ", 1)[-1] if ", node " in str(error) else str(error)
    said = hostops.describe_failure(error, props.get("server"), props.get("port") or 443)
    return said or f"{type(error).__name__}: {error}"


def _todo(step: str, name: str) -> str:
    later = "the nodes after it were not touched; the next `pulumi up` resumes the roll with this node"
    return {
        "health before": f"The cluster is not healthy enough to take a control-plane node out; nothing was changed. "
                         f"Bring etcd and the API server back (oc get clusteroperators etcd kube-apiserver), then "
                         f"`pulumi up`; {later}",
        "cordon": f"Nothing was changed. Check that the cluster answers, then `pulumi up`; {later}",
        "drain": f"Its VM was not touched and it is uncordoned again. Move or delete the pods that keep it from "
                 f"draining (a PodDisruptionBudget, a pod no controller recreates: oc adm drain {name} "
                 f"--ignore-daemonsets --delete-emptydir-data --dry-run=server), or raise "
                 f"openshift.drainTimeoutS, then `pulumi up`; {later}",
        "power-off": f"It runs on its old settings and is uncordoned. Check the VM in vCenter, then `pulumi up`; "
                     f"{later}",
        "reconfigure": f"vSphere refused the new settings; it runs on its old settings and is uncordoned. Fix what "
                       f"vSphere names (host capacity, vGPU profile, reservation), then `pulumi up`; {later}",
        "power-on": f"The VM did not power on with the new settings; it was put back on its old settings and "
                    f"powered on where vSphere allowed it. Make room on its host (or choose smaller settings), "
                    f"then `pulumi up`; {later}",
        "Ready": f"The VM runs with the new settings but the node is not Ready (still cordoned). Look at the node "
                 f"(oc describe node {name}), fix it, uncordon it, then `pulumi up`; {later}",
        "health after": f"The node is back but etcd or the API server is not healthy (the node is still cordoned). "
                        f"Wait for the ClusterOperators, uncordon it, then `pulumi up`; {later}",
        "uncordon": f"The node runs with the new settings; uncordon it (oc adm uncordon {name}), then `pulumi up`; "
                    f"{later}",
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


class _RollNode(_Node):
    """A node driven with oc for a roll: the drain takes the stack's timeout."""

    def drain_for(self, timeout_s: int) -> None:
        # No --force: a pod no controller would recreate stops the drain instead of being lost, and
        # oc adm drain evicts (PodDisruptionBudgets are respected) until the timeout.
        self.must("oc adm drain", "adm", "drain", self.name, "--ignore-daemonsets", "--delete-emptydir-data",
                  f"--timeout={timeout_s}s", timeout=timeout_s + 60)

    def healthy(self) -> str | None:
        """None when the API server answers /readyz and etcd and kube-apiserver are Available and not
        Degraded, else what is wrong."""
        try:
            ready = self.run("get", "--raw", "/readyz", timeout=_OC_GET_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"/readyz did not answer in {_OC_GET_TIMEOUT_S} s"
        if ready.returncode != 0 or ready.stdout.strip() != "ok":
            said = (ready.stderr.strip() or ready.stdout.strip() or "no answer").splitlines()[-1]
            return f"/readyz: {said}"
        try:
            listed = self.run("get", "clusteroperator", *HEALTH_OPERATORS, "-o", "json", timeout=_OC_GET_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"the ClusterOperators did not answer in {_OC_GET_TIMEOUT_S} s"
        if listed.returncode != 0:
            return "ClusterOperators: " + ((listed.stderr.strip() or "oc failed").splitlines()[-1])
        try:
            items = json.loads(listed.stdout).get("items", [])
        except ValueError:
            return "ClusterOperators: oc did not answer JSON"
        seen: dict[str, dict[str, str]] = {}
        for item in items:
            conditions = {c.get("type"): c.get("status") for c in item.get("status", {}).get("conditions", [])}
            seen[item.get("metadata", {}).get("name")] = conditions
        for operator in HEALTH_OPERATORS:
            if operator not in seen:
                return f"ClusterOperator {operator} not found"
            conditions = seen[operator]
            if conditions.get("Available") != "True" or conditions.get("Degraded") != "False":
                return (f"ClusterOperator {operator} Available={conditions.get('Available')} "
                        f"Degraded={conditions.get('Degraded')}")
        return None


def _wait_healthy(node: _RollNode, name: str, step: str) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    while True:
        wrong = node.healthy()
        if wrong is None:
            return
        if time.monotonic() >= deadline:
            raise RollStepError(name, step, f"not healthy within {HEALTH_TIMEOUT_S} s: {wrong}", _todo(step, name))
        time.sleep(_POLL_S)


@contextmanager
def _cluster(inputs: dict[str, Any], name: str, *, needed: bool) -> Iterator[_RollNode | None]:
    """The node in the cluster, or None (with a warning) when there is no kubeconfig, the cluster does
    not answer or does not know the node: the vSphere change then goes ahead alone, still one node at a
    time. A control-plane node is not changed without a cluster that answers (quorum cannot be checked)."""
    label = f"VM {inputs.get('vmName')!r}"
    if not needed:
        yield None
        return
    control_plane = inputs.get("role") == "control-plane"
    kubeconfig = inputs.get("kubeconfig")
    if not kubeconfig:
        pulumi.log.warn(f"node {name}: no kubeconfig for the cluster; its VM changes without a drain")
        yield None
        return
    oc = shutil.which(str(inputs.get("oc") or "oc"))
    if oc is None:
        raise RollStepError(name, "cordon", f"oc not found as {inputs.get('oc') or 'oc'!r}",
                            "Set gpu-lab:openshift.oc to the oc binary; nothing was changed. Then `pulumi up`")
    handle, path = tempfile.mkstemp(prefix="gpu-lab-kubeconfig-")  # mode 0600
    try:
        with os.fdopen(handle, "w") as out:
            out.write(str(kubeconfig))
        node = _RollNode(oc, path, name, label)
        try:
            listed = node.run("get", "nodes", "-o", "name", timeout=_OC_GET_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            listed = subprocess.CompletedProcess([], 1, "", f"no answer in {_OC_GET_TIMEOUT_S} s")
        if listed.returncode != 0:
            reason = (listed.stderr.strip().splitlines() or ["oc failed"])[-1]
            if control_plane:
                raise RollStepError(name, "health before", f"the cluster does not answer ({reason})",
                                    _todo("health before", name))
            pulumi.log.warn(f"node {name}: the cluster is not reachable ({reason}); its VM changes without a drain")
            yield None
            return
        names = [line.removeprefix("node/") for line in listed.stdout.split()]
        found = [n for n in names if n == name] or [n for n in names if n.startswith(f"{name}.")]
        if len(found) != 1:
            pulumi.log.warn(f"node {name}: not in the cluster; its VM changes without a drain")
            yield None
            return
        node.name = found[0]
        yield node
    finally:
        os.unlink(path)


# ---------------------------------------------------------------- the resource


_NODE_ROLL = NodeRollProvider()


class NodeRoll(Resource):
    """The settings of one cluster node's VM that need it powered off, applied one node at a time
    (module docstring); components/vsphere/vms.py makes each running node's depend on the previous one's."""

    def __init__(
        self,
        name: str,
        conn: VcenterConnection,
        *,
        vm_id: pulumi.Input[str],
        vm_name: str,
        role: str,
        cpus: int,
        memory_mb: int,
        memory_reservation_mb: int | None,
        hardware_version: int | None,
        vgpu_profile: str | None,
        kubeconfig: pulumi.Input[str] | None,
        oc: str,
        drain_timeout_s: int,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {
            "kind": KIND,
            **_connection_props(conn),
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
            "oc": oc,
            "drainTimeoutS": drain_timeout_s,
            "kubeconfig": pulumi.Output.secret(kubeconfig) if kubeconfig is not None else None,
        }
        super().__init__(_NODE_ROLL, name, props, pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(additional_secret_outputs=[*SECRET_OUTPUTS, "kubeconfig"])))
