"""tools.upgrade, the upgrade gate's machinery, on synthetic before/after runs of the tests' lab stack
(the gate itself, on the shipped stacks and their committed baselines, is in tests/test_real_stacks.py)."""

from __future__ import annotations

import copy
import hashlib
import re

import builders
import pytest

from tools import upgrade
from tools.diff import SECRET, Planned, create_urn, snapshot
from tools.mockrun import run_program
from tools.stackfile import offline_secrets

CHANGELOG = """# Changelog

## 0.3.0 - Unreleased

What runs again on a live lab: the switch configuration (ECN thresholds).

### Declared changes

| stack | resource | change | why |
|---|---|---|---|
{rows}

## 0.2.0 - 2026-12-01

### Declared changes

| stack | resource | change | why |
|---|---|---|---|
| * | * | replace | an older entry declares nothing for the next version |
"""


def planned(config) -> list[Planned]:
    return upgrade.shrunk(snapshot(run_program(config, stack="test", secrets=offline_secrets(config))))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    directory = tmp_path_factory.mktemp("baselines")
    config = builders.lab_stack()
    path = upgrade.write_baseline("test", planned(config), "0.2.0", directory)
    return config, directory, path


def test_a_baseline_keeps_structure_and_short_values_and_hashes_the_rest():
    long_text = "#!/bin/sh\n" + "echo apply\n" * 20
    assert upgrade.shrink({"create": long_text, "name": "w01", "n": 4, "password": {SECRET: "ab"}}) == {
        "create": "sha256:" + hashlib.sha256(long_text.encode()).hexdigest(), "name": "w01", "n": 4,
        "password": {SECRET: "ab"}}


def test_recorded_baseline_reads_back_and_the_same_plan_finds_nothing(recorded):
    config, directory, path = recorded
    first = path.read_bytes()
    assert upgrade.findings("test", upgrade.read_baseline("test", directory), planned(config)) == []
    upgrade.write_baseline("test", planned(config), "0.2.0", directory)
    assert path.read_bytes() == first  # byte-identical
    assert "#!/" not in first.decode()  # scripts are hashed, not copied


def test_a_script_change_is_found_and_passes_once_declared(recorded):
    config, directory, _ = recorded
    edited = builders.with_value(config, "gpu-lab:switches.0.roce.ecnMinKb", 160)
    found = upgrade.findings("test", upgrade.read_baseline("test", directory), planned(edited))
    assert sorted((f.name, f.change) for f in found) == [
        (f"{builders.SWITCH}-apply", "replace"), (f"{builders.SWITCH}-apply", "rerun"),
        (f"{builders.SWITCH}-host-key", "replace"), (f"{builders.SWITCH}-host-key", "rerun")]
    assert upgrade.undeclared(found, upgrade.declarations(CHANGELOG.format(rows=""), "0.3.0", ("test",))) == found
    rows = (f"| test | {builders.SWITCH}-apply | replace | new ECN thresholds |\n| * | sw0*-apply | rerun | same |\n"
            f"| test | {builders.SWITCH}-host-key | replace | checked again first |\n| * | sw0*-host-key | rerun | same |")
    declared = upgrade.declarations(CHANGELOG.format(rows=rows), "0.3.0", ("test",))
    assert upgrade.undeclared(found, declared) == []
    # the entry of another version does not count
    with pytest.raises(upgrade.ChangelogError, match="no entry `## 0.4.0"):
        upgrade.declarations(CHANGELOG.format(rows=rows), "0.4.0", ("test",))


def test_a_sizing_change_is_a_reboot(recorded):
    config, directory, _ = recorded
    edited = copy.deepcopy(config)
    edited["gpu-lab:vsphere"]["workers"]["sizing"]["memoryGb"] = 32  # more memory without hot add: a power-cycle
    found = upgrade.findings("test", upgrade.read_baseline("test", directory), planned(edited))
    # made by each worker's roll (components/dynamic/roll.py), one after the other, not by its VM
    assert {(f.name, f.change) for f in found} >= {(f"vms-{w}-roll", "reboot") for w in builders.WORKERS}
    assert not {(f.name, f.change) for f in found} & {(f"vms-{w}", "reboot") for w in builders.WORKERS}


def res(name: str, parent: str = "", parent_type: str = "gpu-lab:switch:SpectrumSwitch", **options) -> Planned:
    parent_urn = create_urn(parent, parent_type, "", "gpu-lab", "test") if parent else ""
    return Planned(urn=create_urn(name, "command:remote:Command", parent_urn, "gpu-lab", "test"),
                   type="command:remote:Command", name=name, parent=parent_urn, custom=True, provider="", id="x",
                   inputs={"create": "x"}, outputs={"create": "x"}, **options)


def test_a_urn_moved_without_an_alias_is_found_with_one_it_is_not():
    old = res("sw-config", parent="sw")
    moved = res("sw-config", parent="sw", parent_type="gpu-lab:switch:Leaf")
    assert [(f.name, f.change) for f in upgrade.findings("test", [old], [moved])] == [("sw-config", "moved")]
    aliased = res("sw-config", parent="sw", parent_type="gpu-lab:switch:Leaf", aliases=[{"urn": old.urn}])
    assert upgrade.findings("test", [old], [aliased]) == []


@pytest.mark.parametrize(("row", "message"), [
    ("| test | x | rebuild | y |", "change 'rebuild': one of moved, delete, replace, rerun, reboot"),
    ("| prod | x | rerun | y |", "stack 'prod': one of test or *"),
    ("| test | x | rerun |", "a row is | stack | resource | change | why |"),
    ("| test | x | rerun |  |", "resource and why must not be empty"),
])
def test_a_malformed_declaration_is_an_error(row, message):
    with pytest.raises(upgrade.ChangelogError, match=re.escape(message)):
        upgrade.declarations(CHANGELOG.format(rows=row), "0.3.0", ("test",))


def test_the_repositorys_changelog_has_an_entry_for_the_current_version():
    assert isinstance(upgrade.declarations(upgrade.CHANGELOG.read_text(), upgrade.version()), list)


def test_the_gate_names_dependency_changes_as_state_only():
    # a dependency change alone runs no step (tools.diff's `same` rule), so it is no finding to declare
    from tools.diff import Planned

    def job(dependencies):
        return Planned(urn="urn:pulumi:test::gpu-lab::kubernetes:batch/v1:Job::job", type="kubernetes:batch/v1:Job",
                       name="job", parent="", custom=True, provider="", id="job", inputs={"spec": {}},
                       outputs={"spec": {}}, dependencies=dependencies)

    old, new = job(["urn:node", "urn:provider"]), job(["urn:provider"])
    assert upgrade.findings("test", [old], [new]) == []
    assert upgrade.state_only([old], [new]) == ["job"]
    assert upgrade.state_only([job(None)], [new]) == []  # a baseline that kept no dependencies
