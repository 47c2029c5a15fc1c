"""A failing pyvmomi resource says in one line what failed: which host or VM, which setting, which
vSphere call, and why. Through the SDK's own provider server (`python -m pulumi.dynamic`, what
the engine starts), whose gRPC error text is what `pulumi up` prints, against lab-vcsim. The engine
first configures that server with its explicit provider's inputs (the vCenter connection), then
sends the resources' requests, which carry no connection.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import grpc
import pytest
from google.protobuf import struct_pb2
from lab_vcsim import configure_server, configured, provider_config
from procs import stop
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc
from pyVmomi import vim, vmodl
from test_dynamic_providers import ROOT, _clean_env

from components.dynamic import hostops
from components.dynamic.host_settings import (
    _ADVANCED_OPTION,
    _FIREWALL_RULESET,
    _GRAPHICS_TYPE,
    _MODULE_OPTIONS,
    FirewallRulesetProvider,
)
from components.dynamic.provider import NOT_CONFIGURED, VsphereOperationError
from components.dynamic.vgpu import _VGPU_PROFILE

URN = "urn:pulumi:lab::gpu-lab::pulumi-python:dynamic:Resource::{}"


def _serve(servers: list, config: dict | None):
    """A provider server, configured with ``config`` (an explicit provider's inputs) as the engine
    configures it before the first resource request, or not at all (None)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "pulumi.dynamic"], cwd=ROOT, env=_clean_env(),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )
    servers.append(server)
    port = int(server.stdout.readline())  # the server prints its port first
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = provider_pb2_grpc.ResourceProviderStub(channel)
    if config is not None:
        configure_server(stub, config)
    return channel, stub


@pytest.fixture(scope="module")
def provider_servers():
    """One provider server per configuration: a process configures each provider once, so a test with
    another connection (a wrong password, a closed port) needs a process of its own."""
    servers: list[subprocess.Popen] = []
    channels: list[grpc.Channel] = []
    stubs: dict[str, provider_pb2_grpc.ResourceProviderStub] = {}

    def serve(config: dict | None):
        key = json.dumps(config, sort_keys=True)
        if key not in stubs:
            channel, stubs[key] = _serve(servers, config)
            channels.append(channel)
        return stubs[key]

    try:
        yield serve
    finally:
        for channel in channels:
            channel.close()
        for server in servers:
            stop(server, grace_s=10)


@pytest.fixture()
def provider_server(provider_servers, conn_props):
    """The provider server configured with lab-vcsim's connection."""
    return provider_servers(provider_config(conn_props))


def create_error(stub, provider, name: str, props: dict) -> str:
    """The error text of a failing Create, as the engine receives it."""
    struct = struct_pb2.Struct()
    struct.update({"__provider": serialize_provider(provider), "kind": provider.kind, **props})
    with pytest.raises(grpc.RpcError) as failure:
        stub.Create(provider_pb2.CreateRequest(urn=URN.format(name), properties=struct), timeout=60)
    return failure.value.details()


def assert_one_line(text: str) -> None:
    assert "\n" not in text.strip(), text
    assert "Traceback" not in text and 'File "' not in text, text


def test_a_missing_host_is_one_line_naming_host_setting_and_call(provider_server):
    text = create_error(provider_server, _FIREWALL_RULESET, "fw", {
        "hostName": "esx99.lab.example.com", "ruleset": "pvrdma", "enabled": True})
    assert_one_line(text)
    assert text.startswith(
        "host 'esx99.lab.example.com', firewall ruleset pvrdma: create failed in ViewManager.CreateContainerView "
        "(HostSystem look-up): object missing: no ESXi host named 'esx99.lab.example.com' in the vCenter "
        "inventory (hosts there: DC0_C0_H0, ")


def test_a_missing_vm_is_one_line(provider_server):
    text = create_error(provider_server, _VGPU_PROFILE, "vgpu", {
        "vmId": "vm-999999", "vmName": "w01", "profile": "grid_v100-16c"})
    assert_one_line(text)
    assert text == ("VM 'w01' (vm-999999), vGPU profile: create failed in VirtualMachine.name (VM look-up by "
                    "id): object missing: no virtual machine with id 'vm-999999'")


def test_a_missing_advanced_option_is_one_line(provider_server):
    text = create_error(provider_server, _ADVANCED_OPTION, "opt", {
        "hostName": "DC0_C0_H0", "key": "Net.NoSuchOption", "value": "1"})
    assert_one_line(text)
    assert text == ("host 'DC0_C0_H0', advanced option Net.NoSuchOption: create failed in OptionManager.QueryOptions: "
                    "object missing: host DC0_C0_H0 has no advanced option 'Net.NoSuchOption'")


def test_a_missing_kernel_module_is_one_line(provider_server):
    text = create_error(provider_server, _MODULE_OPTIONS, "mod", {
        "hostName": "DC0_C0_H0", "module": "nmlx9_core", "options": "pfctx=0x08"})
    assert_one_line(text)
    assert text == ("host 'DC0_C0_H0', options of module nmlx9_core: create failed in "
                    "HostKernelModuleSystem.QueryConfiguredModuleOptionString: object missing: "
                    "no VMkernel module \"nmlx9_core\" on this host")


