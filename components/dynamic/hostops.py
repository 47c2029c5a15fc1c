"""The pyVmomi operations behind the dynamic providers, one get_* and set_* per setting.

Nothing here knows about Pulumi, so the providers stay thin and the tests read vSphere back with
the same calls. Only the provider process imports it: the program never loads pyVmomi.
"""

from __future__ import annotations

import hashlib
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyVim.connect import Disconnect, SmartConnect
from pyVim.task import WaitForTask
from pyVmomi import vim, vmodl

GRAPHICS_TYPES = ("shared", "sharedDirect")
"""``HostGraphicsConfig.hostDefaultGraphicsType`` values; vGPU needs ``sharedDirect``."""

# Long enough for a real vCenter under load, short enough that a dead endpoint fails a run.
_HTTP_TIMEOUT_S = 120
_GUEST_SHUTDOWN_TIMEOUT_S = 300


class VsphereLookupError(LookupError):
    """A host, VM, option or ruleset named in the inputs does not exist."""


def describe_failure(error: BaseException, server: str | None = None, port: Any = 443) -> str | None:
    """Why a vSphere step failed, in a few words a lab engineer can act on; None when ``error`` is not a
    vSphere, lookup or network failure (a bug, whose traceback is worth keeping)."""
    where = f"vCenter {server}:{int(port or 443)}" if server else "vCenter"
    if isinstance(error, VsphereLookupError):
        return f"object missing: {error}"
    if isinstance(error, vim.fault.NoPermission):
        target = getattr(error, "object", None)
        on = f" on {getattr(target, '_moId', target)}" if target is not None else ""
        return f"permission denied: the vCenter user lacks privilege {error.privilegeId}{on}"
    if isinstance(error, vim.fault.InvalidLogin):
        return f"login failed: {where} rejected the user name or password"
    if isinstance(error, vim.fault.NotAuthenticated):
        return f"not logged in to {where} (the session ended or was never authenticated)"
    if isinstance(error, vmodl.fault.ManagedObjectNotFound):
        obj = getattr(error.obj, "_moId", error.obj)
        return f"object missing: {obj} does not exist (any more) in {where}"
    if isinstance(error, vim.fault.NotFound):
        return f"object missing: {_fault_message(error) or 'vSphere reports NotFound'}"
    if isinstance(error, vim.fault.InvalidPowerState):
        return (f"wrong state: the VM is {error.existingState}, the call needs it {error.requestedState}"
                if error.existingState else f"wrong power state: {_fault_message(error)}")
    if isinstance(error, vim.fault.InvalidState):
        return f"wrong state: {_fault_message(error) or type(error).__name__}"
    if isinstance(error, ssl.SSLCertVerificationError):
        return (f"TLS: the certificate of {where} is not trusted ({error.verify_message}); add its CA to the "
                "system trust store or set vsphere:allowUnverifiedSsl for a lab vCenter")
    if isinstance(error, ConnectionRefusedError):
        return f"connection refused by {where}: is it the right address and port, and is vCenter up?"
    if isinstance(error, TimeoutError):
        return f"no answer from {where} (timed out)"
    if isinstance(error, OSError):
        return f"cannot reach {where}: {error.strerror or error}"
    if isinstance(error, vmodl.MethodFault):
        return f"{type(error).__name__.rsplit('.', 1)[-1]}: {_fault_message(error) or 'no message from vSphere'}"
    return None


def _fault_message(error: BaseException) -> str:
    """A vSphere fault's message (pyvmomi sets `msg` at run time, so its type stubs do not know it)."""
    return getattr(error, "msg", None) or ""


# ---------------------------------------------------------------- session and lookups


@contextmanager
def session(server: str, user: str, password: str, *, port: int = 443, insecure: bool = False) -> Iterator[Any]:
    """A logged-in ServiceInstance, logged out on exit.

    ``insecure`` skips TLS certificate checks (self-signed lab vCenters); otherwise the
    system trust store must know the vCenter certificate.
    """
    si = _login(server, user, password, port=port, insecure=insecure)
    try:
        yield si
    finally:
        Disconnect(si)


def _login(server: str, user: str, password: str, *, port: int, insecure: bool) -> Any:
    # An explicit context: without one pyVmomi skips verification for loopback addresses.
    context = None if insecure else ssl.create_default_context()
    return SmartConnect(
        host=server,
        port=int(port),
        user=user,
        pwd=password,
        sslContext=context,
        disableSslCertValidation=bool(insecure),
        httpConnectionTimeout=_HTTP_TIMEOUT_S,
    )


