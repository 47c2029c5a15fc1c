"""The dynamic providers: their CRUD against lab-vcsim, how they register, how they travel.

Each provider is a plain object, so the lifecycle tests configure it with the vCenter connection its
explicit provider holds (lab_vcsim.configured, as the engine's provider process does), call
create/diff/update/read/delete directly with the property dicts the engine would pass (no connection
in them), then read vSphere back on a session of their own. One test makes a host misbehave with a
recording stub (conftest).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pulumi
import pytest
from google.protobuf import struct_pb2
from lab_vcsim import (
    VCSIM_PASSWORD,
    VCSIM_USER,
    configure_server,
    configured,
    lab_vcsim_binary,
    provider_config,
    vm_named,
)
from procs import stop
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime.mocks import MockMonitor
from pyVmomi import vim
from required_tools import missing

from components.dynamic import hostops
from components.dynamic.host_settings import (
    _ADVANCED_OPTION,
    _FIREWALL_RULESET,
    _GRAPHICS_TYPE,
    _MODULE_OPTIONS,
    AdvancedOptionProvider,
    FirewallRulesetProvider,
    GraphicsTypeProvider,
    HostAdvancedOption,
    HostFirewallRuleset,
    HostGraphicsType,
    HostModuleOptions,
    ModuleOptionsProvider,
)
from components.dynamic.provider import (
    VCENTER_CONFIG,
    VcenterConnection,
    VsphereOperationError,
    _SettingProvider,
    vcenter_provider,
)
from components.dynamic.vgpu import _VGPU_PROFILE, VgpuProfileProvider
from tools import sdk_access

ROOT = Path(__file__).resolve().parents[2]
DYNAMIC_TYPE = "pulumi-python:dynamic:Resource"
PROVIDER_TYPE = "pulumi:providers:pulumi-python"
CONNECTION = {"server", "user", "password", "insecure", "port"}
"""What a resource's inputs carried before its explicit provider held the vCenter connection."""


def engine_props(provider: _SettingProvider, **inputs) -> dict:
    """Inputs as the engine hands them to a provider (the serialized provider included, no connection)."""
    return {"__provider": "c2VyaWFsaXplZA==", "kind": provider.kind, **inputs}


# ---------------------------------------------------------------- host advanced option


def test_advanced_option_lifecycle(si, conn_props):
    host = hostops.find_host(si, "DC0_C0_H0")
    assert hostops.get_advanced_option(host, "Net.PVRDMAVmknic") == ""  # as ESXi ships it
    provider = configured(AdvancedOptionProvider(), conn_props)
    news = engine_props(provider, hostName="DC0_C0_H0", key="Net.PVRDMAVmknic", value="vmk1")

    created = provider.create(news)
    assert created.id == "DC0_C0_H0:option:Net.PVRDMAVmknic"
    assert hostops.get_advanced_option(host, "Net.PVRDMAVmknic") == "vmk1"
    olds = created.outs
    assert olds["original"] == ""
    # Delete sees only these outputs: every input must be there; the connection is the provider's, not theirs.
    assert {k: olds[k] for k in news if k != "__provider"} == {k: v for k, v in news.items() if k != "__provider"}
    assert "__provider" not in olds
    assert not CONNECTION & set(olds)

    assert provider.diff(created.id, olds, news).changes is False
    value_change = provider.diff(created.id, olds, {**news, "value": "vmk3"})
    assert (value_change.changes, value_change.replaces) == (True, [])
    # A rotated password, or another vCenter address, changes the explicit provider's configuration
    # alone: the engine configures a new provider process with it, and the resource has no diff.
    rotated = configured(AdvancedOptionProvider(), {**conn_props, "password": "rotated"})
    password_change = rotated.diff(created.id, olds, news)
    assert (password_change.changes, password_change.replaces) == (False, [])
    moved_vcenter = configured(AdvancedOptionProvider(), {**conn_props, "server": "vc2"}).diff(created.id, olds, news)
    assert (moved_vcenter.changes, moved_vcenter.replaces) == (False, [])
    moved = provider.diff(created.id, olds, {**news, "hostName": "DC0_C0_H1"})
    assert (moved.changes, moved.replaces, moved.delete_before_replace) == (True, ["hostName"], True)
    rekeyed = provider.diff(created.id, olds, {**news, "key": "Net.Other"})
    assert rekeyed.replaces == ["key"]

    updated = provider.update(created.id, olds, {**news, "value": "vmk3"})
    assert hostops.get_advanced_option(host, "Net.PVRDMAVmknic") == "vmk3"
    assert updated.outs["value"] == "vmk3"
    assert updated.outs["original"] == ""  # still the value create found

    hostops.set_advanced_option(host, "Net.PVRDMAVmknic", "vmk9")  # drift behind Pulumi's back
    refreshed = provider.read(created.id, updated.outs)
    assert refreshed.id == created.id and refreshed.outs["value"] == "vmk9"

    provider.delete(created.id, updated.outs)
    assert hostops.get_advanced_option(host, "Net.PVRDMAVmknic") == ""


