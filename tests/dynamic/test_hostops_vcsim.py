"""hostops against lab-vcsim (the project's vCenter simulator), and against in-process managed
objects for what no simulator does (a guest that shuts down when asked)."""

from __future__ import annotations

import ssl

import pytest
from pyVim.task import WaitForTask
from pyVmomi import VmomiSupport, vim, vmodl

from components.dynamic import hostops

HOST = "DC0_H0"


def _events(si, vm) -> list[str]:
    """Event type names for ``vm``, oldest first."""
    spec = vim.event.EventFilterSpec(entity=vim.event.EventFilterSpec.ByEntity(entity=vm, recursion="self"))
    events = si.RetrieveContent().eventManager.QueryEvents(spec)
    return [type(e).__name__.rsplit(".", 1)[-1] for e in sorted(events, key=lambda e: e.key)]


# ---------------------------------------------------------------- session and lookups


def test_session_logs_in_and_out(vcsim):
    with hostops.session(vcsim.server, vcsim.user, vcsim.password, port=vcsim.port, insecure=True) as si:
        assert si.content.sessionManager.currentSession.userName == vcsim.user
        manager = si.content.sessionManager
    with pytest.raises(vim.fault.NotAuthenticated):
        manager.currentSession.userName  # noqa: B018 - the logout must have happened


def test_session_checks_certificates_unless_insecure(vcsim):
    # The simulator's certificate is self-signed: only `insecure` may accept it.
    with pytest.raises(ssl.SSLCertVerificationError):
        with hostops.session(vcsim.server, vcsim.user, vcsim.password, port=vcsim.port, insecure=False):
            pass


def test_shared_session_logs_in_once_per_endpoint_and_user(vcsim, monkeypatch):
    logins: list[str] = []
    real_login = hostops._login
    monkeypatch.setattr(hostops, "_login", lambda *a, **k: logins.append(a[1]) or real_login(*a, **k))
    monkeypatch.setattr(hostops, "_shared", {})
    sessions = []
    for _ in range(3):
        with hostops.shared_session(vcsim.server, vcsim.user, vcsim.password, port=vcsim.port, insecure=True) as si:
            sessions.append(si.content.sessionManager.currentSession.key)
    assert logins == [vcsim.user] and len(set(sessions)) == 1
    with pytest.raises(vim.fault.InvalidLogin):  # other credentials: their own login, refused here
        with hostops.shared_session(vcsim.server, vcsim.user, "not-the-password", port=vcsim.port, insecure=True):
            pass


def test_shared_session_logs_in_again_once_vcenter_ended_it(vcsim, monkeypatch):
    monkeypatch.setattr(hostops, "_shared", {})
    args = (vcsim.server, vcsim.user, vcsim.password)
    with hostops.shared_session(*args, port=vcsim.port, insecure=True) as si:
        first = si.content.sessionManager.currentSession.key
        si.content.sessionManager.Logout()  # as vCenter does to an idle session
    with pytest.raises(vim.fault.NotAuthenticated):  # in use when it ended: that call fails, and it is dropped
        with hostops.shared_session(*args, port=vcsim.port, insecure=True) as si:
            si.content.sessionManager.currentSession.userName  # noqa: B018
    with hostops.shared_session(*args, port=vcsim.port, insecure=True) as si:
        assert si.content.sessionManager.currentSession.key != first


def test_shared_session_checks_an_idle_session_before_handing_it_out(vcsim, monkeypatch):
    monkeypatch.setattr(hostops, "_shared", {})
    monkeypatch.setattr(hostops, "_SHARED_IDLE_CHECK_S", 0.0)
    args = (vcsim.server, vcsim.user, vcsim.password)
    with hostops.shared_session(*args, port=vcsim.port, insecure=True) as si:
        first = si.content.sessionManager.currentSession.key
        si.content.sessionManager.Logout()
    with hostops.shared_session(*args, port=vcsim.port, insecure=True) as si:
        assert si.content.sessionManager.currentSession.key != first


def test_session_rejects_a_wrong_password(vcsim):
    with pytest.raises(vim.fault.InvalidLogin):
        with hostops.session(vcsim.server, vcsim.user, "not-the-password", port=vcsim.port, insecure=True):
            pass


def test_find_host_by_inventory_name(si):
    assert hostops.find_host(si, "DC0_C0_H1").name == "DC0_C0_H1"
    with pytest.raises(hostops.VsphereLookupError, match=r"no ESXi host named 'esx01'.*DC0_C0_H0"):
        hostops.find_host(si, "esx01")


def test_find_vm_by_moid_checks_the_name(si):
    vm = hostops.find_host(si, HOST).vm[0]
    assert hostops.find_vm(si, vm._moId, vm.name).name == vm.name
    with pytest.raises(hostops.VsphereLookupError, match="expected 'w01'"):
        hostops.find_vm(si, vm._moId, "w01")
    with pytest.raises(hostops.VsphereLookupError, match="no virtual machine with id 'vm-999999'"):
        hostops.find_vm(si, "vm-999999")


# ---------------------------------------------------------------- advanced options