_SHARED_IDLE_CHECK_S = 60.0
"""A shared session unused this long is asked whether vCenter still knows it before it is handed out
(vCenter ends idle sessions, after 30 minutes by default)."""
_shared: dict[tuple, list[Any]] = {}  # key -> [ServiceInstance, last used (monotonic)]
_shared_lock = threading.Lock()


@contextmanager
def shared_session(server: str, user: str, password: str, *, port: int = 443, insecure: bool = False) -> Iterator[Any]:
    """A logged-in ServiceInstance shared by every call of this process with the same endpoint and
    credentials: the dynamic providers serve a lab's hundreds of resources from one process, and a login
    each (TLS handshake, Login, Logout) cost more than the call it was for. pyVmomi's stub keeps a pool of
    HTTP connections, so threads use one session at once. A session vCenter no longer knows is dropped
    and the next call logs in again."""
    key = (server, int(port), user, hashlib.sha256(password.encode()).hexdigest(), bool(insecure))
    with _shared_lock:
        entry = _shared.get(key)
        if entry is not None and time.monotonic() - entry[1] > _SHARED_IDLE_CHECK_S and not _alive(entry[0]):
            del _shared[key]
            entry = None
        if entry is None:
            entry = _shared[key] = [_login(server, user, password, port=port, insecure=insecure), time.monotonic()]
    try:
        yield entry[0]
    except vim.fault.NotAuthenticated:
        with _shared_lock:
            if _shared.get(key) is entry:
                del _shared[key]
        raise
    finally:
        entry[1] = time.monotonic()


def _alive(si: Any) -> bool:
    try:
        return si.content.sessionManager.currentSession is not None
    except Exception:  # noqa: BLE001 - any failure: log in again
        return False


def _inventory(si: Any, kind: type) -> list[Any]:
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [kind], True)
    try:
        return list(view.view)
    finally:
        view.Destroy()


def find_host(si: Any, name: str) -> Any:
    """The HostSystem whose inventory name is ``name`` (as added to vCenter: FQDN or IP)."""
    hosts = _inventory(si, vim.HostSystem)
    for host in hosts:
        if host.name == name:
            return host
    known = ", ".join(sorted(h.name for h in hosts)) or "none"
    raise VsphereLookupError(f"no ESXi host named {name!r} in the vCenter inventory (hosts there: {known})")


def find_vm(si: Any, moid: str, expected_name: str | None = None) -> Any:
    """The VirtualMachine with managed object id ``moid`` (pulumi-vsphere's ``moid`` output).

    ``expected_name`` guards against a stale id pointing at another VM: a vGPU on the
    wrong VM would steal a GPU from it.
    """
    vm = vim.VirtualMachine(moid, si._stub)
    try:
        name = vm.name
    except vmodl.fault.ManagedObjectNotFound:
        raise VsphereLookupError(f"no virtual machine with id {moid!r}") from None
    if expected_name is not None and name != expected_name:
        raise VsphereLookupError(f"virtual machine {moid!r} is named {name!r}, expected {expected_name!r}")
    return vm


def boot_time(host: Any) -> str:
    """When the host last booted (``HostSystem.runtime.bootTime``, ISO 8601), or "unknown" when
    vCenter does not say (a disconnected host): a setting ESXi reads at boot is in force once this
    differs from its value at the write."""
    boot = host.runtime.bootTime
    return boot.isoformat() if boot is not None else "unknown"


def is_powered_on(vm: Any) -> bool:
    return vm.runtime.powerState == vim.VirtualMachine.PowerState.poweredOn


# ---------------------------------------------------------------- host advanced options


def get_advanced_option(host: Any, key: str) -> Any:
    """The current value of a host advanced option, e.g. ``Net.PVRDMAVmknic``."""
    manager = host.configManager.advancedOption
    try:
        values = manager.QueryOptions(name=key)
    except vim.fault.InvalidName:
        raise VsphereLookupError(f"host {host.name} has no advanced option {key!r}") from None
    for option in values:
        if option.key == key:
            return option.value
    raise VsphereLookupError(f"host {host.name} has no advanced option {key!r}")


def as_option_type(value: Any, current: Any) -> Any:
    """``value`` converted to the type the host uses for this option.

    ESXi rejects an int for a long option or a string for a numeric one, and Pulumi hands
    numbers back as floats, so the live value's type decides.
    """
    if isinstance(current, bool):
        if isinstance(value, str):
            return value.strip().lower() in ("true", "1", "yes")
        return bool(value)
    if isinstance(current, int):
        return type(current)(int(float(value)))
    if isinstance(current, float):
        return float(value)
    return "" if value is None else str(value)


