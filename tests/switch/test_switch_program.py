"""SpectrumSwitch under Pulumi mocks: its Commands' names, inputs, options and secrets.

Most tests build only the switch components (as __main__.py does) so they do not depend on the
other sections; the lab-stack tests run the whole program with run_program. The rules the options
serve come from pulumi-command v1.2.1 (tests/switch_sim.py cites them; test_switch_day2.py
plays them out).
"""

from __future__ import annotations

import copy
import json

import builders
import pulumi
import pytest
from switch_stack import COMMAND, register

import tools.mockrun as mockrun
from components.config import load_lab
from components.ssh.host_key import render_host_key_check
from components.switch.component import SpectrumSwitch, SpectrumSwitchArgs
from components.switch.files import apply_digest, render_apply, render_login_check, render_undo, undo_items
from components.switch.plan import switch_plan
from tools.mockrun import LabMocks, RecordingMonitor, Run, run_program, run_under_mocks

SWITCH = "gpu-lab:switch:SpectrumSwitch"
CONTRACT_KEYS = {"switchName", "os", "trafficClass", "ecnMinKb", "ecnMaxKb", "bufferKb", "pfcPriority",
                 "hostPfcPriority", "pfcMode", "trust", "mtu", "hostMtu", "ports"}
CUMULUS = {
    "name": "sw02", "os": "cumulus", "managementAddress": "172.16.31.3", "user": "cumulus",
    "connectTimeoutSeconds": 5, "connectAttempts": 3,
    "hostKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdpdS1sYWItdGVzdC1rZXktbm90LXJlYWwtMDAwMDAw",
    "ports": {"rails": [{"subnet": "10.10.11.0/24", "ports": ["swp1", "swp2"]},
                        {"subnet": "10.10.12.0/24", "ports": ["swp3", "swp4"]}]},
}
LAB_SWITCH_COMMANDS = ["sw01-apply", "sw01-config", "sw01-undo-pfc", "sw01-undo-pfc-priority-3"] + [
    f"sw01-undo-port-1-{n}-{what}" for n in (1, 2, 3, 4) for what in ("mtu", "trust", "ecn-tc3", "pfc")]


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
        for sw in lab.plan.switches:
            SpectrumSwitch(sw.name, SpectrumSwitchArgs(switch=sw, password=pulumi.Output.secret(passwords[sw.name])))

    run_under_mocks(program, monitor)
    return Run(resources=monitor.recorded, outputs={}, stack="lab")


def commands_of(run, switch: str) -> dict[str, dict]:
    """A switch component's Commands' plain inputs by name, in registration order."""
    component = run.named(switch)
    return {r.name: r.plain() for r in run.resources if r.type == COMMAND and r.parent_urn == component.urn}


# ---------------------------------------------------------------- the lab's switch, component only


@pytest.fixture(scope="module")
def lab_switch():
    sw = switch_plan(lab_of(builders.lab_stack()).switches[0], None)  # the hosts as on bare metal
    return sw, register([sw], {"sw01": "onyx-Pa55-7f3a"})


def test_component_registers_the_contracts_intent():
    run = run_switches(builders.lab_stack(), {"sw01": "onyx-Pa55-7f3a"})
    props = run.named("sw01").plain()
    assert set(props) == CONTRACT_KEYS
    assert (props["switchName"], props["os"], props["pfcMode"], props["trust"]) == ("sw01", "onyx", "lossless", "dscp")
    assert (props["trafficClass"], props["ecnMinKb"], props["ecnMaxKb"], props["bufferKb"]) == (3, 150, 1500, 16384)
    assert (props["pfcPriority"], props["hostPfcPriority"], props["mtu"], props["hostMtu"]) == (3, 3, 9216, 9000)
    assert props["ports"] == [{"port": f"1/{n}", "role": "host", "vlan": 0} for n in (1, 2, 3, 4)]


