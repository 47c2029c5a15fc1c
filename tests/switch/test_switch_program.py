"""SpectrumSwitch under Pulumi mocks: one remote Command per switch, its triggers and its secrets.

Most tests build only the switch components (as __main__.py does) so they do not depend on the
other sections; the lab-stack tests run the whole program with run_stack / run_program.
"""

from __future__ import annotations

import copy
import json

import builders
import pulumi
import pytest

import tools.mockrun as mockrun
from components.config import load_lab
from components.ssh.host_key import render_host_key_check
from components.switch.component import SpectrumSwitch, SpectrumSwitchArgs
from components.switch.files import config_digest, render_apply, render_revert
from tools.mockrun import LabMocks, RecordingMonitor, Run, run_program, run_under_mocks

SWITCH = "gpu-lab:switch:SpectrumSwitch"
COMMAND = "command:remote:Command"
CONTRACT_KEYS = {"switchName", "os", "trafficClass", "ecnMinKb", "ecnMaxKb", "bufferKb", "pfcPriority",
                 "hostPfcPriority", "pfcMode", "trust", "mtu", "hostMtu", "ports"}
CUMULUS = {
    "name": "sw02", "os": "cumulus", "managementAddress": "172.16.31.3", "user": "cumulus",
    "connectTimeoutSeconds": 5, "connectAttempts": 3,
    "hostKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdpdS1sYWItdGVzdC1rZXktbm90LXJlYWwtMDAwMDAw",
    "ports": {"rails": [{"subnet": "10.10.11.0/24", "ports": ["swp1", "swp2"]},
                        {"subnet": "10.10.12.0/24", "ports": ["swp3", "swp4"]}]},
}


@pytest.fixture(scope="module")
def requests():
    """Registration requests by resource name, for the options the recorded inputs do not show."""
    seen = {}
    original = mockrun.RecordingMonitor.RegisterResource

    def spy(self, request):
        seen[request.name] = request
        return original(self, request)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mockrun.RecordingMonitor, "RegisterResource", spy)
        yield seen


def two_switch_config() -> dict:
    config = builders.lab_stack()
    config["gpu-lab:switches"].append(copy.deepcopy(CUMULUS))
    return config


def lab_of(config: dict):
    return load_lab({k.split(":", 1)[1]: v for k, v in config.items() if k.startswith("gpu-lab:")})


def run_switches(config: dict, passwords: dict[str, str] | None = None) -> Run:
    """Register one SpectrumSwitch per configured switch, as __main__.py does, under the lab mocks."""
    lab = lab_of(config)
    passwords = passwords or {sw.name: f"pw-{sw.name}" for sw in lab.switches}
    monitor = RecordingMonitor(LabMocks())

    def program() -> None:
        for sw in lab.switches:
            SpectrumSwitch(sw.name, SpectrumSwitchArgs(
                switch=sw, hosts=lab.plan.switch_hosts(sw), password=pulumi.Output.secret(passwords[sw.name])))

    run_under_mocks(program, monitor)
    return Run(resources=monitor.recorded, outputs={}, stack="lab")


def commands_by_switch(run) -> dict[str, dict]:
    """Each switch component's Commands' inputs, by switch (other components run Commands too)."""
    switches = {r.urn: r.name for r in run.of_type(SWITCH)}
    found: dict[str, dict] = {}
    for command in run.of_type(COMMAND):
        if command.parent_urn in switches:
            assert switches[command.parent_urn] not in found, "more than one Command for a switch"
            found[switches[command.parent_urn]] = command.plain()
    return found


# ---------------------------------------------------------------- the lab's switch, component only


@pytest.fixture(scope="module")
def lab_switch_run(requests):
    return run_switches(builders.lab_stack(), {"sw01": "onyx-Pa55-7f3a"})


def test_component_registers_the_contracts_intent(lab_switch_run):
    props = lab_switch_run.named("sw01").plain()
    assert set(props) == CONTRACT_KEYS
    assert (props["switchName"], props["os"], props["pfcMode"], props["trust"]) == ("sw01", "onyx", "lossless", "dscp")
    assert (props["trafficClass"], props["ecnMinKb"], props["ecnMaxKb"], props["bufferKb"]) == (3, 150, 1500, 16384)
    assert (props["pfcPriority"], props["hostPfcPriority"], props["mtu"], props["hostMtu"]) == (3, 3, 9216, 9000)
    assert props["ports"] == [{"port": f"1/{n}", "role": "host", "vlan": 0} for n in (1, 2, 3, 4)]


def test_command_applies_on_create_reverts_on_delete_and_fails_fast(lab_switch_run):
    sw = lab_of(builders.lab_stack()).switches[0]
    (command,) = [r for r in lab_switch_run.children_of("sw01") if r.type == COMMAND]
    assert command.name == "sw01-config"
    cmd = command.plain()
    assert cmd["create"] == render_apply(sw)
    assert cmd["delete"] == render_revert(sw)
    assert "update" not in cmd  # a changed trigger replaces: revert old, apply new
    assert cmd["triggers"] == [config_digest(sw)]
    conn = cmd["connection"]
    assert (conn["host"], conn["user"], conn["port"]) == ("172.16.31.2", "admin", 22)
    assert (conn["dialErrorLimit"], conn["perDialTimeout"]) == (2, 10)
    assert conn["hostKey"] == builders.SWITCH_HOST_KEY
    assert cmd["logging"] == "none" and cmd["addPreviousOutputInEnv"] is False


def test_command_output_is_secret_and_replacement_reverts_first(lab_switch_run, requests):
    request = requests["sw01-config"]
    assert set(request.additionalSecretOutputs) >= {"stdout", "stderr"}
    assert request.deleteBeforeReplace is True