def test_advanced_option_round_trip(si):
    host = hostops.find_host(si, HOST)
    # QueryOptions on a key the host does not have answers vim.fault.InvalidName, which must
    # become a readable error.
    with pytest.raises(hostops.VsphereLookupError, match="no advanced option 'Net.NoSuchOption'"):
        hostops.get_advanced_option(host, "Net.NoSuchOption")
    # As on a fresh ESXi host, PVRDMA's option is there and empty.
    assert hostops.get_advanced_option(host, "Net.PVRDMAVmknic") == ""
    assert hostops.get_advanced_option(host, "Config.HostAgent.log.level") == "info"
    hostops.set_advanced_option(host, "Config.HostAgent.log.level", "verbose")
    try:
        assert hostops.get_advanced_option(host, "Config.HostAgent.log.level") == "verbose"
    finally:
        hostops.set_advanced_option(host, "Config.HostAgent.log.level", "info")


def test_advanced_option_keeps_the_hosts_value_type(si):
    host = hostops.find_host(si, HOST)
    long = VmomiSupport.vmodlTypes["long"]
    # A numeric option as ESXi has them (xsd:long); the simulator stores what UpdateOptions sends.
    host.configManager.advancedOption.UpdateOptions(
        changedValue=[vim.option.OptionValue(key="Net.TcpipHeapMax", value=long(512))]
    )
    hostops.set_advanced_option(host, "Net.TcpipHeapMax", "1024")  # Pulumi inputs are text
    value = hostops.get_advanced_option(host, "Net.TcpipHeapMax")
    assert value == 1024 and isinstance(value, long)
    hostops.set_advanced_option(host, "Net.TcpipHeapMax", 512.0)  # numbers come back as floats
    assert hostops.get_advanced_option(host, "Net.TcpipHeapMax") == 512


@pytest.mark.parametrize(
    ("value", "current", "expected"),
    [("vmk1", "", "vmk1"), (None, "x", ""), ("7", 3, 7), (8.0, 3, 8), ("false", True, False), ("1", False, True)],
)
def test_as_option_type(value, current, expected):
    result = hostops.as_option_type(value, current)
    assert result == expected and type(result) is type(expected)


# ---------------------------------------------------------------- firewall


def test_firewall_ruleset_round_trip(si):
    host = hostops.find_host(si, HOST)
    assert hostops.get_ruleset_enabled(host, "pvrdma") is False  # ESXi ships it disabled
    hostops.set_ruleset_enabled(host, "pvrdma", True)
    try:
        assert hostops.get_ruleset_enabled(host, "pvrdma") is True
        assert hostops.get_ruleset_enabled(host, "sshServer") is True  # others untouched
    finally:
        hostops.set_ruleset_enabled(host, "pvrdma", False)
    assert hostops.get_ruleset_enabled(host, "pvrdma") is False
    with pytest.raises(hostops.VsphereLookupError, match="no firewall ruleset 'rdma'.*pvrdma"):
        hostops.set_ruleset_enabled(host, "rdma", True)


def test_each_host_has_its_own_firewall_rulesets(si):
    host, other = hostops.find_host(si, "DC0_C0_H0"), hostops.find_host(si, "DC0_C0_H1")
    hostops.set_ruleset_enabled(host, "pvrdma", True)
    try:
        assert hostops.get_ruleset_enabled(host, "pvrdma") is True
        assert hostops.get_ruleset_enabled(other, "pvrdma") is False
    finally:
        hostops.set_ruleset_enabled(host, "pvrdma", False)


# ---------------------------------------------------------------- graphics and kernel modules


def test_each_host_has_its_own_graphics_manager_and_kernel_module_system(si):
    hosts = [hostops.find_host(si, name) for name in ("DC0_H0", "DC0_C0_H0", "DC0_C0_H1", "DC0_C0_H2")]
    assert len({h.configManager.graphicsManager._moId for h in hosts}) == len(hosts)
    assert len({h.configManager.kernelModuleSystem._moId for h in hosts}) == len(hosts)


def test_set_graphics_type_keeps_policy_and_per_gpu_overrides(si):
    host = hostops.find_host(si, "DC0_C0_H0")
    other = hostops.find_host(si, "DC0_C0_H1")
    manager = host.configManager.graphicsManager
    before = manager.graphicsConfig
    assert before.hostDefaultGraphicsType == "shared"  # ESXi's default
    manager.UpdateGraphicsConfig(config=vim.host.GraphicsConfig(
        hostDefaultGraphicsType="shared", sharedPassthruAssignmentPolicy="consolidation",
        deviceType=[vim.host.GraphicsConfig.DeviceType(deviceId="0000:3b:00.0", graphicsType="sharedDirect")]))
    try:
        hostops.set_graphics_type(host, "sharedDirect")
        config = manager.graphicsConfig
        assert config.hostDefaultGraphicsType == "sharedDirect"
        assert config.sharedPassthruAssignmentPolicy == "consolidation"
        assert [(d.deviceId, d.graphicsType) for d in config.deviceType] == [("0000:3b:00.0", "sharedDirect")]
        assert hostops.get_graphics_type(other) == "shared"  # one host only
    finally:
        manager.UpdateGraphicsConfig(config=before)
    assert hostops.get_graphics_type(host) == "shared"


