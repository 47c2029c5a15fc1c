"""The frame of the project's Pulumi dynamic providers: one-line errors, the vCenter connection,
the explicit provider that serves them, and the read-write-restore cycle of one vSphere setting.

How the engine runs them, and why they are written as they are: docs/engine.md ("Our dynamic providers").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    Config,
    ConfigureRequest,
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)

from components.sdk_internals import (
    is_unknown,
    one_line_errors_in_the_provider_server,
    unwrap_secret,
    widen_dynamic_provider_server,
)


class VsphereOperationError(RuntimeError):
    """A vSphere step failed; the message is the one line a user needs: which host or VM, which
    setting, which vSphere call, and why (permission, object missing, wrong state, login, network)."""


class NodeDrainError(VsphereOperationError):
    """A cluster step around a vSphere change (cordon, drain, wait for Ready, uncordon) failed;
    one line like a vSphere failure, with what oc said."""


class SettingNotApplied(RuntimeError):
    """vSphere accepted a write but reads back another value (the host ignored it)."""


# A failure is one line (sdk_internals patches the provider server's traceback for this error type),
# and more vSphere calls run at once than the server's four. 128 threads, measured at 512 workers
# (docs/benchmark.md, "At 512 workers"): 64 queued the vGPU profiles, 1024 starved this one process.
one_line_errors_in_the_provider_server(VsphereOperationError)
PROVIDER_SERVER_WORKERS = 128
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
        from components.dynamic import hostops

        reason: str | None
        if isinstance(error, SettingNotApplied):
            reason = f"not applied: {error}"
        else:
            reason = hostops.describe_failure(error, *self.provider._where())
        if reason is None:
            return False  # not a vSphere failure but a bug: its traceback is what helps
        line = (f"{self.provider._target_label(self.props)}, {self.provider._setting_label(self.props)}: "
                f"{self.action} failed in {self.call}: {reason}")
        raise VsphereOperationError(" ".join(line.split())) from None


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


VCENTER_CONFIG = {"server": "vcenter:server", "port": "vcenter:port", "user": "vcenter:user",
                  "password": "vcenter:password", "insecure": "vcenter:insecure"}
"""The explicit provider's configuration keys for the vCenter connection. A key carries its namespace:
`pulumi.dynamic.Config.get` prefixes a bare key with the project's name."""
CLUSTER_CONFIG = {"kubeconfig": "cluster:kubeconfig", "oc": "cluster:oc"}
"""The node rolls' provider also reaches the cluster: its admin kubeconfig (a secret) and the oc binary."""
RETIRED_INPUTS = ("server", "user", "password", "insecure", "port", "kubeconfig", "oc")
"""What each resource carried before its provider held the connection: a state written by an earlier
release still has them (ignored by every diff; `pulumi refresh` drops them from the outputs)."""


def _vcenter_config(conn: VcenterConnection) -> dict[str, Any]:
    return {
        VCENTER_CONFIG["server"]: conn.server,
        VCENTER_CONFIG["port"]: conn.port,
        VCENTER_CONFIG["user"]: conn.user,
        # Secret even when a caller hands over a plain string.
        VCENTER_CONFIG["password"]: pulumi.Output.secret(conn.password),
        VCENTER_CONFIG["insecure"]: conn.insecure,
    }


DYNAMIC_PACKAGE = "pulumi-python"
PYVMOMI = "pyvmomi"
"""The explicit provider of the vSphere host settings (and the vGPU profiles of labs built before the rolls)."""
NODE_ROLLS = "node-rolls"
"""The explicit provider of the node rolls: vCenter and the cluster."""
GUARD = "lab-guard"
"""The explicit provider of the identity guard (components/dynamic/guard.py)."""


def explicit_provider(name: str, config: dict[str, Any] | None = None) -> pulumi.ProviderResource:
    """A dynamic provider of its own, configured with ``config`` only.

    The engine configures the default ``pulumi-python`` provider with every key of the stack's
    config, secrets included (``Target.GetPackageConfig`` in pulumi/pulumi's
    pkg/resource/deploy/target.go), and sends a resource's provider inputs with it on each
    policy-pack request, two per resource, writing them to its log each time. Switching an
    existing stack over replaces nothing: the dynamic provider has no DiffConfig, and the
    engine then keeps the resources (``providerChanged`` in pkg/resource/deploy/step_generator.go).
    A change of ``config`` (a rotated password, a renewed kubeconfig) updates the provider alone:
    the engine configures a new provider process with it, and no resource takes a step.
    """
    return pulumi.ProviderResource(DYNAMIC_PACKAGE, name, dict(config or {}))


def vcenter_provider(conn: VcenterConnection) -> pulumi.ProviderResource:
    """The host settings' provider: it logs in to vCenter, and holds that login once for all of them."""
    return explicit_provider(PYVMOMI, _vcenter_config(conn))