def test_password_reaches_the_connection_only_as_a_secret(lab_switch_run):
    command = lab_switch_run.named("sw01-config")
    assert command.plain()["connection"]["password"] == "onyx-Pa55-7f3a"
    assert {"connection", "connection.password"} & set(command.secret_paths())
    for resource in lab_switch_run.resources:
        assert "Pa55" not in json.dumps(resource.redacted(), default=str), resource.name


# ---------------------------------------------------------------- two switches, triggers


@pytest.fixture(scope="module")
def base_run():
    return run_switches(two_switch_config())


def test_one_command_per_switch_for_both_oses(base_run):
    assert sorted(r.name for r in base_run.of_type(SWITCH)) == ["sw01", "sw02"]
    commands = commands_by_switch(base_run)
    assert sorted(commands) == ["sw01", "sw02"]
    cl = commands["sw02"]
    assert cl["create"].rstrip().endswith("nv config apply -y")
    assert cl["connection"]["hostKey"] == CUMULUS["hostKey"]
    assert (cl["connection"]["dialErrorLimit"], cl["connection"]["perDialTimeout"]) == (3, 5)
    props = base_run.named("sw02").plain()
    assert props["ports"] == [{"port": p, "role": "rail", "vlan": v}
                              for p, v in (("swp1", 111), ("swp2", 111), ("swp3", 112), ("swp4", 112))]


def _triggers(run) -> dict[str, list]:
    return {name: cmd["triggers"] for name, cmd in commands_by_switch(run).items()}


def _mutate(edit) -> dict:
    config = two_switch_config()
    edit(config)
    return config


@pytest.mark.parametrize("edit, changed", [
    (lambda c: c["gpu-lab:switches"][0]["roce"].update(ecnMaxKb=1400), {"sw01"}),
    (lambda c: c["gpu-lab:switches"][1]["ports"]["rails"][1]["ports"].append("swp5"), {"sw02"}),
    (lambda c: c["gpu-lab:switches"][1].setdefault("roce", {}).update(mtu=9100), {"sw02"}),
    (lambda c: c["gpu-lab:switches"][0]["roce"].update(pfcMode="lossy")
     or c["gpu-lab:switches"][1].setdefault("roce", {}).update(pfcMode="lossy"), {"sw01", "sw02"}),
    # Nothing rendered changes: no replacement.
    (lambda c: c["gpu-lab:switches"][0].update(connectTimeoutSeconds=3, managementAddress="172.16.31.9"), set()),
    (lambda c: c["gpu-lab:switches"][1].update(user="netops", sshPort=2222), set()),
    (lambda c: c["gpu-lab:vsphere"]["workers"]["sizing"].update(memoryGb=32), set()),
])
def test_triggers_change_exactly_when_the_rendered_config_changes(base_run, edit, changed):
    before = _triggers(base_run)
    after = _triggers(run_switches(_mutate(edit)))
    assert {name for name in before if before[name] != after[name]} == changed


def test_without_a_pinned_key_there_is_no_check():
    config = two_switch_config()
    del config["gpu-lab:switches"][0]["hostKey"]
    run = run_switches(config)
    assert [r.name for r in run.of_type("command:local:Command")] == ["sw02-host-key"]


def test_a_new_password_keeps_the_trigger(base_run):
    rotated = run_switches(two_switch_config(), {"sw01": "rotated-1", "sw02": "rotated-2"})
    assert _triggers(rotated) == _triggers(base_run)


# ---------------------------------------------------------------- the whole program


def test_lab_program_has_one_switch_component_with_its_host_key_check_and_one_command(requests):
    run = mockrun.run_program(builders.lab_stack())
    (component,) = run.of_type(SWITCH)
    assert component.name == "sw01"
    assert [(r.type, r.name) for r in run.children_of("sw01")] == [
        ("command:local:Command", "sw01-host-key"), (COMMAND, "sw01-config")]
    check = run.named("sw01-host-key").plain()
    assert check["create"] == "/bin/sh -s"
    assert check["stdin"] == render_host_key_check("172.16.31.2", 22, builders.SWITCH_HOST_KEY,
                                                   setting="the hostKey of switch sw01", attempts=2,
                                                   timeout_seconds=10)
    assert check["triggers"] == run.named("sw01-config").plain()["triggers"]
    assert list(requests["sw01-config"].dependencies) == [run.named("sw01-host-key").urn]
    for resource in (component, *run.children_of("sw01")):  # the placeholder password stays wrapped
        assert mockrun.PLACEHOLDER not in json.dumps(resource.redacted(), default=str), resource.name


@pytest.mark.parametrize("edit, path", [
    (lambda c: c["gpu-lab:switches"][0]["roce"].update(ecnMinKb=2000), "switches[0].roce.ecnMinKb"),
    (lambda c: c["gpu-lab:switches"][0]["roce"].update(ecnMaxKb=20000), "switches[0].roce.ecnMaxKb"),
    (lambda c: c["gpu-lab:vsphere"]["networks"]["rdma"].update(pfcPriority=5), "switches[0].roce.pfcPriority"),
    (lambda c: c["gpu-lab:switches"][0]["roce"].update(mtu=4200), "switches[0].roce.mtu"),
    (lambda c: c["gpu-lab:switches"][1]["ports"]["rails"][0]["ports"].append("swp3"),
     "switches[1].ports.rails[1].ports[0]"),
])
def test_program_refuses_a_bad_switch_config_before_any_resource(edit, path, requests):
    requests.clear()
    with pytest.raises(pulumi.RunError, match=path.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        run_program(_mutate(edit))
    # each run registers its own root Stack before the program starts; nothing else may follow
    assert [r.type for r in requests.values()] == ["pulumi:pulumi:Stack"]