def test_advanced_option_create_fails_cleanly_on_an_unknown_key(si, conn_props):
    provider = configured(AdvancedOptionProvider(), conn_props)
    news = engine_props(provider, hostName="DC0_C0_H0", key="Net.NoSuchOption", value="1")
    with pytest.raises(VsphereOperationError, match="no advanced option 'Net.NoSuchOption'"):
        provider.create(news)
    with pytest.raises(hostops.VsphereLookupError):
        hostops.get_advanced_option(hostops.find_host(si, "DC0_C0_H0"), "Net.NoSuchOption")


def test_a_wrapped_secret_password_still_logs_in(si, conn_props):
    # The password in the provider's configuration as the wire carries a secret.
    provider = configured(FirewallRulesetProvider(),
                          {**conn_props, "password": sdk_access.wrap_secret(conn_props["password"])})
    props = engine_props(provider, hostName="DC0_H0", ruleset="pvrdma", enabled=False)
    assert provider.read("DC0_H0:firewall:pvrdma", props).outs["enabled"] is False


# ---------------------------------------------------------------- firewall ruleset


def test_firewall_ruleset_lifecycle(si, conn_props):
    host = hostops.find_host(si, "DC0_C0_H1")
    assert hostops.get_ruleset_enabled(host, "pvrdma") is False
    provider = configured(FirewallRulesetProvider(), conn_props)
    news = engine_props(provider, hostName="DC0_C0_H1", ruleset="pvrdma", enabled=True)

    created = provider.create(news)
    assert created.id == "DC0_C0_H1:firewall:pvrdma"
    assert created.outs["original"] is False
    assert hostops.get_ruleset_enabled(host, "pvrdma") is True
    assert provider.diff(created.id, created.outs, news).changes is False

    off = provider.update(created.id, created.outs, {**news, "enabled": False})
    assert hostops.get_ruleset_enabled(host, "pvrdma") is False
    on = provider.update(created.id, off.outs, news)
    assert hostops.get_ruleset_enabled(host, "pvrdma") is True
    assert on.outs["original"] is False

    provider.delete(created.id, on.outs)
    assert hostops.get_ruleset_enabled(host, "pvrdma") is False


def test_firewall_delete_restores_an_enabled_ruleset(si, conn_props):
    host = hostops.find_host(si, "DC0_C0_H1")
    assert hostops.get_ruleset_enabled(host, "sshServer") is True
    provider = configured(FirewallRulesetProvider(), conn_props)
    created = provider.create(engine_props(provider, hostName="DC0_C0_H1", ruleset="sshServer", enabled=False))
    assert hostops.get_ruleset_enabled(host, "sshServer") is False
    provider.delete(created.id, created.outs)
    assert hostops.get_ruleset_enabled(host, "sshServer") is True


# ---------------------------------------------------------------- graphics type


def test_graphics_type_lifecycle(si, conn_props):
    host = hostops.find_host(si, "DC0_C0_H2")
    provider = configured(GraphicsTypeProvider(), conn_props)
    news = engine_props(provider, hostName="DC0_C0_H2", graphicsType="sharedDirect")

    created = provider.create(news)
    assert created.id == "DC0_C0_H2:graphics"
    assert created.outs["original"] == "shared"
    assert hostops.get_graphics_type(host) == "sharedDirect"
    assert hostops.get_graphics_type(hostops.find_host(si, "DC0_C0_H1")) == "shared"  # that host only
    assert provider.diff(created.id, created.outs, news).changes is False

    updated = provider.update(created.id, created.outs, {**news, "graphicsType": "shared"})
    assert updated.outs["original"] == "shared"
    assert hostops.get_graphics_type(host) == "shared"

    provider.update(created.id, updated.outs, news)
    assert hostops.get_graphics_type(host) == "sharedDirect"
    provider.delete(created.id, {**updated.outs, "graphicsType": "sharedDirect"})
    assert hostops.get_graphics_type(host) == "shared"  # what create found