def test_set_graphics_type_refuses_unknown_types(si):
    host = hostops.find_host(si, "DC0_C0_H0")
    with pytest.raises(ValueError, match="one of shared, sharedDirect"):
        hostops.set_graphics_type(host, "direct")
    assert hostops.get_graphics_type(host) == "shared"


def test_the_simulator_refuses_a_graphics_type_esxi_does_not_know(si):
    # vim.host.GraphicsConfig.GraphicsType: shared, sharedDirect (vSphere Web Services API).
    manager = hostops.find_host(si, "DC0_C0_H0").configManager.graphicsManager
    with pytest.raises(vmodl.fault.InvalidArgument) as refused:
        manager.UpdateGraphicsConfig(config=vim.host.GraphicsConfig(hostDefaultGraphicsType="direct"))
    assert refused.value.invalidProperty == "config.hostDefaultGraphicsType"


def test_module_options_round_trip(si):
    host, other = hostops.find_host(si, "DC0_C0_H0"), hostops.find_host(si, "DC0_C0_H1")
    assert hostops.get_module_options(host, "nmlx5_core") == ""
    hostops.set_module_options(host, "nmlx5_core", "pfctx=0x08 pfcrx=0x08 trust_state=2")
    try:
        assert hostops.get_module_options(host, "nmlx5_core") == "pfctx=0x08 pfcrx=0x08 trust_state=2"
        assert hostops.get_module_options(other, "nmlx5_core") == ""
        loaded = {m.name: m.optionString for m in host.configManager.kernelModuleSystem.QueryModules()}
        assert loaded["nmlx5_core"] == "pfctx=0x08 pfcrx=0x08 trust_state=2"
    finally:
        hostops.set_module_options(host, "nmlx5_core", "")
    with pytest.raises(vim.fault.NotFound):
        hostops.get_module_options(host, "nmlx9_core")


# ---------------------------------------------------------------- vGPU


def test_vgpu_add_change_remove_cycles_power(si):
    vm = hostops.find_host(si, HOST).vm[0]
    assert vm.runtime.powerState == "poweredOn" and hostops.get_vgpu_profile(vm) == ""
    seen = len(_events(si, vm))

    hostops.set_vgpu_profile(vm, "grid_v100-8c")
    [device] = hostops.vgpu_devices(vm)
    assert device.backing.vgpu == "grid_v100-8c"
    assert vm.runtime.powerState == "poweredOn"
    # vcsim would reconfigure a running VM; vSphere does not, so the order is the point.
    assert _events(si, vm)[seen:] == ["VmPoweredOffEvent", "VmReconfiguredEvent", "VmStartingEvent", "VmPoweredOnEvent"]

    hostops.set_vgpu_profile(vm, "grid_v100-16c")
    assert [d.backing.vgpu for d in hostops.vgpu_devices(vm)] == ["grid_v100-16c"]
    assert hostops.vgpu_devices(vm)[0].key == device.key  # edited in place, not re-added

    seen = len(_events(si, vm))
    hostops.set_vgpu_profile(vm, "grid_v100-16c")  # nothing to do: no power cycle either
    assert len(_events(si, vm)) == seen

    hostops.set_vgpu_profile(vm, "")
    assert hostops.vgpu_devices(vm) == [] and vm.runtime.powerState == "poweredOn"


def test_vgpu_on_a_powered_off_vm_leaves_it_off(si):
    vm = hostops.find_host(si, HOST).vm[1]
    WaitForTask(vm.PowerOffVM_Task())
    try:
        hostops.set_vgpu_profile(vm, "grid_v100-8c")
        assert hostops.get_vgpu_profile(vm) == "grid_v100-8c"
        assert vm.runtime.powerState == "poweredOff"
        hostops.set_vgpu_profile(vm, "")
        assert hostops.get_vgpu_profile(vm) == ""
    finally:
        WaitForTask(vm.PowerOnVM_Task())


def test_vgpu_refuses_a_suspended_vm(si):
    vm = hostops.find_host(si, HOST).vm[1]
    WaitForTask(vm.SuspendVM_Task())
    try:
        with pytest.raises(RuntimeError, match="is suspended"):
            hostops.set_vgpu_profile(vm, "grid_v100-8c")
        assert hostops.vgpu_devices(vm) == [] and vm.runtime.powerState == "suspended"
    finally:
        WaitForTask(vm.PowerOnVM_Task())


def test_power_off_shuts_the_guest_down_when_tools_run(recording_stub):
    stub = recording_stub(
        properties={
            "guest": vim.vm.GuestInfo(toolsRunningStatus="guestToolsRunning"),
            "runtime": vim.vm.RuntimeInfo(powerState="poweredOn"),
        },
        methods={},
    )
    stub.methods["ShutdownGuest"] = lambda: stub.properties.__setitem__(
        "runtime", vim.vm.RuntimeInfo(powerState="poweredOff")
    )
    hostops.power_off(vim.VirtualMachine("vm-1", stub), timeout_s=5)
    assert [c.method for c in stub.calls] == ["ShutdownGuest"]  # no hard power-off
