"""Pulumi dynamic resources for the vSphere settings pulumi-vsphere has no argument for.

Each resource sets one thing through pyvmomi (``hostops``): a host advanced option, a host
firewall ruleset, the host graphics type, a VMkernel module's options, or a VM's vGPU
profile. Create records the value it found in the ``original`` output and delete puts
that value back, so ``pulumi destroy`` leaves the hosts as they were.

How the engine runs these (and why the code looks like it does):

- The provider object is pickled with dill into the ``__provider`` property and unpickled
  in a separate ``python -m pulumi.dynamic`` process started in the project directory.
  Classes defined in an importable module are pickled by reference, so the provider
  classes live at module level here, hold no state, and import ``hostops`` (and so
  pyVmomi) only inside their methods: the program, and its tests under mocks, never load
  pyVmomi. The state names ``components.vsphere.dynamic.<Provider class>``: renaming or
  moving a provider class breaks update and delete of existing stacks.
- Delete only sees the stored outputs, so every input (the vCenter password included) is
  returned as an output. The password stays a secret in the state three ways: the
  resource wraps it with ``Output.secret`` before registering it, the engine marks an
  output secret when the input of the same name is secret, and every resource asks for
  ``additional_secret_outputs=["password"]``.
- Every resource registers with the type ``pulumi-python:dynamic:Resource`` and carries a
  ``kind`` input that the policy pack keys on (docs/resource-contract.md).
- A failure is one line (host or VM, setting, vSphere call, reason), not a traceback: see
  ``_Failures`` and ``_OneLineTraceback``.
- They are served by an explicit provider with no configuration (``pyvmomi_provider``), not
  the engine's default ``pulumi-python`` provider, whose inputs are the whole stack config.
  So every resource here is served by one provider process.
- Create and update write a value only when vSphere holds another one: an update that changes
  only the connection (a rotated vCenter password) reads and leaves vSphere alone.
- Settings that ESXi reads at boot (module options, graphics type) report ``pendingReboot``
  until the host has booted since they were written (``HostSystem.runtime.bootTime``);
  ``pulumi refresh`` re-reads it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Literal

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

from components.sdk_internals import is_unknown, unwrap_secret, widen_dynamic_provider_server


class VsphereOperationError(RuntimeError):
    """A vSphere step failed; the message is the one line a user needs: which host or VM, which
    setting, which vSphere call, and why (permission, object missing, wrong state, login, network)."""


class NodeDrainError(VsphereOperationError):
    """A cluster step around a vSphere change (cordon, drain, wait for Ready, uncordon) failed;
    one line like a vSphere failure, with what oc said."""


class SettingNotApplied(RuntimeError):
    """vSphere accepted a write but reads back another value (the host ignored it)."""


class _OneLineTraceback:
    """``traceback`` as the dynamic provider server sees it, except that a VsphereOperationError is
    reported as its message alone instead of a 40-line Python traceback.

    The server (``python -m pulumi.dynamic``, pulumi 3.x: ``_abort_with_traceback``) sends
    ``traceback.format_exc()`` as the gRPC error of every failed call; its module global
    ``traceback`` is looked up at call time, so replacing it in that module changes only the text.
    """

    def __getattr__(self, name: str) -> Any:
        return getattr(traceback, name)

    @staticmethod
    def format_exc(*args: Any, **kwargs: Any) -> str:
        error = sys.exc_info()[1]
        if isinstance(error, VsphereOperationError):
            return str(error)
        return traceback.format_exc(*args, **kwargs)


def _one_line_errors_in_the_provider_server() -> None:
    server = sys.modules.get("__main__")
    # Only in the SDK's provider server, and only while it still works the way described above.
    if callable(getattr(server, "_abort_with_traceback", None)) and getattr(server, "traceback", None) is traceback:
        setattr(server, "traceback", _OneLineTraceback())  # noqa: B010  (a module attribute the SDK reads)


_one_line_errors_in_the_provider_server()
# As many vSphere calls at once as the engine sends (its --parallel): a lab's host settings and vGPU
# profiles would otherwise go through the provider server's four threads (sdk_internals).
PROVIDER_SERVER_WORKERS = 64
widen_dynamic_provider_server(PROVIDER_SERVER_WORKERS)


class _Failures:
    """Context for one provider call: records which vSphere call runs, and turns a vSphere, look-up or
    network error into one VsphereOperationError line naming the target, the setting, the call and
    the reason (any other error is a bug and keeps its traceback)."""

    def __init__(self, provider: _SettingProvider, props: dict[str, Any], action: str) -> None:
        self.provider, self.props, self.action = provider, props, action
        self.call = "SessionManager.Login"

    def __call__(self, call: str) -> None:
        self.call = call

    def __enter__(self) -> _Failures:
        return self

    def __exit__(self, _type, error, _tb) -> Literal[False]:
        if error is None or isinstance(error, VsphereOperationError) or not isinstance(error, Exception):
            return False
        from components.vsphere import hostops

        reason: str | None
        if isinstance(error, SettingNotApplied):
            reason = f"not applied: {error}"
        else:
            reason = hostops.describe_failure(error, self.props.get("server"), self.props.get("port") or 443)
        if reason is None:
            return False  # not a vSphere failure but a bug: its traceback is what helps
        line = (f"{self.provider._target_label(self.props)}, {self.provider._setting_label(self.props)}: "
                f"{self.action} failed in {self.call}: {reason}")
        raise VsphereOperationError(" ".join(line.split())) from None


CONNECTION_KEYS = ("server", "user", "password", "insecure", "port")
SECRET_OUTPUTS = ["password"]
ORIGINAL = "original"
"""Output holding the value found at create; delete writes it back."""
PENDING_REBOOT = "pendingReboot"
"""Output of a setting ESXi reads at boot: written, and the host has not booted since."""
PENDING_SINCE_BOOT = "pendingSinceBoot"
"""Output: the host's boot time (ISO 8601) when the value was written, while it is pending."""