def set_advanced_option(host: Any, key: str, value: Any) -> None:
    """Set a host advanced option, keeping the option's own value type."""
    current = get_advanced_option(host, key)
    change = vim.option.OptionValue(key=key, value=as_option_type(value, current))
    host.configManager.advancedOption.UpdateOptions(changedValue=[change])


# ---------------------------------------------------------------- firewall rulesets


def get_ruleset_enabled(host: Any, ruleset: str) -> bool:
    """Whether the host firewall ruleset (e.g. ``pvrdma``) is enabled."""
    info = host.configManager.firewallSystem.firewallInfo
    for rs in info.ruleset:
        if rs.key == ruleset:
            return bool(rs.enabled)
    known = ", ".join(sorted(rs.key for rs in info.ruleset))
    raise VsphereLookupError(f"host {host.name} has no firewall ruleset {ruleset!r} (it has: {known})")


def set_ruleset_enabled(host: Any, ruleset: str, enabled: bool) -> None:
    get_ruleset_enabled(host, ruleset)  # a clear error for an unknown ruleset, not NotFound
    firewall = host.configManager.firewallSystem
    if enabled:
        firewall.EnableRuleset(id=ruleset)
    else:
        firewall.DisableRuleset(id=ruleset)


# ---------------------------------------------------------------- host graphics


def graphics_manager(host: Any) -> Any:
    """The host's HostGraphicsManager (a seam: tests swap it for a fake, vcsim has none)."""
    return host.configManager.graphicsManager


def get_graphics_type(host: Any) -> str:
    """The host default graphics type: ``shared`` (vSGA) or ``sharedDirect`` (vGPU)."""
    config = graphics_manager(host).graphicsConfig
    return str(config.hostDefaultGraphicsType)


def set_graphics_type(host: Any, graphics_type: str) -> None:
    """Set the host default graphics type, keeping the assignment policy and per-GPU overrides.

    ESXi applies it when Xorg restarts or the host reboots; GPUs with a per-device
    override keep theirs.
    """
    if graphics_type not in GRAPHICS_TYPES:
        raise ValueError(f"graphics type {graphics_type!r} is not one of {', '.join(GRAPHICS_TYPES)}")
    manager = graphics_manager(host)
    current = manager.graphicsConfig
    config = vim.host.GraphicsConfig(
        hostDefaultGraphicsType=graphics_type,
        sharedPassthruAssignmentPolicy=current.sharedPassthruAssignmentPolicy,
        deviceType=list(current.deviceType or []),
    )
    manager.UpdateGraphicsConfig(config=config)


# ---------------------------------------------------------------- kernel module options


def kernel_module_system(host: Any) -> Any:
    """The host's HostKernelModuleSystem (a seam: tests swap it for a fake, vcsim has none)."""
    return host.configManager.kernelModuleSystem


def get_module_options(host: Any, module: str) -> str:
    """The option string configured for a VMkernel module ("" when none)."""
    return str(kernel_module_system(host).QueryConfiguredModuleOptionString(name=module) or "")


def set_module_options(host: Any, module: str, options: str) -> None:
    """Replace a VMkernel module's option string; the module reads it at its next load (reboot)."""
    kernel_module_system(host).UpdateModuleOptionString(name=module, options=options)


# ---------------------------------------------------------------- vGPU


def vgpu_devices(vm: Any) -> list[Any]:
    """The VM's PCI passthrough devices backed by an NVIDIA vGPU profile."""
    return [
        d
        for d in vm.config.hardware.device
        if isinstance(d, vim.vm.device.VirtualPCIPassthrough)
        and isinstance(d.backing, vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo)
    ]


def get_vgpu_profile(vm: Any) -> str:
    """The profile of the VM's (first) vGPU, "" when it has none."""
    devices = vgpu_devices(vm)
    return str(devices[0].backing.vgpu) if devices else ""


def vgpu_device_change(vm: Any, profile: str) -> Any | None:
    """The device change that gives ``vm`` exactly ``profile`` ("" = no vGPU); None if already so."""
    devices = vgpu_devices(vm)
    current = devices[0] if devices else None
    if current is None and not profile:
        return None
    if current is not None and current.backing.vgpu == profile:
        return None
    spec = vim.vm.device.VirtualDeviceSpec()
    if current is None:
        spec.operation = vim.vm.device.VirtualDeviceSpec.Operation.add
        spec.device = vim.vm.device.VirtualPCIPassthrough(
            key=-1,  # a temporary key; vSphere assigns the real one
            backing=vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo(vgpu=profile),
        )
    elif not profile:
        spec.operation = vim.vm.device.VirtualDeviceSpec.Operation.remove
        spec.device = current
    else:
        spec.operation = vim.vm.device.VirtualDeviceSpec.Operation.edit
        current.backing = vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo(vgpu=profile)
        spec.device = current
    return spec