def test_graphics_create_rolls_back_when_the_host_ignores_it(si, conn_props, fake_graphics):
    # A host that accepts the change and does not apply it: no simulator does that, so in process.
    fake_graphics.methods["UpdateGraphicsConfig"] = lambda config: None  # accepted, not applied
    provider = configured(GraphicsTypeProvider(), conn_props)
    with pytest.raises(VsphereOperationError, match="graphics type: create failed in HostGraphicsManager.graphicsConfig: "
                                                      "not applied: wrote 'sharedDirect' but vSphere reports 'shared'"):
        provider.create(engine_props(provider, hostName="DC0_C0_H2", graphicsType="sharedDirect"))
    # The failed create tried to put the original back before reporting.
    assert [c.body()["config"]["hostDefaultGraphicsType"] for c in fake_graphics.calls] == ["sharedDirect", "shared"]


# ---------------------------------------------------------------- module options


def test_module_options_lifecycle(si, conn_props):
    host = hostops.find_host(si, "DC0_C0_H2")
    provider = configured(ModuleOptionsProvider(), conn_props)
    options = "pfctx=0x08 pfcrx=0x08 trust_state=2"
    news = engine_props(provider, hostName="DC0_C0_H2", module="nmlx5_core", options=options)

    created = provider.create(news)
    assert created.id == "DC0_C0_H2:module:nmlx5_core"
    assert created.outs["original"] == ""
    assert hostops.get_module_options(host, "nmlx5_core") == options
    assert provider.diff(created.id, created.outs, news).changes is False

    updated = provider.update(created.id, created.outs, {**news, "options": "pfctx=0x10 pfcrx=0x10"})
    assert hostops.get_module_options(host, "nmlx5_core") == "pfctx=0x10 pfcrx=0x10"

    provider.delete(created.id, updated.outs)
    assert hostops.get_module_options(host, "nmlx5_core") == ""  # what create found


# ---------------------------------------------------------------- vGPU profile


def power_offs(si, vm) -> int:
    """How often vCenter's event log saw the VM powered off."""
    events = si.RetrieveContent().eventManager.QueryEvents(vim.event.EventFilterSpec(
        entity=vim.event.EventFilterSpec.ByEntity(entity=vm, recursion="self")))
    return sum(isinstance(e, (vim.event.VmStoppingEvent, vim.event.VmPoweredOffEvent)) for e in events)


def test_an_older_labs_vgpu_resource_is_read_and_dropped_leaving_the_vgpu(si, conn_props):
    """Labs built before the node roll held the vGPU have a vGPU resource per GPU VM; no program registers
    one now. Its refresh still reads the VM's profile, and the delete the next `up` runs for it (today's
    code: the provider is unpickled by module and name) leaves the vGPU on the running VM."""
    vm = vm_named(si, "DC0_C0_RP0_VM0")
    assert vm.runtime.powerState == "poweredOn" and hostops.vgpu_devices(vm) == []
    provider = configured(VgpuProfileProvider(), conn_props)
    news = engine_props(provider, vmId=vm._moId, vmName=vm.name, profile="grid_v100-16c")
    created = provider.create(news)  # as the older release attached it
    try:
        assert created.id == f"{vm._moId}:vgpu"
        offs = power_offs(si, vm)
        assert offs >= 1  # the older release's attach power-cycled it, and vCenter logged it
        assert provider.read(created.id, created.outs).outs["profile"] == "grid_v100-16c"
        provider.delete(created.id, created.outs)
        assert [x.backing.vgpu for x in hostops.vgpu_devices(vm)] == ["grid_v100-16c"]
        assert vm.runtime.powerState == "poweredOn" and power_offs(si, vm) == offs
        # a VM that went: refresh says so
        assert provider.read(created.id, {**created.outs, "vmId": "vm-999999"}).id is None
    finally:
        hostops.set_vgpu_profile(vm, "")