def test_one_apply_command_and_one_undo_command_per_item(lab_switch):
    sw, switch_run = lab_switch
    assert list(commands_of(switch_run.run, "sw01")) == LAB_SWITCH_COMMANDS
    assert len(LAB_SWITCH_COMMANDS) == 1 + len(undo_items(sw))


def test_apply_command_applies_on_create_checks_the_login_on_update_and_undoes_nothing(lab_switch):
    sw, switch_run = lab_switch
    apply = commands_of(switch_run.run, "sw01")["sw01-apply"]
    assert apply["create"] == render_apply(sw)
    assert apply["update"] == render_login_check(sw) == "show version\n"
    assert "delete" not in apply  # replacing or deleting it runs nothing
    assert apply["triggers"] == [apply_digest(sw)]
    conn = apply["connection"]
    assert (conn["host"], conn["user"], conn["port"]) == ("172.16.31.2", "admin", 22)
    assert (conn["dialErrorLimit"], conn["perDialTimeout"]) == (2, 10)
    assert conn["hostKey"] == builders.SWITCH_HOST_KEY
    assert apply["logging"] == "none" and apply["addPreviousOutputInEnv"] is False
    request = switch_run.requests["sw01-apply"]
    # create-before-delete: a changed setting is applied over the old configuration, never reverted first
    assert request.deleteBeforeReplace is False and list(request.ignoreChanges) == []
    assert set(request.additionalSecretOutputs) >= {"stdout", "stderr"}


def test_undo_commands_run_nothing_until_deleted_and_form_a_chain(lab_switch):
    sw, switch_run = lab_switch
    commands = commands_of(switch_run.run, "sw01")
    registrations = {r.name: r for r in switch_run.registrations("sw01")}
    names = list(commands)
    for index, (name, item) in enumerate(zip(names[1:], undo_items(sw), strict=True)):
        cmd = commands[name]
        assert "create" not in cmd and "update" not in cmd and "triggers" not in cmd, name
        assert cmd["delete"] == render_undo(sw, item)
        assert cmd["logging"] == "none" and cmd["addPreviousOutputInEnv"] is False
        assert cmd["connection"] == commands["sw01-apply"]["connection"]
        # each depends on the one before it, the first on the apply: created after it, deleted newest first
        assert registrations[name].depends_on == (names[index],)
        assert registrations[name].delete_before_replace is False
        assert set(switch_run.requests[name].additionalSecretOutputs) >= {"stdout", "stderr"}


def test_the_anchor_keeps_the_one_command_name_and_ignores_its_old_trigger(lab_switch):
    """An upgraded lab's `sw01-config` holds the one-Command design's create, full revert and trigger;
    with the trigger ignored and no create or update, pulumi-command's Update runs nothing and stores
    the narrow undo (test_switch_day2.py plays the upgrade through)."""
    sw, switch_run = lab_switch
    registrations = {r.name: r for r in switch_run.registrations("sw01")}
    anchor = registrations["sw01-config"]
    assert anchor.ignore_changes == ("triggers",)
    assert not {"create", "update", "triggers"} & set(anchor.inputs)
    assert anchor.inputs["delete"] == render_undo(sw, undo_items(sw)[0])
    assert "configuration delete gpu-lab-before-apply" in anchor.inputs["delete"]
    assert [name for name, r in registrations.items() if r.ignore_changes] == ["sw01-config"]


def test_password_reaches_every_connection_only_as_a_secret(lab_switch):
    _, switch_run = lab_switch
    run = switch_run.run
    for name in LAB_SWITCH_COMMANDS:
        command = run.named(name)
        assert command.plain()["connection"]["password"] == "onyx-Pa55-7f3a"
        assert {"connection", "connection.password"} & set(command.secret_paths()), name
    for resource in run.resources:
        assert "Pa55" not in json.dumps(resource.redacted(), default=str), resource.name


# ---------------------------------------------------------------- two switches, what changes


@pytest.fixture(scope="module")
def base_run():
    return run_switches(two_switch_config())


