"""Host settings ESXi reads at boot are reported as pending until the host has rebooted.

ConnectX module options are handed to the module when it loads and the graphics type is used once
Xorg restarts or the host reboots: after `pulumi up` wrote them, they are not in force yet. The
providers record the host's boot time (HostSystem.runtime.bootTime) at the write; `pulumi refresh`
reads it again. lab-vcsim gives every host the simulator's start time as boot time and has no
reboot, so a reboot is simulated by a later boot time (hostops.boot_time, the seam). Module options
are written to the simulator's own per-host kernel module system.
"""

from __future__ import annotations

import builders
import pulumi
import pytest
from lab_vcsim import configured

from components.dynamic import hostops
from components.dynamic.host_settings import FirewallRulesetProvider, GraphicsTypeProvider, ModuleOptionsProvider
from tools.mockrun import LabMocks, run_program

OPTIONS = "pfctx=0x08 pfcrx=0x08 trust_state=2"


def engine_props(provider, **inputs) -> dict:
    """Inputs as the engine hands them to a provider: no connection (the provider's configuration holds it)."""
    return {"__provider": "c2VyaWFsaXplZA==", "kind": provider.kind, **inputs}


@pytest.fixture()
def module_writes(si, monkeypatch) -> list[tuple[str, str]]:
    """Every module option string written to a host, the host's options put back afterwards."""
    writes: list[tuple[str, str]] = []
    real_set = hostops.set_module_options

    def recording_set(host, module, options):
        writes.append((module, options))
        real_set(host, module, options)

    monkeypatch.setattr(hostops, "set_module_options", recording_set)
    host = hostops.find_host(si, "DC0_C0_H1")
    found = hostops.get_module_options(host, "nmlx5_core")
    yield writes
    real_set(host, "nmlx5_core", found)


def test_vcsim_reports_a_boot_time(si):
    # What the providers compare: vcsim sets it when it creates the host (simulator/host_system.go).
    host = hostops.find_host(si, "DC0_C0_H1")
    assert host.runtime.bootTime is not None
    assert hostops.boot_time(host) == host.runtime.bootTime.isoformat()


def test_written_module_options_are_pending_until_the_host_reboots(si, conn_props, module_writes, monkeypatch):
    provider = configured(ModuleOptionsProvider(), conn_props)
    news = engine_props(provider, hostName="DC0_C0_H1", module="nmlx5_core", options=OPTIONS)
    booted = hostops.boot_time(hostops.find_host(si, "DC0_C0_H1"))

    created = provider.create(news)
    assert module_writes == [("nmlx5_core", OPTIONS)]
    assert (created.outs["pendingReboot"], created.outs["pendingSinceBoot"]) == (True, booted)

    # `pulumi refresh` before the reboot: still pending
    assert provider.read(created.id, created.outs).outs["pendingReboot"] is True
    # ... and after it
    monkeypatch.setattr(hostops, "boot_time", lambda host: "2031-01-01T00:00:00+00:00")
    refreshed = provider.read(created.id, created.outs).outs
    assert (refreshed["pendingReboot"], refreshed["pendingSinceBoot"]) == (False, None)
    assert refreshed["options"] == OPTIONS


def test_a_changed_priority_is_pending_again(si, conn_props, module_writes, monkeypatch):
    provider = configured(ModuleOptionsProvider(), conn_props)
    news = engine_props(provider, hostName="DC0_C0_H1", module="nmlx5_core", options=OPTIONS)
    created = provider.create(news)
    monkeypatch.setattr(hostops, "boot_time", lambda host: "2031-01-01T00:00:00+00:00")
    in_force = provider.read(created.id, created.outs).outs
    assert in_force["pendingReboot"] is False

    # PFC priority 4 instead of 3 (components/roce/host.py nmlx5_module_options)
    updated = provider.update(created.id, in_force, {**news, "options": "pfctx=0x10 pfcrx=0x10 trust_state=2"})
    assert (updated.outs["pendingReboot"], updated.outs["pendingSinceBoot"]) == (True, "2031-01-01T00:00:00+00:00")
    assert updated.outs["original"] == ""  # still what create found


def test_options_already_in_place_are_neither_written_nor_pending(si, conn_props, module_writes):
    hostops.set_module_options(hostops.find_host(si, "DC0_C0_H1"), "nmlx5_core", OPTIONS)
    module_writes.clear()
    provider = configured(ModuleOptionsProvider(), conn_props)
    created = provider.create(engine_props(provider, hostName="DC0_C0_H1", module="nmlx5_core", options=OPTIONS))
    assert module_writes == []
    assert (created.outs["pendingReboot"], created.outs["original"]) == (False, OPTIONS)