# ---------------------------------------------------------------- check


@pytest.mark.parametrize(
    ("provider", "inputs", "failing"),
    [
        (GraphicsTypeProvider(), {"hostName": "h", "graphicsType": "direct"}, ["graphicsType"]),
        (GraphicsTypeProvider(), {"hostName": "h", "graphicsType": "sharedDirect"}, []),
        (GraphicsTypeProvider(), {"hostName": "h", "graphicsType": sdk_access.UNKNOWN}, []),
        (FirewallRulesetProvider(), {"hostName": " ", "ruleset": "pvrdma", "enabled": "yes"}, ["hostName", "enabled"]),
        (VgpuProfileProvider(), {"vmId": sdk_access.UNKNOWN, "vmName": "w1", "profile": ""}, ["profile"]),
        (ModuleOptionsProvider(), {"hostName": "h", "module": "nmlx5_core", "options": 8}, ["options"]),
    ],
)
def test_check_reports_bad_inputs_by_property(provider, inputs, failing):
    # Decoded as pulumi.dynamic's Check decodes the engine's request (keep_unknowns: an unknown
    # becomes a pulumi.output.Unknown; sdk/python/lib/pulumi/dynamic/__main__.py). No connection in
    # the inputs, and none configured: check needs neither.
    struct = struct_pb2.Struct()
    struct.update({"kind": provider.kind, **inputs})
    result = provider.check({}, sdk_access.deserialize_properties(struct, keep_unknowns=True))
    assert [f.property for f in result.failures] == failing


# ---------------------------------------------------------------- registration under mocks


class _Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


class _RecordingMonitor(MockMonitor):
    """Keeps each RegisterResource request: resource options never reach the Mocks."""

    def __init__(self, mocks):
        super().__init__(mocks)
        self.requests = []
        self.urns: dict[str, str] = {}
        """A registered resource's reference as a dependent's `provider` names it (URN::ID), by name."""

    def RegisterResource(self, request):  # noqa: N802 - the monitor's gRPC method name
        self.requests.append(request)
        response = super().RegisterResource(request)
        self.urns[request.name] = f"{response.urn}::{response.id}"
        return response


CONTRACT_INPUTS = {
    "vsphere-host-advanced-option": {"hostName", "key", "value"},
    "vsphere-host-firewall-ruleset": {"hostName", "ruleset", "enabled"},
    "vsphere-host-graphics": {"hostName", "graphicsType"},
    "vsphere-host-module-options": {"hostName", "module", "options"},
}