def test_both_oses_get_an_apply_and_their_undo_items(base_run):
    assert sorted(r.name for r in base_run.of_type(SWITCH)) == ["sw01", "sw02"]
    cl = commands_of(base_run, "sw02")
    assert list(cl)[:3] == ["sw02-apply", "sw02-config", "sw02-undo-trust"]
    assert "sw02-undo-port-swp3-access-vlan" in cl
    apply = cl["sw02-apply"]
    assert apply["create"].rstrip().endswith("nv config apply --confirm-yes")
    assert apply["update"] == "nv show system\n"
    assert apply["connection"]["hostKey"] == CUMULUS["hostKey"]
    assert (apply["connection"]["dialErrorLimit"], apply["connection"]["perDialTimeout"]) == (3, 5)
    assert cl["sw02-config"]["delete"].splitlines()[-2:] == ["nv unset qos roce", "nv config apply -y"]
    props = base_run.named("sw02").plain()
    assert props["ports"] == [{"port": p, "role": "rail", "vlan": v}
                              for p, v in (("swp1", 111), ("swp2", 111), ("swp3", 112), ("swp4", 112))]


def _inputs(run) -> dict[str, dict]:
    return {name: cmd for sw in ("sw01", "sw02") for name, cmd in commands_of(run, sw).items()}


def _mutate(edit) -> dict:
    config = two_switch_config()
    edit(config)
    return config


@pytest.mark.parametrize("edit, replaced, deleted, created", [
    # values: only the apply changes
    (lambda c: c["gpu-lab:switches"][0]["roce"].update(ecnMaxKb=1400), {"sw01-apply"}, set(), set()),
    (lambda c: c["gpu-lab:switches"][1].setdefault("roce", {}).update(mtu=9100), {"sw02-apply"}, set(), set()),
    # a port: its items come or go
    (lambda c: c["gpu-lab:switches"][1]["ports"]["rails"][1]["ports"].append("swp5"), {"sw02-apply"}, set(),
     {"sw02-undo-port-swp5-mtu", "sw02-undo-port-swp5-access-vlan"}),
    (lambda c: c["gpu-lab:switches"][0]["ports"]["hosts"].remove("1/3"), {"sw01-apply"},
     {f"sw01-undo-port-1-3-{w}" for w in ("mtu", "trust", "ecn-tc3", "pfc")}, set()),
    # nothing rendered changes: no replacement, no item
    (lambda c: c["gpu-lab:switches"][0].update(connectTimeoutSeconds=3, managementAddress="172.16.31.9"),
     set(), set(), set()),
    (lambda c: c["gpu-lab:switches"][1].update(user="netops", sshPort=2222), set(), set(), set()),
    (lambda c: c["gpu-lab:vsphere"]["workers"]["sizing"].update(memoryGb=32), set(), set(), set()),
])
def test_what_a_change_replaces_creates_and_deletes(base_run, edit, replaced, deleted, created):
    before, after = _inputs(base_run), _inputs(run_switches(_mutate(edit)))
    assert {n for n in before if n in after and before[n].get("triggers") != after[n].get("triggers")} == replaced
    assert set(before) - set(after) == deleted
    assert set(after) - set(before) == created
    # undo scripts of the items that stay never change with a value
    assert {n for n in before if n in after and before[n].get("delete") != after[n].get("delete")} == set()


def test_a_new_password_changes_the_connections_only(base_run):
    rotated = _inputs(run_switches(two_switch_config(), {"sw01": "rotated-1", "sw02": "rotated-2"}))
    before = _inputs(base_run)
    assert set(rotated) == set(before)
    for name, cmd in rotated.items():
        assert {k: v for k, v in cmd.items() if k != "connection"} == \
            {k: v for k, v in before[name].items() if k != "connection"}, name
        assert cmd["connection"]["password"] != before[name]["connection"]["password"]


# ---------------------------------------------------------------- the whole program


