"""tools.diff on the program itself: the tests' lab stack run twice under mocks with an edit between,
and `make diff`'s command line (python -m tools.diff) with its exit statuses and bad input."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import builders
import pytest

from tools.diff import changes
from tools.mockrun import run_program
from tools.stackfile import offline_secrets

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def before():
    config = builders.lab_stack()
    return config, run_program(config, stack="test", secrets=offline_secrets(config))


def run(config, secrets=None):
    return run_program(config, stack="test", secrets=secrets or offline_secrets(config))


def test_the_same_program_twice_changes_nothing(before):
    config, base = before
    assert changes(base, run(config)) == []


def test_a_secret_changes_its_key_and_is_never_shown(before):
    config, base = before
    secrets = offline_secrets(config)
    secrets["gpu-lab:switchPasswords"] = {builders.SWITCH: "s3cr3t-rotated"}
    result = changes(base, run(config, secrets))
    switch_commands = [e for e in result if e["name"].startswith(f"{builders.SWITCH}-")]
    assert switch_commands and switch_commands == [e for e in result if e["type"].startswith("command:")]
    # every Command of the switch stores the new login; only the apply's read-only login check runs
    assert {e["name"]: e["effects"] for e in switch_commands if e["effects"]} == {f"{builders.SWITCH}-apply": ["rerun"]}
    assert all(e["op"] == "update" and e["keys"] == ["connection"] for e in switch_commands)
    assert "s3cr3t-rotated" not in json.dumps(result)


def test_an_ecn_change_replaces_the_switch_apply_and_undoes_nothing(before):
    config, base = before
    edited = builders.with_value(config, "gpu-lab:switches.0.roce.ecnMinKb", 160)
    by_name = {e["name"]: e for e in changes(base, run(edited))}
    assert by_name[f"{builders.SWITCH}-apply"] == {
        "type": "command:remote:Command", "name": f"{builders.SWITCH}-apply", "op": "replace",
        "keys": ["create", "triggers"], "effects": ["replace", "rerun"]}
    assert by_name[builders.SWITCH]["op"] == "update" and by_name[builders.SWITCH]["effects"] == []
    # the host-key check runs again before the apply; no undo runs
    assert by_name[f"{builders.SWITCH}-host-key"]["op"] == "replace"
    assert set(by_name) == {f"{builders.SWITCH}-apply", f"{builders.SWITCH}-host-key", builders.SWITCH}


def test_another_worker_is_created_and_the_rest_stays(before):
    config, base = before
    edited = copy.deepcopy(config)
    edited["gpu-lab:vsphere"]["workers"]["names"].append("w05")
    result = changes(base, run(edited))
    created = {e["name"] for e in result if e["op"] == "create"}
    assert {"vms-w05", "vms-w05-roll"} <= created
    assert not [e for e in result if e["op"] in ("replace", "delete") and e["name"].startswith("vms-w0")
                and e["name"] != "vms-w05"], result
    # byte-identical for the same pair
    assert json.dumps(result) == json.dumps(changes(base, run(edited)))


# ---------------------------------------------------------------- the command line


def diff_cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.diff", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_bad_input_exits_2_with_a_message(tmp_path):
    done = diff_cli("--base", "no-such-ref-anywhere", "--out", str(tmp_path))
    assert done.returncode == 2 and "BASE: 'no-such-ref-anywhere' is not a commit" in done.stderr
    done = diff_cli("--fail-on", "rerun,explode", "--out", str(tmp_path))
    assert done.returncode == 2 and "FAIL_ON: unknown effect 'explode'; each item is EFFECT or EFFECT:GLOB" \
        in done.stderr and "EFFECT one of rerun, rerun-acceptance, restart, reboot, migrate, network, replace, " \
        "delete, undrained, refused" in done.stderr
    done = diff_cli("--fail-on", "replace:", "--out", str(tmp_path))
    assert done.returncode == 2 and "FAIL_ON: unknown effect 'replace:'" in done.stderr
    broken = builders.with_value(builders.lab_stack(), "gpu-lab:switches.0.roce.mtu", "jumbo")
    path = builders.write_stack_file(tmp_path, broken)
    done = diff_cli("--stack", "test", "--stack-file", str(path), "--out", str(tmp_path))
    assert done.returncode == 2 and "mtu" in done.stderr
    assert not (tmp_path / "diff.json").exists()


def test_a_stack_missing_at_base_is_all_creates_and_fail_on_sees_the_effects(tmp_path):
    path = builders.write_stack_file(tmp_path, builders.lab_stack())
    out = tmp_path / "out"
    done = diff_cli("--stack", "test", "--stack-file", str(path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "the stack 'test' does not exist at HEAD: every resource is a create" in done.stdout
    document = json.loads((out / "diff.json").read_text())
    assert document["baseMissing"] is True and len(document["base"]) == 40
    assert {e["op"] for e in document["changes"]} == {"create"}
    first = (out / "diff.json").read_bytes()
    done = diff_cli("--stack", "test", "--stack-file", str(path), "--out", str(out), "--fail-on", "reboot,rerun")
    assert done.returncode == 1 and "FAIL_ON: rerun would happen" in done.stderr
    assert (out / "diff.json").read_bytes() == first  # deterministic
    done = diff_cli("--stack", "test", "--stack-file", str(path), "--out", str(out), "--fail-on", "replace,delete")
    assert done.returncode == 0