def test_a_rotated_password_is_no_diff_and_an_update_writes_nothing_and_keeps_the_pending_state(
        si, conn_props, module_writes):
    """A rotated vCenter password changes the explicit provider's configuration alone: the engine configures
    a new provider process with it, and the resource's diff finds no change (the state of a previous release,
    which kept the password before in each resource, neither). An update that runs anyway finds the options on
    the host as they were: nothing is written, nothing becomes pending, and the old copy of the password goes."""
    provider = configured(ModuleOptionsProvider(), conn_props)
    news = engine_props(provider, hostName="DC0_C0_H1", module="nmlx5_core", options=OPTIONS)
    created = provider.create(news)
    written = len(module_writes)
    rotated = configured(ModuleOptionsProvider(), {**conn_props, "password": "the-password-after"})
    diff = rotated.diff(created.id, created.outs, news)
    assert (diff.changes, diff.replaces) == (False, [])
    olds = {**created.outs, "password": "the-password-before"}  # as a previous release's state kept it
    diff = rotated.diff(created.id, olds, news)
    assert (diff.changes, diff.replaces) == (False, [])
    updated = provider.update(created.id, olds, news)
    assert module_writes[written:] == []
    assert updated.outs["pendingSinceBoot"] == created.outs["pendingSinceBoot"]
    assert "password" not in updated.outs


def test_graphics_type_is_pending_too(si, conn_props, fake_graphics, monkeypatch):
    provider = configured(GraphicsTypeProvider(), conn_props)
    created = provider.create(engine_props(provider, hostName="DC0_C0_H2", graphicsType="sharedDirect"))
    assert created.outs["pendingReboot"] is True
    monkeypatch.setattr(hostops, "boot_time", lambda host: "2031-01-01T00:00:00+00:00")
    assert provider.read(created.id, created.outs).outs["pendingReboot"] is False


def test_settings_in_force_at_once_report_nothing_pending(si, conn_props):
    provider = configured(FirewallRulesetProvider(), conn_props)
    news = engine_props(provider, hostName="DC0_C0_H0", ruleset="pvrdma", enabled=True)
    created = provider.create(news)
    try:
        assert "pendingReboot" not in created.outs
    finally:
        provider.delete(created.id, created.outs)


# ---------------------------------------------------------------- the stack output


class _PendingMocks(LabMocks):
    """The engine's answer after a create that wrote graphics type and module options on two hosts."""

    def __init__(self, pending: dict[str, bool], deployed=None):
        super().__init__(deployed)
        self.pending = pending

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        rid, outputs = super().new_resource(args)
        if args.name in self.pending:
            outputs = {**outputs, "pendingReboot": self.pending[args.name]}
        return rid, outputs


def test_hosts_pending_reboot_names_each_host_and_setting(monkeypatch):
    import tools.mockrun as mockrun

    pending = {"roce-esx01-connectx-qos": True, "roce-esx01-graphics": True, "roce-esx03-connectx-qos": True,
               "roce-esx02-graphics": False}
    monkeypatch.setattr(mockrun, "LabMocks", lambda deployed=None: _PendingMocks(pending, deployed))
    run = run_program(builders.lab_stack())
    assert run.outputs["hostsPendingReboot"] == {
        "esx01": ["graphics type", "nmlx5_core options"],
        "esx03": ["nmlx5_core options"],
    }


def test_nothing_pending_is_an_empty_map():
    # Under the plain mocks the providers report nothing (they never ran).
    assert run_program(builders.lab_stack()).outputs["hostsPendingReboot"] == {}



def test_an_update_after_the_reboot_clears_what_was_pending(si, conn_props, module_writes, monkeypatch):
    """Without a refresh in between: the next update (here of a previous release's state, with the password
    it kept) sees the new boot."""
    provider = configured(ModuleOptionsProvider(), conn_props)
    news = engine_props(provider, hostName="DC0_C0_H1", module="nmlx5_core", options=OPTIONS)
    created = provider.create(news)
    monkeypatch.setattr(hostops, "boot_time", lambda host: "2031-01-01T00:00:00+00:00")
    updated = provider.update(created.id, {**created.outs, "password": "the-password-before"}, news)
    assert (updated.outs["pendingReboot"], updated.outs["pendingSinceBoot"]) == (False, None)