@dataclass(frozen=True)
class VcenterConnection:
    """How the providers reach vCenter. ``password`` is a secret Input (LabSecrets)."""

    server: pulumi.Input[str]
    """vCenter address (FQDN or IP) as the Pulumi host machine reaches it."""
    user: pulumi.Input[str]
    """vCenter user, e.g. administrator@vsphere.local."""
    password: pulumi.Input[str]
    """vCenter password; kept secret in the state."""
    insecure: bool = False
    """Skip TLS certificate checks (self-signed lab vCenter)."""
    port: int = 443
    """vCenter HTTPS port."""


def _connection_props(conn: VcenterConnection) -> dict[str, Any]:
    return {
        "server": conn.server,
        "user": conn.user,
        # Secret even when a caller hands over a plain string.
        "password": pulumi.Output.secret(conn.password),
        "insecure": conn.insecure,
        "port": conn.port,
    }


DYNAMIC_PACKAGE = "pulumi-python"


def pyvmomi_provider() -> pulumi.ProviderResource:
    """The provider for these resources: the dynamic provider, configured with nothing.

    The engine configures the default ``pulumi-python`` provider with every key of the stack's
    config, secrets included (``Target.GetPackageConfig`` in pulumi/pulumi's
    pkg/resource/deploy/target.go), and sends a resource's provider inputs with it on each
    policy-pack request, two per resource, writing them to its log each time. Everything these
    resources need arrives as their own inputs, so their provider needs no config. Switching an
    existing stack over replaces nothing: the dynamic provider has no DiffConfig, and the
    engine then keeps the resources (``providerChanged`` in pkg/resource/deploy/step_generator.go).
    """
    return pulumi.ProviderResource(DYNAMIC_PACKAGE, "pyvmomi", {})


def _with_secret_outputs(opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=SECRET_OUTPUTS))


def _plain(props: dict[str, Any]) -> dict[str, Any]:
    """Inputs as plain values, without the serialized provider.

    The engine strips secrets before calling a provider that does not accept them, but a
    wrapped secret reaching us must not end up as a dict where a password belongs.
    """
    return {k: unwrap_secret(v) for k, v in props.items() if k != "__provider"}


def _known(value: Any) -> bool:
    return value is not None and not is_unknown(value)