def test_a_rejected_login_is_one_line(provider_servers, conn_props):
    # the password of the provider's configuration, not of the resource's inputs (it has none)
    server = provider_servers(provider_config({**conn_props, "password": "not-the-password"}))
    text = create_error(server, _FIREWALL_RULESET, "fw-login", {
        "hostName": "DC0_H0", "ruleset": "pvrdma", "enabled": True})
    assert_one_line(text)
    assert text == (f"host 'DC0_H0', firewall ruleset pvrdma: create failed in SessionManager.Login: login failed: "
                    f"vCenter 127.0.0.1:{conn_props['port']} rejected the user name or password")


def test_a_refused_connection_is_one_line(provider_servers, conn_props):
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    server = provider_servers(provider_config({**conn_props, "port": closed_port}))
    text = create_error(server, _GRAPHICS_TYPE, "gfx", {"hostName": "DC0_H0", "graphicsType": "sharedDirect"})
    assert_one_line(text)
    assert text.startswith(f"host 'DC0_H0', graphics type: create failed in SessionManager.Login: connection "
                           f"refused by vCenter 127.0.0.1:{closed_port}")


def test_an_unconfigured_provider_says_in_one_line_what_to_do(provider_servers):
    # A provider process the engine configured without a vCenter connection: the resource's provider is
    # one a previous release registered (its connection was in each resource, not in the provider).
    text = create_error(provider_servers(None), _FIREWALL_RULESET, "fw-unconfigured", {
        "hostName": "DC0_H0", "ruleset": "pvrdma", "enabled": True})
    assert_one_line(text)
    assert text == NOT_CONFIGURED


@pytest.mark.parametrize("connection_in_props", [False, True], ids=["new-props", "props-of-a-previous-release"])
def test_an_unconfigured_create_fails_before_any_vsphere_call(conn_props, monkeypatch, connection_in_props):
    """No login, no look-up: the connection a previous release kept in the resource's inputs is not used
    either (only the provider's configuration is)."""
    calls: list[str] = []
    for name in ("session", "shared_session", "_login", "find_host"):
        monkeypatch.setattr(hostops, name, lambda *a, _name=name, **k: calls.append(_name))
    provider = FirewallRulesetProvider()
    props = {"kind": provider.kind, "hostName": "DC0_H0", "ruleset": "pvrdma", "enabled": True}
    if connection_in_props:
        props = {**conn_props, **props}
    with pytest.raises(VsphereOperationError) as failure:
        provider.create(props)
    assert str(failure.value) == NOT_CONFIGURED
    assert_one_line(str(failure.value))
    assert "Run `pulumi up` once with this release" in str(failure.value)
    assert calls == []


def test_other_errors_keep_their_traceback(provider_server):
    # Only vSphere, look-up and network failures are shortened; a bug in the provider still shows where it is.
    struct = struct_pb2.Struct()
    struct.update({"__provider": serialize_provider(_FIREWALL_RULESET), "kind": "x"})
    with pytest.raises(grpc.RpcError) as failure:  # no hostName: a KeyError in our code
        provider_server.Create(provider_pb2.CreateRequest(urn=URN.format("bug"), properties=struct), timeout=60)
    assert "Traceback" in failure.value.details()


# ---------------------------------------------------------------- faults the simulator does not raise


@pytest.mark.parametrize("fault,reason", [
    (vim.fault.NoPermission(privilegeId="Host.Config.AdvancedConfig", object=vim.HostSystem("host-21")),
     "permission denied: the vCenter user lacks privilege Host.Config.AdvancedConfig on host-21"),
    (vmodl.fault.ManagedObjectNotFound(obj=vim.VirtualMachine("vm-7")),
     "object missing: vm-7 does not exist (any more) in vCenter vc.lab:443"),
    (vim.fault.InvalidPowerState(requestedState="poweredOff", existingState="poweredOn"),
     "wrong state: the VM is poweredOn, the call needs it poweredOff"),
    (vim.fault.InvalidState(msg="The operation is not allowed in the current state."),
     "wrong state: The operation is not allowed in the current state."),
    (vim.fault.InvalidLogin(), "login failed: vCenter vc.lab:443 rejected the user name or password"),
])
def test_vsphere_faults_become_reasons(fault, reason):
    assert hostops.describe_failure(fault, "vc.lab", 443) == reason


def test_errors_that_are_not_vsphere_failures_get_no_reason():
    assert hostops.describe_failure(KeyError("hostName"), "vc.lab", 443) is None


def test_a_fault_in_a_setting_call_names_that_call(si, conn_props, monkeypatch):
    provider = configured(FirewallRulesetProvider(), conn_props)

    def refuse(host, ruleset, enabled):
        raise vim.fault.NoPermission(privilegeId="Host.Config.NetService", object=host)

    monkeypatch.setattr(hostops, "set_ruleset_enabled", refuse)
    with pytest.raises(VsphereOperationError) as failure:
        provider.create({"kind": provider.kind, "hostName": "DC0_C0_H1", "ruleset": "pvrdma", "enabled": True})
    host_id = hostops.find_host(si, "DC0_C0_H1")._moId
    assert str(failure.value) == (
        "host 'DC0_C0_H1', firewall ruleset pvrdma: create failed in HostFirewallSystem.EnableRuleset/DisableRuleset: "
        f"permission denied: the vCenter user lacks privilege Host.Config.NetService on {host_id}")