def node_roll_provider(conn: VcenterConnection, kubeconfig: pulumi.Input[str] | None,
                       oc: str) -> pulumi.ProviderResource:
    """The node rolls' provider: vCenter, and the cluster the nodes are in (no kubeconfig: in none)."""
    return explicit_provider(NODE_ROLLS, {
        **_vcenter_config(conn),
        CLUSTER_CONFIG["kubeconfig"]: pulumi.Output.secret(kubeconfig) if kubeconfig is not None else None,
        CLUSTER_CONFIG["oc"]: oc,
    })


@dataclass(frozen=True)
class VcenterLogin:
    """The connection a provider process was configured with, plain values."""

    server: str
    user: str
    password: str
    port: int = 443
    insecure: bool = False


NOT_CONFIGURED = ("its provider holds no vCenter connection: the stack was last deployed by a release that kept "
                  "it in each resource. Run `pulumi up` once with this release (it records the connection in "
                  "the provider, and changes nothing on vSphere), then retry")


def _configured(config: Config, key: str) -> Any:
    value = config.get(key)
    return None if value is None or is_unknown(value) else unwrap_secret(value)


def vcenter_login(config: Config) -> VcenterLogin | None:
    """The vCenter connection in a provider's configuration; None when it holds none."""
    server, user, password = (_configured(config, VCENTER_CONFIG[k]) for k in ("server", "user", "password"))
    if not server or not user or password is None:
        return None
    port = _configured(config, VCENTER_CONFIG["port"])
    return VcenterLogin(str(server), str(user), str(password), port=int(port or 443),
                        insecure=bool(_configured(config, VCENTER_CONFIG["insecure"])))


class _VcenterProvider(ResourceProvider):
    """A provider that reaches vCenter with the login its explicit provider was configured with."""

    vcenter: VcenterLogin | None = None

    def configure(self, req: ConfigureRequest) -> None:
        self.vcenter = vcenter_login(req.config)

    def login(self) -> VcenterLogin:
        if self.vcenter is None:
            raise VsphereOperationError(NOT_CONFIGURED)
        return self.vcenter

    def _session(self):
        """A vCenter session shared by every call of this process (hostops.shared_session)."""
        from components.dynamic import hostops

        login = self.login()
        return hostops.shared_session(login.server, login.user, login.password, port=login.port,
                                      insecure=login.insecure)

    def _where(self) -> tuple[str | None, int]:
        """vCenter's address and port for an error message (none when not configured)."""
        return (self.vcenter.server, self.vcenter.port) if self.vcenter is not None else (None, 443)


def _plain(props: dict[str, Any]) -> dict[str, Any]:
    """Inputs as plain values, without the serialized provider and without what an earlier release kept in
    each resource (RETIRED_INPUTS): the provider's configuration holds it now, so a refresh drops it.

    The engine strips secrets before calling a provider that does not accept them, but a
    wrapped secret reaching us must not end up as a dict where a password belongs.
    """
    return {k: unwrap_secret(v) for k, v in props.items() if k != "__provider" and k not in RETIRED_INPUTS}


def _known(value: Any) -> bool:
    return value is not None and not is_unknown(value)


class _SettingProvider(_VcenterProvider):
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
        for key in self.target_keys:
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
        replaces = [k for k in self.target_keys if old.get(k) != new.get(k)]
        updates = [k for k in (self.value_key, *self.informational_keys) if old.get(k) != new.get(k)]
        return DiffResult(
            changes=bool(replaces or updates),
            replaces=replaces,
            # The old resource must put its original value back before the new one records
            # what it finds: both may reach the same setting.
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
        from components.dynamic import hostops

        step("HostSystem.runtime.bootTime")
        return hostops.boot_time(target)

    def _still_pending(self, target: Any, step: _Failures, since: str | None) -> str | None:
        """``since`` while the host has not booted again since then, else None (the setting is in force)."""
        if since is None or not self.needs_reboot or self._boot(target, step) != since:
            return None
        return since

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = _plain(props)
        with _Failures(self, inputs, "create") as step, self._session() as si:
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
        with _Failures(self, inputs, "update") as step, self._session() as si:
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
        with _Failures(self, state, "delete (restoring the original value)") as step, self._session() as si:
            target = self._find(si, state, step, deleting=True)
            if target is not None:
                self._write_if_different(target, state, state[ORIGINAL], step)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        state = _plain(props)
        with _Failures(self, state, "read") as step, self._session() as si:
            target = self._find(si, state, step, deleting=True)
            if target is None:
                return ReadResult(None, {})
            step(self.get_call)
            live = self._get(target, state)
            pending = self._pending(self._still_pending(target, step, state.get(PENDING_SINCE_BOOT)))
        return ReadResult(id_, {**state, self.value_key: live, **pending})