@pytest.mark.parametrize("wrapped", [True, False], ids=["secret-password", "plain-password"])
def test_resources_register_as_the_contract_says_with_a_secret_password(wrapped):
    """A resource's inputs carry its setting and no connection; its explicit provider (vcenter_provider)
    holds the connection once, the password a secret in its inputs."""
    monitor = _RecordingMonitor(_Mocks())
    pulumi.runtime.set_mocks(monitor.mocks, project="gpu-lab", stack="test", preview=False, monitor=monitor)

    @pulumi.runtime.test
    def program():
        # A caller that forgets to wrap the password must not leak it either.
        password = pulumi.Output.secret("s3cret") if wrapped else "s3cret"
        conn = VcenterConnection("vc.lab.example", "administrator@vsphere.local", password, insecure=not wrapped)
        opts = pulumi.ResourceOptions(provider=vcenter_provider(conn))
        made = [
            HostAdvancedOption("esx24-pvrdma-vmknic", "esx01", "Net.PVRDMAVmknic", "vmk3", opts=opts),
            HostFirewallRuleset("esx24-pvrdma-fw", "esx01", opts=opts),
            HostGraphicsType("esx24-graphics", "esx01", opts=opts),
            HostModuleOptions("esx24-nmlx5", "esx01", options="pfctx=0x08 pfcrx=0x08", opts=opts),
        ]
        return pulumi.Output.all(*[r.id for r in made])

    program()

    requests = [r for r in monitor.requests if r.type != "pulumi:pulumi:Stack"]
    [provider] = [r for r in requests if r.type == PROVIDER_TYPE]
    resources = [r for r in requests if r.type != PROVIDER_TYPE]
    assert [r.type for r in resources] == [DYNAMIC_TYPE] * 4

    # the explicit provider: the connection, once, the password secret even when handed over plain
    config = sdk_access.deserialize_properties(provider.object)
    assert set(VCENTER_CONFIG.values()) <= set(config)
    assert sdk_access.is_secret_value(config[VCENTER_CONFIG["password"]])
    assert sdk_access.unwrap_secret(config[VCENTER_CONFIG["password"]]) == "s3cret"
    for key in ("server", "user", "port", "insecure"):
        assert not sdk_access.is_secret_value(config[VCENTER_CONFIG[key]]), key
    assert {key: config[VCENTER_CONFIG[key]] for key in ("server", "user", "port", "insecure")} == {
        "server": "vc.lab.example", "user": "administrator@vsphere.local", "port": 443, "insecure": not wrapped}

    # the resources: no connection, nothing secret to declare, each served by that provider
    by_kind = {}
    for request in resources:
        inputs = sdk_access.deserialize_properties(request.object)
        kind = sdk_access.unwrap_secret(inputs["kind"])
        by_kind[kind] = inputs
        assert list(request.additionalSecretOutputs) == [], kind
        assert request.provider == monitor.urns[provider.name], kind
    assert set(by_kind) == set(CONTRACT_INPUTS)
    for kind, inputs in by_kind.items():
        assert set(inputs) == {"kind", "__provider", *CONTRACT_INPUTS[kind]}, kind
        assert not CONNECTION & set(inputs), kind
        assert not any(sdk_access.is_secret_value(inputs[k]) for k in CONTRACT_INPUTS[kind]), kind
        assert sdk_access.is_secret_value(inputs["__provider"]), kind  # the SDK's default, kept
    assert by_kind["vsphere-host-firewall-ruleset"]["ruleset"] == "pvrdma"
    assert by_kind["vsphere-host-firewall-ruleset"]["enabled"] is True
    assert by_kind["vsphere-host-graphics"]["graphicsType"] == "sharedDirect"
    assert by_kind["vsphere-host-module-options"]["module"] == "nmlx5_core"


# ---------------------------------------------------------------- the provider in its own process


