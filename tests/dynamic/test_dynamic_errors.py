"""A failing pyvmomi resource says in one line what failed: which host or VM, which setting, which
vSphere call, and why. Through the SDK's own provider server (`python -m pulumi.dynamic`, what
the engine starts), whose gRPC error text is what `pulumi up` prints, against lab-vcsim.
"""

from __future__ import annotations

import socket
import subprocess
import sys

import grpc
import pytest
from google.protobuf import struct_pb2
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
from components.dynamic.provider import VsphereOperationError
from components.dynamic.vgpu import _VGPU_PROFILE

URN = "urn:pulumi:lab::gpu-lab::pulumi-python:dynamic:Resource::{}"


@pytest.fixture(scope="module")
def provider_server():
    server = subprocess.Popen(
        [sys.executable, "-m", "pulumi.dynamic"], cwd=ROOT, env=_clean_env(),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )
    try:
        port = int(server.stdout.readline())  # the server prints its port first
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield provider_pb2_grpc.ResourceProviderStub(channel)
    finally:
        stop(server, grace_s=10)


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


def test_a_missing_host_is_one_line_naming_host_setting_and_call(provider_server, conn_props):
    text = create_error(provider_server, _FIREWALL_RULESET, "fw", {
        **conn_props, "hostName": "esx99.lab.example.com", "ruleset": "pvrdma", "enabled": True})
    assert_one_line(text)
    assert text.startswith(
        "host 'esx99.lab.example.com', firewall ruleset pvrdma: create failed in ViewManager.CreateContainerView "
        "(HostSystem look-up): object missing: no ESXi host named 'esx99.lab.example.com' in the vCenter "
        "inventory (hosts there: DC0_C0_H0, ")


def test_a_missing_vm_is_one_line(provider_server, conn_props):
    text = create_error(provider_server, _VGPU_PROFILE, "vgpu", {
        **conn_props, "vmId": "vm-999999", "vmName": "w01", "profile": "grid_v100-16c"})
    assert_one_line(text)
    assert text == ("VM 'w01' (vm-999999), vGPU profile: create failed in VirtualMachine.name (VM look-up by "
                    "id): object missing: no virtual machine with id 'vm-999999'")


def test_a_missing_advanced_option_is_one_line(provider_server, conn_props):
    text = create_error(provider_server, _ADVANCED_OPTION, "opt", {
        **conn_props, "hostName": "DC0_C0_H0", "key": "Net.NoSuchOption", "value": "1"})
    assert_one_line(text)
    assert text == ("host 'DC0_C0_H0', advanced option Net.NoSuchOption: create failed in OptionManager.QueryOptions: "
                    "object missing: host DC0_C0_H0 has no advanced option 'Net.NoSuchOption'")


def test_a_missing_kernel_module_is_one_line(provider_server, conn_props):
    text = create_error(provider_server, _MODULE_OPTIONS, "mod", {
        **conn_props, "hostName": "DC0_C0_H0", "module": "nmlx9_core", "options": "pfctx=0x08"})
    assert_one_line(text)
    assert text == ("host 'DC0_C0_H0', options of module nmlx9_core: create failed in "
                    "HostKernelModuleSystem.QueryConfiguredModuleOptionString: object missing: "
                    "no VMkernel module \"nmlx9_core\" on this host")


def test_a_rejected_login_is_one_line(provider_server, conn_props):
    text = create_error(provider_server, _FIREWALL_RULESET, "fw-login", {
        **conn_props, "password": "not-the-password", "hostName": "DC0_H0", "ruleset": "pvrdma", "enabled": True})
    assert_one_line(text)
    assert text == (f"host 'DC0_H0', firewall ruleset pvrdma: create failed in SessionManager.Login: login failed: "
                    f"vCenter 127.0.0.1:{conn_props['port']} rejected the user name or password")


def test_a_refused_connection_is_one_line(provider_server, conn_props):
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    text = create_error(provider_server, _GRAPHICS_TYPE, "gfx", {
        **conn_props, "port": closed_port, "hostName": "DC0_H0", "graphicsType": "sharedDirect"})
    assert_one_line(text)
    assert text.startswith(f"host 'DC0_H0', graphics type: create failed in SessionManager.Login: connection "
                           f"refused by vCenter 127.0.0.1:{closed_port}")


def test_other_errors_keep_their_traceback(provider_server, conn_props):
    # Only vSphere, look-up and network failures are shortened; a bug in the provider still shows where it is.
    struct = struct_pb2.Struct()
    struct.update({"__provider": serialize_provider(_FIREWALL_RULESET), "kind": "x", **conn_props})
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
    provider = FirewallRulesetProvider()

    def refuse(host, ruleset, enabled):
        raise vim.fault.NoPermission(privilegeId="Host.Config.NetService", object=host)

    monkeypatch.setattr(hostops, "set_ruleset_enabled", refuse)
    with pytest.raises(VsphereOperationError) as failure:
        provider.create({"kind": provider.kind, **conn_props, "hostName": "DC0_C0_H1", "ruleset": "pvrdma",
                         "enabled": True})
    host_id = hostops.find_host(si, "DC0_C0_H1")._moId
    assert str(failure.value) == (
        "host 'DC0_C0_H1', firewall ruleset pvrdma: create failed in HostFirewallSystem.EnableRuleset/DisableRuleset: "
        f"permission denied: the vCenter user lacks privilege Host.Config.NetService on {host_id}")