class _SettingProvider(ResourceProvider):
    """One vSphere setting on one target: read it, write it, put it back.

    Subclasses name the inputs that identify the target (a change replaces the resource)
    and the input holding the desired value (a change updates it), and implement
    ``_target``, ``_get`` and ``_set`` with ``hostops``.
    """

    kind: str = ""
    target_keys: tuple[str, ...] = ()
    value_key: str = ""
    informational_keys: tuple[str, ...] = ()
    needs_reboot: bool = False
    """ESXi reads the setting at boot: report it as pending until the host has rebooted."""
    # the vSphere calls behind _target, _get and _set, for error messages
    find_call: str = ""
    get_call: str = ""
    set_call: str = ""

    def _target_label(self, props: dict[str, Any]) -> str:
        return f"host {props.get('hostName')!r}"

    def _setting_label(self, props: dict[str, Any]) -> str:
        raise NotImplementedError

    # -- to implement

    def _target(self, si: Any, props: dict[str, Any], *, deleting: bool = False) -> Any:
        raise NotImplementedError

    def _get(self, target: Any, props: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _set(self, target: Any, props: dict[str, Any], value: Any) -> None:
        raise NotImplementedError

    def _id(self, props: dict[str, Any]) -> str:
        raise NotImplementedError

    def _same(self, live: Any, wanted: Any) -> bool:
        return live == wanted

    def _check_value(self, value: Any) -> str | None:
        """Why ``value`` is not acceptable, or None."""
        return None

    # -- shared machinery

    def _session(self, props: dict[str, Any]):
        from components.vsphere import hostops

        return hostops.shared_session(
            props["server"],
            props["user"],
            props["password"],
            port=int(props.get("port") or 443),
            insecure=bool(props.get("insecure")),
        )

    def _apply(self, target: Any, props: dict[str, Any], value: Any, step: _Failures) -> None:
        """Write ``value`` and read it back: a setting the host silently ignored is an error."""
        step(self.set_call)
        self._set(target, props, value)
        step(self.get_call)
        live = self._get(target, props)
        if not self._same(live, value):
            raise SettingNotApplied(f"wrote {value!r} but vSphere reports {live!r}")

    def _find(self, si: Any, props: dict[str, Any], step: _Failures, *, deleting: bool = False) -> Any:
        step(self.find_call)
        return self._target(si, props, deleting=deleting)

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        plain = _plain(news)
        for key in ("server", "user", *self.target_keys):
            if _known(plain.get(key)) and not str(plain[key]).strip():
                failures.append(CheckFailure(key, f"{key} must not be empty"))
        value = plain.get(self.value_key)
        if _known(value):
            reason = self._check_value(value)
            if reason:
                failures.append(CheckFailure(self.value_key, reason))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        old, new = _plain(olds), _plain(news)
        replaces = [k for k in ("server", *self.target_keys) if old.get(k) != new.get(k)]
        updates = [
            k
            for k in (self.value_key, "user", "password", "insecure", "port", *self.informational_keys)
            if old.get(k) != new.get(k)
        ]
        return DiffResult(
            changes=bool(replaces or updates),
            replaces=replaces,
            # The old resource must put its original value back before the new one records
            # what it finds: both may reach the same setting (a vCenter renamed, say).
            delete_before_replace=True,
        )

    def _write_if_different(self, target: Any, props: dict[str, Any], value: Any, step: _Failures) -> bool:
        """Bring the setting to ``value``; False when vSphere already had it (nothing written)."""
        step(self.get_call)
        if self._same(self._get(target, props), value):
            return False
        self._apply(target, props, value, step)
        return True

    def _pending(self, since: str | None) -> dict[str, Any]:
        """The pending-reboot outputs of a setting ESXi reads at boot, written during boot ``since``."""
        if not self.needs_reboot:
            return {}
        return {PENDING_SINCE_BOOT: since, PENDING_REBOOT: since is not None}

    def _boot(self, target: Any, step: _Failures) -> str:
        from components.vsphere import hostops

        step("HostSystem.runtime.bootTime")
        return hostops.boot_time(target)

    def _still_pending(self, target: Any, step: _Failures, since: str | None) -> str | None:
        """``since`` while the host has not booted again since then, else None (the setting is in force)."""
        if since is None or not self.needs_reboot or self._boot(target, step) != since:
            return None
        return since

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = _plain(props)
        with _Failures(self, inputs, "create") as step, self._session(inputs) as si:
            target = self._find(si, inputs, step)
            step(self.get_call)
            original = self._get(target, inputs)
            written = False
            if not self._same(original, inputs[self.value_key]):
                try:
                    self._apply(target, inputs, inputs[self.value_key], step)
                    written = True
                except Exception:
                    # Create must leave nothing behind when it fails.
                    try:
                        self._set(target, inputs, original)
                    except Exception:  # noqa: BLE001 - the first error is the one to report
                        pass
                    raise
            pending = self._pending(self._boot(target, step) if written and self.needs_reboot else None)
        return CreateResult(self._id(inputs), {**inputs, ORIGINAL: original, **pending})

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        inputs, previous = _plain(news), _plain(olds)
        with _Failures(self, inputs, "update") as step, self._session(inputs) as si:
            target = self._find(si, inputs, step)
            written = self._write_if_different(target, inputs, inputs[self.value_key], step)
            since: str | None
            if written and self.needs_reboot:
                since = self._boot(target, step)
            else:
                since = self._still_pending(target, step, previous.get(PENDING_SINCE_BOOT))
            pending = self._pending(since)
        # The value to restore is still the one found by create, not the one replaced here.
        return UpdateResult({**inputs, ORIGINAL: previous.get(ORIGINAL), **pending})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        state = _plain(props)
        if ORIGINAL not in state or state[ORIGINAL] is None:
            return
        with _Failures(self, state, "delete (restoring the original value)") as step, self._session(state) as si:
            target = self._find(si, state, step, deleting=True)
            if target is not None:
                self._write_if_different(target, state, state[ORIGINAL], step)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        state = _plain(props)
        with _Failures(self, state, "read") as step, self._session(state) as si:
            target = self._find(si, state, step, deleting=True)
            if target is None:
                return ReadResult(None, {})
            step(self.get_call)
            live = self._get(target, state)
            pending = self._pending(self._still_pending(target, step, state.get(PENDING_SINCE_BOOT)))
        return ReadResult(id_, {**state, self.value_key: live, **pending})


class _HostSettingProvider(_SettingProvider):
    find_call = "ViewManager.CreateContainerView (HostSystem look-up)"

    def _target(self, si: Any, props: dict[str, Any], *, deleting: bool = False) -> Any:
        from components.vsphere import hostops

        return hostops.find_host(si, props["hostName"])


class AdvancedOptionProvider(_HostSettingProvider):
    kind = "vsphere-host-advanced-option"
    target_keys = ("hostName", "key")
    value_key = "value"
    get_call = "OptionManager.QueryOptions"
    set_call = "OptionManager.UpdateOptions"

    def _setting_label(self, props: dict[str, Any]) -> str:
        return f"advanced option {props.get('key')}"

    def _id(self, props: dict[str, Any]) -> str:
        return f"{props['hostName']}:option:{props['key']}"

    def _get(self, target: Any, props: dict[str, Any]) -> Any:
        from components.vsphere import hostops

        return hostops.get_advanced_option(target, props["key"])

    def _set(self, target: Any, props: dict[str, Any], value: Any) -> None:
        from components.vsphere import hostops

        hostops.set_advanced_option(target, props["key"], value)

    def _same(self, live: Any, wanted: Any) -> bool:
        from components.vsphere import hostops

        return hostops.as_option_type(wanted, live) == live


class FirewallRulesetProvider(_HostSettingProvider):
    kind = "vsphere-host-firewall-ruleset"
    target_keys = ("hostName", "ruleset")
    value_key = "enabled"
    get_call = "HostFirewallSystem.firewallInfo"
    set_call = "HostFirewallSystem.EnableRuleset/DisableRuleset"

    def _setting_label(self, props: dict[str, Any]) -> str:
        return f"firewall ruleset {props.get('ruleset')}"

    def _id(self, props: dict[str, Any]) -> str:
        return f"{props['hostName']}:firewall:{props['ruleset']}"

    def _check_value(self, value: Any) -> str | None:
        return None if isinstance(value, bool) else "enabled must be true or false"

    def _get(self, target: Any, props: dict[str, Any]) -> Any:
        from components.vsphere import hostops

        return hostops.get_ruleset_enabled(target, props["ruleset"])

    def _set(self, target: Any, props: dict[str, Any], value: Any) -> None:
        from components.vsphere import hostops

        hostops.set_ruleset_enabled(target, props["ruleset"], bool(value))


class GraphicsTypeProvider(_HostSettingProvider):
    kind = "vsphere-host-graphics"
    target_keys = ("hostName",)
    value_key = "graphicsType"
    needs_reboot = True  # in use once Xorg restarts or the host reboots (only the reboot is visible)
    get_call = "HostGraphicsManager.graphicsConfig"
    set_call = "HostGraphicsManager.UpdateGraphicsConfig"

    def _setting_label(self, props: dict[str, Any]) -> str:
        return "graphics type"

    def _id(self, props: dict[str, Any]) -> str:
        return f"{props['hostName']}:graphics"

    def _check_value(self, value: Any) -> str | None:
        # Not hostops.GRAPHICS_TYPES: that would load pyVmomi during preview.
        allowed = ("shared", "sharedDirect")
        if value in allowed:
            return None
        return f"graphicsType must be one of {', '.join(allowed)} (vGPU needs sharedDirect)"

    def _get(self, target: Any, props: dict[str, Any]) -> Any:
        from components.vsphere import hostops

        return hostops.get_graphics_type(target)

    def _set(self, target: Any, props: dict[str, Any], value: Any) -> None:
        from components.vsphere import hostops

        hostops.set_graphics_type(target, value)


class ModuleOptionsProvider(_HostSettingProvider):
    kind = "vsphere-host-module-options"
    target_keys = ("hostName", "module")
    value_key = "options"
    needs_reboot = True  # the module reads its options when it loads, at boot
    get_call = "HostKernelModuleSystem.QueryConfiguredModuleOptionString"
    set_call = "HostKernelModuleSystem.UpdateModuleOptionString"

    def _setting_label(self, props: dict[str, Any]) -> str:
        return f"options of module {props.get('module')}"

    def _id(self, props: dict[str, Any]) -> str:
        return f"{props['hostName']}:module:{props['module']}"

    def _check_value(self, value: Any) -> str | None:
        return None if isinstance(value, str) else "options must be a string such as 'pfctx=0x08 pfcrx=0x08'"

    def _get(self, target: Any, props: dict[str, Any]) -> Any:
        from components.vsphere import hostops

        return hostops.get_module_options(target, props["module"])

    def _set(self, target: Any, props: dict[str, Any], value: Any) -> None:
        from components.vsphere import hostops

        hostops.set_module_options(target, props["module"], "" if value is None else str(value))


DRAIN_TIMEOUT_S = 900
REBOOT_TIMEOUT_S = 900
READY_TIMEOUT_S = 1200
_OC_GET_TIMEOUT_S = 60  # a look-up that takes longer means the cluster is not reachable
_REBOOT_POLL_S = 5


class _Node:
    """One Kubernetes node, driven with oc and a kubeconfig file of its own."""

    def __init__(self, oc: str, kubeconfig_path: str, name: str, label: str) -> None:
        self.oc, self.kubeconfig_path, self.name, self.label = oc, kubeconfig_path, name, label

    def run(self, *args: str, timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run([self.oc, *args], env={**os.environ, "KUBECONFIG": self.kubeconfig_path},
                              capture_output=True, text=True, timeout=timeout, check=False)

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
        from components.vsphere import hostops

        if not deleting:
            return hostops.find_vm(si, props["vmId"], props.get("vmName"))
        try:
            return hostops.find_vm(si, props["vmId"])
        except hostops.VsphereLookupError:
            return None  # the VM is gone, and its vGPU with it: nothing to put back

    def _get(self, target: Any, props: dict[str, Any]) -> Any:
        from components.vsphere import hostops

        return hostops.get_vgpu_profile(target)

    def _set(self, target: Any, props: dict[str, Any], value: Any) -> None:
        from components.vsphere import hostops

        hostops.set_vgpu_profile(target, value or "")

    def _same(self, live: Any, wanted: Any) -> bool:
        return (live or "") == (wanted or "")

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        """As any setting, except that the profile is not compared: the roll changes it, and a refresh then
        reads the new profile into this resource's state while its input keeps the one it attached."""
        return super().diff(_id, {**olds, self.value_key: None}, {**news, self.value_key: None})

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        """Nothing on vSphere: a profile change is the node's roll (components/vsphere/roll.py, NodeRoll),
        which drains the node and changes one VM at a time; this resource keeps the profile it attached
        (LabVms registers it with ignore_changes on `profile`). What changes here (the connection, the
        kubeconfig, oc) only reaches the state."""
        return UpdateResult({**_plain(news), ORIGINAL: _plain(olds).get(ORIGINAL)})


_ADVANCED_OPTION = AdvancedOptionProvider()
_FIREWALL_RULESET = FirewallRulesetProvider()
_GRAPHICS_TYPE = GraphicsTypeProvider()
_MODULE_OPTIONS = ModuleOptionsProvider()
_VGPU_PROFILE = VgpuProfileProvider()


class HostAdvancedOption(Resource):
    """A host advanced option, e.g. ``Net.PVRDMAVmknic = vmk1`` (the vmknic PVRDMA uses)."""

    original: pulumi.Output[Any]
    """The option's value before create; delete restores it."""

    def __init__(
        self,
        name: str,
        conn: VcenterConnection,
        host_name: pulumi.Input[str],
        key: pulumi.Input[str],
        value: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "kind": _ADVANCED_OPTION.kind,
            **_connection_props(conn),
            "hostName": host_name,
            "key": key,
            "value": value,
            ORIGINAL: None,
        }
        super().__init__(_ADVANCED_OPTION, name, props, _with_secret_outputs(opts))


class HostFirewallRuleset(Resource):
    """A host firewall ruleset switched on or off (``pvrdma`` opens PVRDMA's port 28250)."""

    original: pulumi.Output[bool]
    """Whether the ruleset was enabled before create; delete restores it."""

    def __init__(
        self,
        name: str,
        conn: VcenterConnection,
        host_name: pulumi.Input[str],
        ruleset: pulumi.Input[str] = "pvrdma",
        enabled: pulumi.Input[bool] = True,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "kind": _FIREWALL_RULESET.kind,
            **_connection_props(conn),
            "hostName": host_name,
            "ruleset": ruleset,
            "enabled": enabled,
            ORIGINAL: None,
        }
        super().__init__(_FIREWALL_RULESET, name, props, _with_secret_outputs(opts))


class _PendingReboot:
    """A host setting that ESXi reads at boot."""

    @property
    def pending_reboot(self) -> pulumi.Output[bool]:
        """Written, and the host has not rebooted since (``pulumi refresh`` re-reads the boot time)."""
        output: pulumi.Output[bool] = getattr(self, PENDING_REBOOT)  # the SDK names outputs by their key
        return output


class HostGraphicsType(Resource, _PendingReboot):
    """The host default graphics type; NVIDIA vGPU needs ``sharedDirect`` (Shared Direct).

    ESXi uses the new type once Xorg restarts or the host reboots.
    """

    original: pulumi.Output[str]
    """The graphics type before create; delete restores it."""

    def __init__(
        self,
        name: str,
        conn: VcenterConnection,
        host_name: pulumi.Input[str],
        graphics_type: pulumi.Input[str] = "sharedDirect",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "kind": _GRAPHICS_TYPE.kind,
            **_connection_props(conn),
            "hostName": host_name,
            "graphicsType": graphics_type,
            ORIGINAL: None,
            PENDING_REBOOT: None,
            PENDING_SINCE_BOOT: None,
        }
        super().__init__(_GRAPHICS_TYPE, name, props, _with_secret_outputs(opts))


class HostModuleOptions(Resource, _PendingReboot):
    """The option string of a VMkernel module, e.g. ConnectX PFC and trust for ``nmlx5_core``.

    The whole string is replaced, not merged. ESXi hands it to the module when the module
    loads, so the options take effect only after the host reboots (plan a rolling reboot
    in maintenance mode); until then the running driver keeps its old settings.
    """

    original: pulumi.Output[str]
    """The option string before create ("" when none); delete restores it."""

    def __init__(
        self,
        name: str,
        conn: VcenterConnection,
        host_name: pulumi.Input[str],
        module: pulumi.Input[str] = "nmlx5_core",
        options: pulumi.Input[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        if options is None:  # no silent default: "" would wipe the module's options
            raise TypeError("HostModuleOptions needs options, e.g. 'pfctx=0x08 pfcrx=0x08 trust_state=2'")
        props = {
            "kind": _MODULE_OPTIONS.kind,
            **_connection_props(conn),
            "hostName": host_name,
            "module": module,
            "options": options,
            ORIGINAL: None,
            PENDING_REBOOT: None,
            PENDING_SINCE_BOOT: None,
        }
        super().__init__(_MODULE_OPTIONS, name, props, _with_secret_outputs(opts))


class VmVgpuProfile(Resource):
    """An NVIDIA vGPU (a PCI passthrough device with a vmiop backing) on one VM.

    ``vm_id`` is the VM's managed object id (pulumi-vsphere ``VirtualMachine.moid``). vSphere
    changes vGPU devices only on a powered-off VM: a running VM is shut down, reconfigured
    and powered on again. Delete removes the device (or restores a vGPU found at create).

    A profile change on an existing VM is not this resource's: the node's roll makes it
    (components/vsphere/roll.py), one node at a time and drained. ``kubeconfig``, ``oc`` and
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
