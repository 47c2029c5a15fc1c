"""Day 2 on a running switch: sequences of configurations through the program, the engine and the switch.

Each `up` registers the real SpectrumSwitch component under mocks (switch_stack.py), plans it with
pulumi-command's and the engine's rules (switch_sim.Engine) and sends every script the provider
would run to a stand-in switch: the Onyx model in process, or bash with a fake `nv` for Cumulus.
The stand-in refuses a wrong password, so a login with stale credentials fails like the real one.

What must hold on every change: no undo of a setting that stays ever runs; an item that leaves
the configuration is undone exactly; the switch ends where a fresh lab with the new configuration
would be; a password rotation applies nothing; a failed apply leaves the previous configuration in
force (Cumulus) or saved with its one-command restore (Onyx); the full revert runs only when the
switch leaves the stack, and never on an upgrade from the one-Command design.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import pytest
from switch_sim import CumulusBox, CumulusSwitch, Engine, OnyxSwitch, Outcome, Registration, ScriptFailed, Stored
from switch_stack import planned, register

from components.switch.dialects import ONYX_ROLLBACK_FILE
from components.switch.files import render_apply, render_login_check, render_undo, undo_items

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# The two switches of the upgrade fixtures: what the one-Command design rendered for them is kept in
# fixtures/one-command-<switch>.<os>.conf|.revert.
ONYX = {"name": "sw01", "os": "onyx", "managementAddress": "127.0.0.1",
        "ports": {"hosts": ["1/1", "1/2", "1/3", "1/4"]}}
CUMULUS = {"name": "cl01", "os": "cumulus", "user": "cumulus", "managementAddress": "127.0.0.1",
           "ports": {"hosts": ["swp10"], "rails": [{"subnet": "10.10.11.0/24", "ports": ["swp1", "swp2"]},
                                                   {"subnet": "10.10.12.0/24", "ports": ["swp3", "swp4"]}]}}
ONYX_BASELINE = {"vlan 10", "interface ethernet 1/20 mtu 9000", "interface ethernet 1/21 switchport access vlan 10"}
CUMULUS_BASELINE = {("system", "hostname", "leaf01"), ("interface", "swp20", "link", "mtu", "9000")}


class StandIn:
    """The switch the engine talks to: its OS model and its current password."""

    def __init__(self, os: str, directory: Path, password: str) -> None:
        self.os = os
        self.password = password
        self.sessions: list[str] = []
        if os == "onyx":
            self.onyx = OnyxSwitch(running=set(ONYX_BASELINE), saved=set(ONYX_BASELINE))
        else:
            self.box = CumulusBox(directory, CumulusSwitch(applied=set(CUMULUS_BASELINE)))

    def execute(self, script: str, connection: dict[str, Any]) -> None:
        if connection["password"] != self.password:
            raise ScriptFailed("ssh: handshake failed: unable to authenticate")
        self.sessions.append(script)
        if self.os == "onyx":
            try:
                self.onyx.run(script)
            except ValueError as err:
                raise ScriptFailed(str(err)) from err
        else:
            done = self.box.run(script)
            if done.returncode != 0:
                raise ScriptFailed(done.stderr)

    def config(self) -> Any:
        """What the switch holds: Onyx running and saved configuration and its files; NVUE revisions."""
        if self.os == "onyx":
            snap = self.onyx.snapshot()
            return {"running": snap["running"], "saved": snap["saved"], "files": sorted(snap["files"])}
        state = self.box.state

        def paths(value):
            return None if value is None else sorted(value)
        return {"applied": sorted(state.applied), "pending": paths(state.pending),
                "confirm": paths(state.confirm_rollback)}

    def fail_on(self, text: str) -> None:
        if self.os == "onyx":
            self.onyx.fail_on = text
        else:
            self.box.fail_on = text


class Lab:
    """One switch under one stack: `up(raw)` plans and runs a configuration."""

    def __init__(self, raw: dict, directory: Path, password: str = "pw-1") -> None:
        self.raw = copy.deepcopy(raw)
        self.password = password
        self.switch = StandIn(raw["os"], directory, password)
        self.engine = Engine(self.switch.execute)
        self.dir = directory

    def registrations(self, raw: dict, password: str | None = None) -> list[Registration]:
        sw = planned(raw)
        return register([sw], {sw.name: password or self.password}).registrations(sw.name)

    def up(self, raw: dict | None = None, password: str | None = None) -> Outcome:
        if raw is not None:
            self.raw = copy.deepcopy(raw)
        if password is not None:
            self.password = password
        regs = self.registrations(self.raw)
        outcome = self.engine.up(regs)
        assert_no_kept_setting_undone(outcome, regs)
        return outcome

    def destroy(self) -> Outcome:
        return self.engine.up([])


def fresh(raw: dict, directory: Path) -> Any:
    """What a new lab with this configuration holds after its first `up`."""
    lab = Lab(raw, directory)
    assert lab.up().error is None
    return lab.switch.config()


def assert_no_kept_setting_undone(outcome: Outcome, registrations: list[Registration]) -> None:
    kept = {r.name for r in registrations}
    undone = [e.resource for e in outcome.executed if e.operation == "delete"]
    assert not set(undone) & kept, f"undo of a setting that stays: {set(undone) & kept}"


def edit(raw: dict, change) -> dict:
    changed = copy.deepcopy(raw)
    change(changed)
    return changed


def names(raw: dict) -> dict[str, str]:
    """Command name -> undo script of each item of a configuration."""
    sw = planned(raw)
    return {(f"{sw.name}-config" if i == 0 else f"{sw.name}-undo-{item.key}"): render_undo(sw, item)
            for i, item in enumerate(undo_items(sw))}


RAWS = {"onyx": ONYX, "cumulus": CUMULUS}


@pytest.fixture(params=["onyx", "cumulus"])
def lab(request, tmp_path) -> Lab:
    lab = Lab(RAWS[request.param], tmp_path / "lab")
    outcome = lab.up()
    assert outcome.error is None
    return lab


def test_day_one_applies_once_and_the_undo_holders_run_nothing(lab, tmp_path):
    sw = planned(lab.raw)
    regs = lab.registrations(lab.raw)
    assert [r.name for r in regs][:2] == [f"{sw.name}-apply", f"{sw.name}-config"]
    assert lab.switch.sessions == [render_apply(sw)]
    assert lab.engine.state[f"{sw.name}-apply"].inputs["create"] == render_apply(sw)
    # a second `up` with no edit: nothing to do
    again = lab.engine.up(regs)
    assert again.changed() == {} and again.executed == []
    # the apply run twice by hand changes nothing either
    before = lab.switch.config()
    lab.switch.execute(render_apply(sw), {"password": lab.password})
    assert lab.switch.config() == before


def test_ecn_change_replaces_only_the_apply(lab, tmp_path):
    changed = edit(lab.raw, lambda r: r.setdefault("roce", {}).update(ecnMinKb=120, ecnMaxKb=1400))
    sessions = len(lab.switch.sessions)
    outcome = lab.up(changed)
    name = changed["name"]
    assert outcome.error is None and outcome.changed() == {f"{name}-apply": "replace"}
    assert [(e.resource, e.operation) for e in outcome.executed] == [(f"{name}-apply", "create")]
    assert lab.switch.sessions[sessions:] == [render_apply(planned(changed))]
    assert lab.switch.config() == fresh(changed, tmp_path / "fresh")


def test_pfc_priority_change_undoes_exactly_the_old_priority(lab, tmp_path):
    before = names(lab.raw)
    changed = edit(lab.raw, lambda r: r.setdefault("roce", {}).update(pfcPriority=4, trafficClass=4))
    after = names(changed)
    outcome = lab.up(changed)
    assert outcome.error is None
    gone = set(before) - set(after)
    assert gone and all("3" in n for n in gone)  # pfc-priority-3, ecn-tc3, egress-priority-3
    assert {n for n, step in outcome.steps.items() if step == "delete"} == gone
    assert {n for n, step in outcome.steps.items() if step == "create"} == set(after) - set(before)
    assert outcome.executed[0].resource == f"{changed['name']}-apply"  # the new apply first, then the undos
    undone = [(e.resource, e.script) for e in outcome.executed if e.operation == "delete"]
    assert sorted(undone) == sorted((n, before[n]) for n in gone)
    assert lab.switch.config() == fresh(changed, tmp_path / "fresh")


def test_port_added_then_removed_touches_that_port_only(lab, tmp_path):
    is_onyx = lab.raw["os"] == "onyx"
    added = edit(lab.raw, lambda r: r["ports"].setdefault("rails", []).append(
        {"subnet": "10.10.13.0/24", "ports": ["1/7"] if is_onyx else ["swp7"]}))
    new = set(names(added)) - set(names(lab.raw))
    outcome = lab.up(added)
    assert outcome.error is None
    assert {n for n, s in outcome.steps.items() if s == "create"} == new
    vlan = 111 if is_onyx else 113  # the Onyx switch's first rail
    assert all("-port-1-7-" in n or "-port-swp7-" in n or n.endswith(f"-undo-vlan-{vlan}") for n in new)
    assert [e.operation for e in outcome.executed] == ["create"]  # the apply; the undo holders run nothing
    assert lab.switch.config() == fresh(added, tmp_path / "fresh-added")

    removed = edit(added, lambda r: r["ports"]["hosts"].remove("1/2" if is_onyx else "swp10"))
    outcome = lab.up(removed)
    assert outcome.error is None
    port = "1-2" if is_onyx else "swp10"
    gone = {n for n, s in outcome.steps.items() if s == "delete"}
    assert gone == {n for n in names(added) if f"-port-{port}-" in n}
    # the port's items are neighbours in the chain: deleted newest first, one at a time
    assert [e.resource for e in outcome.executed if e.operation == "delete"] == \
        [n for n in reversed(list(names(added))) if n in gone]
    assert all(len(batch) == 1 for batch in outcome.delete_batches)
    assert lab.switch.config() == fresh(removed, tmp_path / "fresh-removed")


def test_password_rotation_applies_nothing(lab):
    before = lab.switch.config()
    lab.switch.password = "pw-2"  # rotated on the switch first
    outcome = lab.up(password="pw-2")
    name = lab.raw["name"]
    assert outcome.error is None
    assert set(outcome.steps.values()) == {"update"}
    sw = planned(lab.raw)
    assert [(e.resource, e.operation, e.script) for e in outcome.executed] == \
        [(f"{name}-apply", "update", render_login_check(sw))]
    assert lab.switch.config() == before
    # every Command now holds the new password, so a later removal logs in
    assert {s.inputs["connection"]["password"] for s in lab.engine.state.values()} == {"pw-2"}


def test_lossless_to_lossy_undoes_pfc_only(lab, tmp_path):
    changed = edit(lab.raw, lambda r: r.setdefault("roce", {}).update(pfcMode="lossy"))
    outcome = lab.up(changed)
    assert outcome.error is None
    gone = {n for n, s in outcome.steps.items() if s == "delete"}
    assert gone and all(n.endswith("-pfc") or "-pfc-priority-" in n for n in gone)
    assert lab.switch.config() == fresh(changed, tmp_path / "fresh")


def test_failed_cumulus_apply_keeps_the_previous_configuration(tmp_path):
    lab = Lab(CUMULUS, tmp_path)
    assert lab.up().error is None
    before = lab.switch.config()
    changed = edit(CUMULUS, lambda r: (r.setdefault("roce", {}).update(mtu=9100), r["ports"]["hosts"].remove("swp10")))
    lab.switch.fail_on("link mtu 9100")
    outcome = lab.up(changed)
    assert outcome.error and "gpu-lab: switch cl01: RoCE configuration failed" in outcome.error
    assert "pending NVUE changes dropped" in outcome.error
    assert lab.switch.config() == before  # nothing applied, nothing pending
    assert not [e for e in outcome.executed if e.operation == "delete"]  # swp10's undo waits for a good apply
    lab.switch.fail_on("")
    outcome = lab.up(changed)
    assert outcome.error is None and outcome.steps["cl01-undo-port-swp10-mtu"] == "delete"
    assert lab.switch.config() == fresh(changed, tmp_path / "fresh")


def test_cumulus_change_that_cuts_the_session_off_rolls_back(tmp_path):
    lab = Lab(CUMULUS, tmp_path)
    assert lab.up().error is None
    before = lab.switch.config()
    lab.switch.fail_on("show system")  # the session no longer gets an answer after the apply
    outcome = lab.up(edit(CUMULUS, lambda r: r.setdefault("roce", {}).update(mtu=9100)))
    assert outcome.error
    assert lab.switch.box.state.confirm_rollback is not None  # applied, waiting for a confirmation
    lab.switch.box.close_confirm_window()
    assert lab.switch.config() == before


def test_failed_onyx_apply_keeps_the_saved_configuration_and_the_restore_file(tmp_path):
    lab = Lab(ONYX, tmp_path)
    assert lab.up().error is None
    before = lab.switch.onyx.snapshot()
    changed = edit(ONYX, lambda r: (r.setdefault("roce", {}).update(mtu=9100, ecnMaxKb=1400),
                                    r["ports"]["hosts"].remove("1/4")))
    lab.switch.fail_on("congestion-control")
    outcome = lab.up(changed)
    assert outcome.error and not [e for e in outcome.executed if e.operation == "delete"]
    now = lab.switch.onyx
    assert now.saved == set(before["saved"]) and now.running != set(before["running"])
    assert now.files[ONYX_ROLLBACK_FILE] == set(before["running"])
    # the documented recovery, one command
    lab.switch.fail_on("")
    lab.switch.execute(f"enable\nconfigure terminal\nconfiguration switch-to {ONYX_ROLLBACK_FILE}\n",
                       {"password": lab.password})
    assert now.running == set(before["running"])


def test_switch_leaving_the_stack_undoes_everything_newest_first_one_at_a_time(lab):
    order = list(lab.engine.state)
    outcome = lab.destroy()
    assert outcome.error is None
    assert all(len(batch) == 1 for batch in outcome.delete_batches)
    assert order[0].endswith("-apply")  # deleted last, and it has nothing to run
    assert [batch[0] for batch in outcome.delete_batches] == list(reversed(order[1:]))
    assert [e.resource for e in outcome.executed] == list(reversed(order[1:]))
    if lab.switch.os == "onyx":
        assert lab.switch.config() == {"running": sorted(ONYX_BASELINE), "saved": sorted(ONYX_BASELINE), "files": []}
    else:
        assert lab.switch.config() == {"applied": sorted(CUMULUS_BASELINE), "pending": None, "confirm": None}


# ---------------------------------------------------------------- upgrade from the one-Command design


def one_command_state(lab: Lab) -> tuple[str, str]:
    """Put the lab where the one-Command design left it: its apply run, its `<switch>-config` stored."""
    sw = planned(lab.raw)
    apply = (FIXTURES / f"one-command-{sw.name}.{sw.os}.conf").read_text()
    revert = (FIXTURES / f"one-command-{sw.name}.{sw.os}.revert").read_text()
    lab.switch.execute(apply, {"password": lab.password})
    connection = next(r for r in lab.registrations(lab.raw) if r.name == f"{sw.name}-config").inputs["connection"]
    lab.engine.state = {f"{sw.name}-config": Stored({
        "connection": connection, "create": apply, "delete": revert,
        "triggers": [hashlib.sha256((apply + "\0" + revert).encode()).hexdigest()],
        "logging": "none", "addPreviousOutputInEnv": False,
    }, ())}
    return apply, revert


@pytest.mark.parametrize("raw", [ONYX, CUMULUS], ids=["onyx", "cumulus"])
def test_upgrade_from_one_command_never_runs_the_full_revert(raw, tmp_path):
    lab = Lab(raw, tmp_path)
    old_apply, old_revert = one_command_state(lab)
    old_triggers = lab.engine.state[f"{raw['name']}-config"].inputs["triggers"]
    before = lab.switch.config()
    outcome = lab.up(raw)
    name = raw["name"]
    assert outcome.error is None
    assert outcome.steps[f"{name}-config"] == "update" and outcome.steps[f"{name}-apply"] == "create"
    assert [(e.resource, e.operation) for e in outcome.executed] == [(f"{name}-apply", "create")]
    assert old_revert not in [e.script for e in outcome.executed]
    stored = lab.engine.state[f"{name}-config"].inputs
    sw = planned(raw)
    assert stored["delete"] == render_undo(sw, undo_items(sw)[0]) and "create" not in stored
    assert stored["triggers"] == old_triggers  # kept by ignore_changes, never compared again
    if sw.os == "cumulus":
        assert lab.switch.config() == before  # NVUE saw no difference: nothing applied
    else:
        assert lab.switch.config()["running"] == before["running"]
    assert lab.up(raw).changed() == {}
    # leaving the stack later runs what the state holds: the narrow undos, never the old full revert
    assert [s.inputs.get("delete") for s in lab.engine.state.values()].count(old_revert) == 0
    assert old_apply not in [s.inputs.get("create") for s in lab.engine.state.values()]


ONYX_RAILS = {**ONYX, "ports": {"hosts": ["1/1"], "rails": [{"subnet": "10.10.11.0/24", "ports": ["1/5", "1/6"]},
                                                         {"subnet": "10.10.12.0/24", "ports": ["1/7"]}]}}


@pytest.mark.parametrize("raw", [ONYX_RAILS, CUMULUS], ids=["onyx", "cumulus"])
def test_port_moves_rail_and_a_rail_changes_vlan(raw, tmp_path):
    lab = Lab(raw, tmp_path / "lab")
    assert lab.up().error is None
    moved = "1/6" if raw["os"] == "onyx" else "swp2"

    def change(r):
        r["ports"]["rails"][0]["ports"].remove(moved)
        r["ports"]["rails"][1]["ports"].append(moved)
        r["ports"]["rails"][1]["vlan"] = 122  # was 112
    changed = edit(raw, change)
    outcome = lab.up(changed)
    assert outcome.error is None
    name = raw["name"]
    # the moved port keeps its items; only the rail's old VLAN goes, after the apply moved its ports
    assert {n for n, s in outcome.steps.items() if s == "delete"} == {f"{name}-undo-vlan-112"}
    assert {n for n, s in outcome.steps.items() if s == "create"} == {f"{name}-undo-vlan-122"}
    assert [(e.resource, e.operation) for e in outcome.executed] == \
        [(f"{name}-apply", "create"), (f"{name}-undo-vlan-112", "delete")]
    assert lab.switch.config() == fresh(changed, tmp_path / "fresh")
