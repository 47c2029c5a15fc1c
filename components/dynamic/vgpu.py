"""A VM's NVIDIA vGPU profile as a dynamic resource, and the node that a change drains with `oc`.

The provider class is pickled into the state by module and name (docs/engine.md).
"""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any

import pulumi
from pulumi.dynamic import DiffResult, Resource, UpdateResult

from components.dynamic.provider import (
    ORIGINAL,
    NodeDrainError,
    VcenterConnection,
    _connection_props,
    _plain,
    _SettingProvider,
    _with_secret_outputs,
)

DRAIN_TIMEOUT_S = 900
REBOOT_TIMEOUT_S = 900
READY_TIMEOUT_S = 1200
_OC_GET_TIMEOUT_S = 60  # a look-up that takes longer means the cluster is not reachable
_REBOOT_POLL_S = 5


class _Node:
    """One Kubernetes node, driven with oc and a kubeconfig file of its own."""

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

    def drain(self) -> None:
        # No --force: a pod no controller would recreate stops the drain instead of being lost.
        self.must("oc adm drain", "adm", "drain", self.name, "--ignore-daemonsets", "--delete-emptydir-data",
                  f"--timeout={DRAIN_TIMEOUT_S}s", timeout=DRAIN_TIMEOUT_S + 60)

    def wait_rebooted(self, boot_before: str) -> None:
        """Until the kubelet reports a new boot: right after the power-on the node may still show the
        Ready status it had before the power-off."""
        deadline = time.monotonic() + REBOOT_TIMEOUT_S
        while time.monotonic() < deadline:
            done = self.run("get", f"node/{self.name}", "-o", "jsonpath={.status.nodeInfo.bootID}",
                            timeout=_OC_GET_TIMEOUT_S)
            if done.returncode == 0 and done.stdout.strip() not in ("", boot_before):
                return
            time.sleep(_REBOOT_POLL_S)
        raise NodeDrainError(f"{self.label}, node {self.name}: the node did not report a new boot within "
                             f"{REBOOT_TIMEOUT_S} s of the power-on")

    def wait_ready(self) -> None:
        self.must("oc wait --for=condition=Ready", "wait", "--for=condition=Ready", f"node/{self.name}",
                  f"--timeout={READY_TIMEOUT_S}s", timeout=READY_TIMEOUT_S + 60)

    def uncordon(self) -> None:
        self.must("oc adm uncordon", "adm", "uncordon", self.name, timeout=_OC_GET_TIMEOUT_S)


class VgpuProfileProvider(_SettingProvider):
    kind = "vsphere-vm-vgpu"
    target_keys = ("vmId",)
    value_key = "profile"
    # How to reach the node; changing them changes nothing on vSphere.
    informational_keys = ("vmName", "kubeconfig", "oc", "nodeName")
    find_call = "VirtualMachine.name (VM look-up by id)"
    get_call = "VirtualMachine.config"
    set_call = "VirtualMachine.ReconfigVM_Task (with power-off and power-on when running)"

    def _target_label(self, props: dict[str, Any]) -> str:
        return f"VM {props.get('vmName')!r} ({props.get('vmId')})"

    def _setting_label(self, props: dict[str, Any]) -> str:
        return "vGPU profile"

    def _id(self, props: dict[str, Any]) -> str:
        return f"{props['vmId']}:vgpu"

    def _check_value(self, value: Any) -> str | None:
        if isinstance(value, str) and value.strip():
            return None
        return "profile must name a vGPU profile, e.g. grid_v100-16c"

    def _target(self, si: Any, props: dict[str, Any], *, deleting: bool = False) -> Any:
        from components.dynamic import hostops

        if not deleting:
            return hostops.find_vm(si, props["vmId"], props.get("vmName"))
        try:
            return hostops.find_vm(si, props["vmId"])
        except hostops.VsphereLookupError:
            return None  # the VM is gone, and its vGPU with it: nothing to put back

    def _get(self, target: Any, props: dict[str, Any]) -> Any:
        from components.dynamic import hostops

        return hostops.get_vgpu_profile(target)

    def _set(self, target: Any, props: dict[str, Any], value: Any) -> None:
        from components.dynamic import hostops

        hostops.set_vgpu_profile(target, value or "")

    def _same(self, live: Any, wanted: Any) -> bool:
        return (live or "") == (wanted or "")

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        """As any setting, except that the profile is not compared: the roll changes it, and a refresh then
        reads the new profile into this resource's state while its input keeps the one it attached."""
        return super().diff(_id, {**olds, self.value_key: None}, {**news, self.value_key: None})

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        """Nothing on vSphere: a profile change is the node's roll (components/dynamic/roll.py, NodeRoll),
        which drains the node and changes one VM at a time; this resource keeps the profile it attached
        (LabVms registers it with ignore_changes on `profile`). What changes here (the connection, the
        kubeconfig, oc) only reaches the state."""
        return UpdateResult({**_plain(news), ORIGINAL: _plain(olds).get(ORIGINAL)})


_VGPU_PROFILE = VgpuProfileProvider()


class VmVgpuProfile(Resource):
    """An NVIDIA vGPU (a PCI passthrough device with a vmiop backing) on one VM.

    ``vm_id`` is the VM's managed object id (pulumi-vsphere ``VirtualMachine.moid``). vSphere
    changes vGPU devices only on a powered-off VM: a running VM is shut down, reconfigured
    and powered on again. Delete removes the device (or restores a vGPU found at create).

    A profile change on an existing VM is not this resource's: the node's roll makes it
    (components/dynamic/roll.py), one node at a time and drained. ``kubeconfig``, ``oc`` and
    ``node_name`` stay among its inputs so that labs built before the roll see no change.
    """

    original: pulumi.Output[str]
    """The vGPU profile the VM had before create ("" for none); delete restores it."""

    def __init__(
        self,
        name: str,
        conn: VcenterConnection,
        vm_id: pulumi.Input[str],
        vm_name: pulumi.Input[str],
        profile: pulumi.Input[str],
        kubeconfig: pulumi.Input[str] | None = None,
        oc: pulumi.Input[str] = "oc",
        node_name: pulumi.Input[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "kind": _VGPU_PROFILE.kind,
            **_connection_props(conn),
            "vmId": vm_id,
            "vmName": vm_name,
            "profile": profile,
            ORIGINAL: None,
        }
        if kubeconfig is not None:
            # Only with a cluster to drain: a lab without one (and its state) keeps the inputs it had.
            props.update(kubeconfig=pulumi.Output.secret(kubeconfig), oc=oc,
                         nodeName=node_name if node_name is not None else vm_name)
        super().__init__(_VGPU_PROFILE, name, props, pulumi.ResourceOptions.merge(
            _with_secret_outputs(opts), pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])))