def test_lab_program_has_one_switch_component_with_its_host_key_check_and_commands():
    run = mockrun.run_program(builders.lab_stack())
    (component,) = run.of_type(SWITCH)
    assert component.name == "sw01"
    assert [(r.type, r.name) for r in run.children_of("sw01")] == [
        ("command:local:Command", "sw01-host-key"), *((COMMAND, name) for name in LAB_SWITCH_COMMANDS)]
    check = run.named("sw01-host-key")
    assert check.plain()["create"] == "/bin/sh -s"
    assert check.plain()["stdin"] == render_host_key_check("172.16.31.2", 22, builders.SWITCH_HOST_KEY,
                                                           setting="the hostKey of switch sw01", attempts=2,
                                                           timeout_seconds=10)
    # it runs again whenever the apply does, and the apply waits for it
    apply = run.named("sw01-apply")
    assert check.plain()["triggers"] == apply.plain()["triggers"]
    assert apply.dependencies == [check.urn]
    for resource in (component, *run.children_of("sw01")):  # the placeholder password stays wrapped
        assert mockrun.PLACEHOLDER not in json.dumps(resource.redacted(), default=str), resource.name


@pytest.fixture
def requests():
    """Registration requests by resource name."""
    seen = {}
    original = mockrun.RecordingMonitor.RegisterResource

    def spy(self, request):
        seen[request.name] = request
        return original(self, request)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mockrun.RecordingMonitor, "RegisterResource", spy)
        yield seen


@pytest.mark.parametrize("edit, path", [
    (lambda c: c["gpu-lab:switches"][0]["roce"].update(ecnMinKb=2000), "switches[0].roce.ecnMinKb"),
    (lambda c: c["gpu-lab:switches"][0]["roce"].update(ecnMaxKb=20000), "switches[0].roce.ecnMaxKb"),
    (lambda c: c["gpu-lab:vsphere"]["networks"]["rdma"].update(pfcPriority=5), "switches[0].roce.pfcPriority"),
    (lambda c: c["gpu-lab:switches"][0]["roce"].update(mtu=4200), "switches[0].roce.mtu"),
    (lambda c: c["gpu-lab:switches"][1]["ports"]["rails"][0]["ports"].append("swp3"),
     "switches[1].ports.rails[1].ports[0]"),
])
def test_program_refuses_a_bad_switch_config_before_any_resource(edit, path, requests):
    with pytest.raises(pulumi.RunError, match=path.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        run_program(_mutate(edit))
    # each run registers its own root Stack before the program starts; nothing else may follow
    assert [r.type for r in requests.values()] == ["pulumi:pulumi:Stack"]


def test_a_switchs_os_change_is_refused_before_any_step():
    """onyx -> cumulus would replace the apply and then run the 16 Onyx undo Commands against a switch
    that now runs Cumulus (each fails; Onyx's rollback file is never removed): refused by the guard,
    naming the way through (remove the switch in one `up`, add it back with the new OS in the next)."""
    from tools.diff import refusals

    base_config = builders.lab_stack()
    changed = copy.deepcopy(base_config)
    sw = changed["gpu-lab:switches"][0]
    sw["os"], sw["ports"] = "cumulus", {"hosts": ["swp1", "swp2", "swp3", "swp4"]}
    base = run_program(base_config)
    (refused,) = refusals(base, run_program(changed))
    assert refused.startswith(f"lab-identity: switches: {sw['name']}: os 'onyx' -> 'cumulus': ")
    assert "remove the switch from gpu-lab:switches in one `pulumi up`" in refused
    with pytest.raises(Exception, match="os 'onyx' -> 'cumulus'"):
        run_program(changed, deployed=base)  # --target cannot get around it either
    # removing it, then adding it back with the new OS, is two edits the guard lets through
    removed = copy.deepcopy(base_config)
    removed["gpu-lab:switches"] = []
    assert refusals(base, run_program(removed)) == []
