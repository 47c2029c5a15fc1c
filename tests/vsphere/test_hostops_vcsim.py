"""hostops against vcsim, and against in-process managed objects where vcsim has none."""

from __future__ import annotations

import ssl

import pytest
from pyVim.task import WaitForTask
from pyVmomi import VmomiSupport, vim, vmodl

from components.vsphere import hostops

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
    # vcsim's certificate is self-signed: only `insecure` may accept it.
    with pytest.raises(ssl.SSLCertVerificationError):
        with hostops.session(vcsim.server, vcsim.user, vcsim.password, port=vcsim.port, insecure=False):
            pass


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
    # vcsim knows only Config.HostAgent.log.level: QueryOptions on another key answers
    # vim.fault.InvalidName, which must become a readable error.
    with pytest.raises(hostops.VsphereLookupError, match="no advanced option 'Net.PVRDMAVmknic'"):
        hostops.get_advanced_option(host, "Net.PVRDMAVmknic")
    assert hostops.get_advanced_option(host, "Config.HostAgent.log.level") == "info"
    hostops.set_advanced_option(host, "Config.HostAgent.log.level", "verbose")
    try:
        assert hostops.get_advanced_option(host, "Config.HostAgent.log.level") == "verbose"
    finally:
        hostops.set_advanced_option(host, "Config.HostAgent.log.level", "info")


def test_advanced_option_keeps_the_hosts_value_type(si):
    host = hostops.find_host(si, HOST)
    long = VmomiSupport.vmodlTypes["long"]
    # A numeric option as ESXi has them (xsd:long); vcsim stores what UpdateOptions sends.
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
    assert hostops.get_ruleset_enabled(host, "pvrdma") is False  # vcsim ships it disabled
    hostops.set_ruleset_enabled(host, "pvrdma", True)
    try:
        assert hostops.get_ruleset_enabled(host, "pvrdma") is True
        assert hostops.get_ruleset_enabled(host, "sshServer") is True  # others untouched
    finally:
        hostops.set_ruleset_enabled(host, "pvrdma", False)
    assert hostops.get_ruleset_enabled(host, "pvrdma") is False
    with pytest.raises(hostops.VsphereLookupError, match="no firewall ruleset 'rdma'.*pvrdma"):
        hostops.set_ruleset_enabled(host, "rdma", True)


# ---------------------------------------------------------------- graphics and kernel modules


def test_vcsim_lacks_graphics_manager_and_kernel_module_system(si):
    """Why the next tests use recording stubs; fails (good news) once vcsim models them."""
    host = hostops.find_host(si, HOST)
    with pytest.raises(vmodl.fault.ManagedObjectNotFound):
        host.configManager.graphicsManager.graphicsConfig  # noqa: B018
    with pytest.raises(vmodl.fault.ManagedObjectNotFound):
        host.configManager.kernelModuleSystem.QueryConfiguredModuleOptionString(name="nmlx5_core")


def test_set_graphics_type_sends_the_whole_config(si, fake_graphics):
    host = hostops.find_host(si, HOST)
    assert hostops.get_graphics_type(host) == "shared"
    hostops.set_graphics_type(host, "sharedDirect")
    assert hostops.get_graphics_type(host) == "sharedDirect"
    [call] = fake_graphics.calls
    assert call.method == "UpdateGraphicsConfig"
    [config] = call.args
    assert isinstance(config, vim.host.GraphicsConfig)
    assert config.hostDefaultGraphicsType == "sharedDirect"
    # The assignment policy and the per-GPU override survive the change.
    assert config.sharedPassthruAssignmentPolicy == "performance"
    assert [(d.deviceId, d.graphicsType) for d in config.deviceType] == [("0000:3b:00.0", "sharedDirect")]
    assert call.body() == {
        "_this": "ha-graphics-manager",
        "config": {
            "hostDefaultGraphicsType": "sharedDirect",
            "sharedPassthruAssignmentPolicy": "performance",
            "deviceType": {"deviceId": "0000:3b:00.0", "graphicsType": "sharedDirect"},
        },
    }


def test_set_graphics_type_refuses_unknown_types(si, fake_graphics):
    with pytest.raises(ValueError, match="one of shared, sharedDirect"):
        hostops.set_graphics_type(hostops.find_host(si, HOST), "direct")
    assert fake_graphics.calls == []


def test_module_options_round_trip(si, fake_modules):
    host = hostops.find_host(si, HOST)
    assert hostops.get_module_options(host, "nmlx5_core") == ""
    hostops.set_module_options(host, "nmlx5_core", "pfctx=0x08 pfcrx=0x08 trust_state=2")
    assert fake_modules.configured["nmlx5_core"] == "pfctx=0x08 pfcrx=0x08 trust_state=2"
    update = fake_modules.calls[1]
    assert update.method == "UpdateModuleOptionString"
    assert update.body() == {
        "_this": "kernelModuleSystem",
        "name": "nmlx5_core",
        "options": "pfctx=0x08 pfcrx=0x08 trust_state=2",
    }


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