def power_off(vm: Any, timeout_s: float = _GUEST_SHUTDOWN_TIMEOUT_S) -> None:
    """Shut the guest down cleanly when VMware Tools runs, else (or on timeout) power off."""
    if vm.guest.toolsRunningStatus == "guestToolsRunning":
        vm.ShutdownGuest()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if vm.runtime.powerState == vim.VirtualMachine.PowerState.poweredOff:
                return
            time.sleep(2)
    if vm.runtime.powerState != vim.VirtualMachine.PowerState.poweredOff:
        WaitForTask(vm.PowerOffVM_Task())


def set_vgpu_profile(vm: Any, profile: str) -> None:
    """Give the VM exactly one vGPU with ``profile`` ("" removes it).

    vSphere adds, changes and removes vGPU devices only on a powered-off VM, so a running
    VM is shut down, reconfigured and powered on again; a suspended VM is refused rather
    than losing its suspended state.
    """
    change = vgpu_device_change(vm, profile)
    if change is None:
        return
    state = vm.runtime.powerState
    if state == vim.VirtualMachine.PowerState.suspended:
        raise RuntimeError(f"virtual machine {vm.name} is suspended: resume or power it off before changing its vGPU")
    was_on = state == vim.VirtualMachine.PowerState.poweredOn
    if was_on:
        power_off(vm)
    try:
        WaitForTask(vm.ReconfigVM_Task(spec=vim.vm.ConfigSpec(deviceChange=[change])))
    finally:
        if was_on:
            WaitForTask(vm.PowerOnVM_Task())


# ---------------------------------------------------------------- a node's roll (components/dynamic/roll.py)


def get_roll_settings(vm: Any) -> dict[str, Any]:
    """What a roll compares: vCPUs, memory (MB), memory reservation (MB), hardware version (its number,
    `vmx-19` -> 19) and vGPU profile ("" for none)."""
    config = vm.config
    allocation = config.memoryAllocation
    version = str(config.version or "")
    return {
        "cpus": int(config.hardware.numCPU),
        "memoryMb": int(config.hardware.memoryMB),
        "memoryReservationMb": int(allocation.reservation or 0) if allocation is not None else 0,
        "hardwareVersion": int(version.removeprefix("vmx-")) if version.removeprefix("vmx-").isdigit() else None,
        "vgpuProfile": get_vgpu_profile(vm),
    }


def reconfigure_for_roll(vm: Any, settings: dict[str, Any]) -> None:
    """Apply the roll's settings to a powered-off VM in one ReconfigVM_Task, then upgrade its hardware
    version when asked (UpgradeVM_Task also needs it off; a version is never downgraded)."""
    spec: Any = vim.vm.ConfigSpec()
    changed = False
    if settings.get("cpus") is not None:
        spec.numCPUs, changed = int(settings["cpus"]), True
    if settings.get("memoryMb") is not None:
        spec.memoryMB, changed = int(settings["memoryMb"]), True
    if settings.get("memoryReservationMb") is not None:
        reservation = int(settings["memoryReservationMb"])
        spec.memoryAllocation = vim.ResourceAllocationInfo(reservation=reservation)
        # a vGPU VM reserves all its memory: keep the reservation at the memory size as it changes
        spec.memoryReservationLockedToMax = reservation > 0 and reservation == int(
            settings.get("memoryMb") or vm.config.hardware.memoryMB)
        changed = True
    if "vgpuProfile" in settings:
        change = vgpu_device_change(vm, settings.get("vgpuProfile") or "")
        if change is not None:
            spec.deviceChange, changed = [change], True
    if changed:
        WaitForTask(vm.ReconfigVM_Task(spec=spec))
    if settings.get("hardwareVersion") is not None:
        WaitForTask(vm.UpgradeVM_Task(version=f"vmx-{int(settings['hardwareVersion']):02d}"))


def power_on(vm: Any) -> None:
    """Power the VM on (nothing when it runs)."""
    if vm.runtime.powerState != vim.VirtualMachine.PowerState.poweredOn:
        WaitForTask(vm.PowerOnVM_Task())