def _clean_env() -> dict:
    # Only the working directory may make `components` importable, as for the engine's
    # `python -m pulumi.dynamic` started in the project directory.
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_providers_unpickle_in_a_fresh_process_without_pyvmomi():
    providers = [_ADVANCED_OPTION, _FIREWALL_RULESET, _GRAPHICS_TYPE, _MODULE_OPTIONS, _VGPU_PROFILE]
    payloads = [serialize_provider(p) for p in providers]
    # Pickled by reference (module and class name), not by value.
    assert all(len(base64.b64decode(s)) < 200 for s in payloads)
    script = (
        "import base64, json, sys, dill\n"
        "loaded = [dill.loads(base64.b64decode(s)) for s in json.load(sys.stdin)]\n"
        "print(json.dumps({'types': [type(p).__module__ + '.' + type(p).__name__ for p in loaded],\n"
        "                  'pyvmomi': 'pyVmomi' in sys.modules}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=_clean_env(),
        input=json.dumps(payloads),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result = json.loads(done.stdout)
    assert result["types"] == [f"{type(p).__module__}.{type(p).__name__}" for p in providers]
    assert result["pyvmomi"] is False


def test_firewall_ruleset_through_the_dynamic_provider_server(si, conn_props):
    """Create and delete over gRPC, as the engine does, against vcsim: Configure first with the explicit
    provider's inputs (the connection, the password as the secret it is), then the resource's requests,
    which carry none of it."""
    import grpc
    from google.protobuf import struct_pb2
    from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

    host = hostops.find_host(si, "DC0_C0_H2")
    assert hostops.get_ruleset_enabled(host, "pvrdma") is False
    server = subprocess.Popen(
        [sys.executable, "-m", "pulumi.dynamic"],
        cwd=ROOT,
        env=_clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        port = int(server.stdout.readline())  # the server prints its port first
        config = provider_config(conn_props)
        config[VCENTER_CONFIG["password"]] = sdk_access.wrap_secret(conn_props["password"])
        props = struct_pb2.Struct()
        props.update(
            {
                "__provider": serialize_provider(_FIREWALL_RULESET),
                "kind": _FIREWALL_RULESET.kind,
                "hostName": "DC0_C0_H2",
                "ruleset": "pvrdma",
                "enabled": True,
            }
        )
        urn = "urn:pulumi:test::gpu-lab::pulumi-python:dynamic:Resource::esx-pvrdma-fw"
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = provider_pb2_grpc.ResourceProviderStub(channel)
            configure_server(stub, config, timeout=30)
            created = stub.Create(provider_pb2.CreateRequest(urn=urn, properties=props), timeout=30)
            assert created.id == "DC0_C0_H2:firewall:pvrdma"
            outs = dict(created.properties)
            assert outs["original"] is False and not CONNECTION & set(outs)
            assert conn_props["password"] not in str(created.properties)
            assert hostops.get_ruleset_enabled(host, "pvrdma") is True

            stub.Delete(provider_pb2.DeleteRequest(id=created.id, urn=urn, properties=created.properties), timeout=30)
            assert hostops.get_ruleset_enabled(host, "pvrdma") is False
    finally:
        stop(server, grace_s=10)


def test_module_options_have_no_silent_default():
    with pytest.raises(TypeError, match="needs options"):
        HostModuleOptions("esx24-nmlx5", "esx01")


def test_the_provider_server_runs_more_than_four_creates_at_once(tmp_path):
    """Through `python -m pulumi.dynamic`, as the engine runs it: the SDK serves a provider with four
    threads (pulumi/dynamic/__main__.py, main); once our providers' module loads there it widens
    that pool (components/sdk_internals.py, widen_dynamic_provider_server), so sixteen creates
    against a vCenter whose host look-up takes 2 s finish together, not four at a time."""
    import grpc
    from google.protobuf import struct_pb2
    from pulumi.dynamic.dynamic import serialize_provider
    from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

    binary = lab_vcsim_binary()
    if binary is None:
        missing("lab-vcsim is not built (build/bin/lab-vcsim): run make simulator")
    delay_ms, calls = 2000, 16
    sim = subprocess.Popen([binary, "-l", "127.0.0.1:0", "-username", VCSIM_USER, "-password", VCSIM_PASSWORD,
                            "-method-delay", f"CreateContainerView:{delay_ms}"], stdout=(tmp_path / "out").open("w"),
                           stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    server = subprocess.Popen([sys.executable, "-m", "pulumi.dynamic"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while "GOVC_URL=" not in (tmp_path / "out").read_text():
            assert time.monotonic() < deadline and sim.poll() is None, "lab-vcsim did not start"
            time.sleep(0.05)
        sim_port = int(re.search(r"@127\.0\.0\.1:(\d+)/sdk", (tmp_path / "out").read_text()).group(1))
        port = int(server.stdout.readline())
        errors: list[BaseException] = []
        # as the engine does before the first resource request: the explicit provider's inputs
        config = provider_config({"server": "127.0.0.1", "port": sim_port, "user": VCSIM_USER,
                                  "password": VCSIM_PASSWORD, "insecure": True})
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            configure_server(provider_pb2_grpc.ResourceProviderStub(channel), config, timeout=30)

        def create(i: int) -> None:
            props = struct_pb2.Struct()
            props.update({"kind": _FIREWALL_RULESET.kind,
                          "hostName": "DC0_H0", "ruleset": "pvrdma", "enabled": True, "original": None,
                          "__provider": serialize_provider(_FIREWALL_RULESET)})
            urn = f"urn:pulumi:test::gpu-lab::pulumi-python:dynamic:Resource::ruleset-{i}"
            try:
                with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                    provider_pb2_grpc.ResourceProviderStub(channel).Create(
                        provider_pb2.CreateRequest(urn=urn, properties=props), timeout=120)
            except grpc.RpcError as exc:
                errors.append(exc)

        create(0)  # loads the providers' module in the server: the pool is widened from here on
        started = time.monotonic()
        threads = [threading.Thread(target=create, args=(i,)) for i in range(calls)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=150)
        elapsed = time.monotonic() - started
        assert errors == []
        # four at a time would take calls / 4 rounds of at least one look-up's delay each
        assert elapsed < (calls / 4) * delay_ms / 1000, f"{calls} creates took {elapsed:.1f} s"
    finally:
        stop(server, grace_s=10)
        stop(sim, grace_s=10)
