"""End to end over SSH: the rendered scripts sent to a stand-in switch behind a real OpenSSH server.

The test starts Debian's sshd on a 127.0.0.1 port with a generated host key, key-only login for
the current user and a ForceCommand that plays the switch: whatever command text the client
sends (pulumi-command sends the Command's `create`/`delete` text the same way: one exec request,
no terminal) reaches the switch's shell in SSH_ORIGINAL_COMMAND.

- onyx: a tiny CLI reads the text line by line, records each line, and feeds it to the Onyx
  model (tests/switch_sim.py), which refuses unknown commands; state persists between
  sessions in a JSON file.
- cumulus: bash runs the script, as on Cumulus Linux, with a fake `nv` first on PATH that records
  its arguments and drives the NVUE model.

The server is tests/sshd_server.py's (openssh-server and openssh-client:
scripts/install-switch-test-tools.sh). Password login would need a system account with a known
password; key login exercises the same transport.
"""

from __future__ import annotations

import copy
import getpass
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import sshd_server
from sshd_server import running_sshd
from switch_sim import CumulusBox, CumulusSwitch, OnyxSwitch, nvue_args
from switch_stack import planned

from components.config import load_lab
from components.switch.dialects import ONYX_ROLLBACK_FILE
from components.switch.files import render_apply, render_login_check, render_undo, undo_items
from components.switch.plan import SwitchPlan

SIM_DIR = Path(__file__).resolve().parent.parent  # tests/, where switch_sim.py is


@pytest.fixture(scope="module", autouse=True)
def ssh_tools() -> dict[str, str]:
    return sshd_server.ssh_tools()

CUMULUS_RAW = {
    "name": "cl-rails", "os": "cumulus", "managementAddress": "10.0.0.3", "user": "cumulus",
    "ports": {"hosts": ["swp10"], "rails": [{"subnet": "10.10.11.0/24", "ports": ["swp1", "swp2"]}]},
}
CUMULUS = planned(CUMULUS_RAW)
# Every undo is its own session: a one-port switch keeps their number small.
ONYX_ONE_PORT = planned({"name": "sw-one", "os": "onyx", "managementAddress": "10.0.0.2", "ports": {"hosts": ["1/1"]}})

# The stand-in switch's programs. {python}, {dir} and {sim} are filled in at start-up; sshd
# starts them with a clean environment, so the shell gives them PYTHONPATH (switch_sim.py). The
# Cumulus scripts' lock lives in the stand-in's own directory instead of the switch's /run/lock.
SWITCH_SHELL = """\
#!/bin/bash
# ForceCommand: the client's command text is in SSH_ORIGINAL_COMMAND.
export PYTHONPATH={sim}
case "$(cat {dir}/mode)" in
    onyx) exec {python} {dir}/onyx-cli ;;
    cumulus) PATH="{dir}/cumulus/bin:$PATH" exec /bin/bash -c "${{SSH_ORIGINAL_COMMAND//\\/run\\/lock\\//{dir}/cumulus/}}" ;;
esac
"""
ONYX_CLI = """\
import json, os, sys
from switch_sim import OnyxSwitch
state = json.load(open({dir!r} + "/onyx.json"))
box = OnyxSwitch(running=set(state["running"]), saved=set(state["saved"]), active=state["active"],
                 files={{k: set(v) for k, v in state["files"].items()}},
                 fail_on=open({dir!r} + "/fail_on").read().strip())
status = 0
with open({dir!r} + "/received.log", "a") as log:
    for line in os.environ.get("SSH_ORIGINAL_COMMAND", "").splitlines():
        log.write(line + "\\n")
        try:
            box.command(line.strip())
        except ValueError as err:
            print("% " + str(err), file=sys.stderr)
            status = 1
            break
json.dump(box.snapshot(), open({dir!r} + "/onyx.json", "w"))
sys.exit(status)
"""


@dataclass
class StandInSwitch:
    dir: Path
    port: int
    user: str
    client_key: Path
    known_hosts: Path
    nvue: CumulusBox
    """The Cumulus mode's NVUE (its fake `nv` is in dir/cumulus/bin)."""

    def reset(self, mode: str, fail_on: str = "") -> None:
        self.mode = mode
        (self.dir / "mode").write_text(mode)
        (self.dir / "fail_on").write_text(fail_on)
        (self.dir / "onyx.json").write_text(json.dumps(OnyxSwitch().snapshot()))
        self.nvue.reset(CumulusSwitch(), fail_on)
        self.clear_received()

    def fail_on(self, text: str) -> None:
        (self.dir / "fail_on").write_text(text)
        self.nvue.fail_on = text

    def clear_received(self) -> None:
        (self.dir / "received.log").write_text("")
        self.nvue.log.clear()

    def send(self, text: str) -> subprocess.CompletedProcess:
        """Run `text` as one SSH exec request, as pulumi-command does with create/delete."""
        return subprocess.run(
            ["ssh", "-T", "-F", "/dev/null", "-p", str(self.port), "-i", str(self.client_key),
             "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
             "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
             "-o", "ConnectTimeout=5", "-o", "LogLevel=ERROR",
             # one connection for the whole module, a new session (exec request) per script
             "-o", "ControlMaster=auto", "-o", f"ControlPath={self.dir}/control", "-o", "ControlPersist=120",
             f"{self.user}@127.0.0.1", text],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
        )

    def sshd_log(self) -> str:
        return (self.dir / "sshd.log").read_text()

    def received(self) -> list[str]:
        """Onyx: the CLI lines; Cumulus: the `nv` commands."""
        if self.mode == "cumulus":
            return self.nvue.received()
        return (self.dir / "received.log").read_text().splitlines()

    def onyx_state(self) -> dict:
        return json.loads((self.dir / "onyx.json").read_text())

    def nvue_state(self) -> CumulusSwitch:
        return copy.deepcopy(self.nvue.state)


@pytest.fixture(scope="module")
def switch_box(tmp_path_factory, ssh_tools):
    d = tmp_path_factory.mktemp("switch-sshd")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "client_key", "-f", str(d / "client_key")],
                   check=True)
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    fill = {"python": sys.executable, "dir": str(d), "sim": str(SIM_DIR)}
    nvue = CumulusBox(d / "cumulus")
    for path, text in ((d / "switch-shell", SWITCH_SHELL.format(**fill)),
                       (d / "onyx-cli", ONYX_CLI.format(**fill))):
        path.write_text(text)
        path.chmod(0o755)
    user = getpass.getuser()
    with running_sshd(d, ssh_tools["sshd"], f"""\
        AuthorizedKeysFile {d}/authorized_keys
        AuthenticationMethods publickey
        PubkeyAuthentication yes
        PasswordAuthentication no
        KbdInteractiveAuthentication no
        PermitRootLogin prohibit-password
        AllowUsers {user}
        AllowTcpForwarding no
        X11Forwarding no
        ForceCommand {d}/switch-shell
        """) as sshd:
        (d / "known_hosts").write_text(f"[127.0.0.1]:{sshd.port} {sshd.public_key()}\n")
        try:
            yield StandInSwitch(d, sshd.port, user, d / "client_key", d / "known_hosts", nvue)
        finally:
            if (d / "control").exists():  # the shared client connection goes with the server
                subprocess.run(["ssh", "-o", f"ControlPath={d}/control", "-O", "exit", "127.0.0.1"],
                               capture_output=True, timeout=10)


def _lab_switch(lab_sections) -> SwitchPlan:
    return load_lab(lab_sections).plan.switches[0]


def _ok(switch_box, done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, done.stdout + done.stderr + switch_box.sshd_log()


def test_onyx_cli_receives_exactly_the_rendered_lines(switch_box, lab_sections):
    sw = _lab_switch(lab_sections)
    switch_box.reset("onyx")
    apply = render_apply(sw)
    _ok(switch_box, switch_box.send(apply))
    assert switch_box.received() == apply.splitlines()
    state = switch_box.onyx_state()
    assert "interface ethernet 1/4 traffic-class 3 congestion-control ecn minimum-absolute 150 maximum-absolute 1500" \
        in state["running"]
    assert state["saved"] == state["running"] and state["files"] == {ONYX_ROLLBACK_FILE: []}


def test_onyx_login_check_changes_nothing_and_the_undos_clear_everything(switch_box):
    sw = ONYX_ONE_PORT
    switch_box.reset("onyx")
    _ok(switch_box, switch_box.send(render_apply(sw)))
    state = switch_box.onyx_state()
    _ok(switch_box, switch_box.send(render_login_check(sw)))
    assert switch_box.onyx_state() == state

    for item in reversed(undo_items(sw)):  # as the engine deletes them when the switch leaves the stack
        switch_box.clear_received()
        undo = render_undo(sw, item)
        _ok(switch_box, switch_box.send(undo))
        assert switch_box.received() == undo.splitlines()
    assert switch_box.onyx_state() == OnyxSwitch().snapshot()


def test_onyx_failed_line_stops_the_session_and_the_saved_file_restores(switch_box, lab_sections):
    sw = _lab_switch(lab_sections)
    switch_box.reset("onyx")
    _ok(switch_box, switch_box.send(render_apply(sw)))
    before = switch_box.onyx_state()
    raw = load_lab(lab_sections).switches[0].model_dump(by_alias=True)
    raw["roce"].update(mtu=9100, ecnMaxKb=1400)
    switch_box.fail_on("congestion-control")
    done = switch_box.send(render_apply(planned(raw)))
    assert done.returncode != 0 and "invalid value" in done.stderr
    after = switch_box.onyx_state()
    assert after["saved"] == before["saved"] and after["running"] != before["running"]
    switch_box.fail_on("")
    _ok(switch_box, switch_box.send(f"enable\nconfigure terminal\nconfiguration switch-to {ONYX_ROLLBACK_FILE}\n"))
    assert switch_box.onyx_state()["running"] == before["running"]


def _nv_lines(script: str) -> list[str]:
    return ["nv " + " ".join(args) for args in map(nvue_args, script.splitlines()) if args is not None]


COMMIT = ["nv config diff -o commands", "nv config apply --confirm 10m -y", "nv show system", "nv config apply --confirm-yes"]


def test_cumulus_shell_runs_the_apply_once_and_the_undos_clear_it(switch_box):
    switch_box.reset("cumulus")
    apply = render_apply(CUMULUS)
    _ok(switch_box, switch_box.send(apply))
    staged = [line for line in _nv_lines(apply) if line.startswith("nv set ")]
    assert switch_box.received() == ["nv config detach", *staged, *COMMIT]
    state = switch_box.nvue_state()
    assert state.pending is None and state.confirm_rollback is None
    assert ("interface", "swp2", "bridge", "domain", "br_default", "access", "111") in state.applied

    switch_box.clear_received()
    done = switch_box.send(apply)  # idempotent: NVUE sees no difference, nothing is applied
    _ok(switch_box, done)
    assert "gpu-lab: switch cl-rails: already configured, nothing applied" in done.stdout
    assert switch_box.received()[-2:] == ["nv config diff -o commands", "nv config detach"]
    assert switch_box.nvue_state().applied == state.applied

    switch_box.clear_received()
    _ok(switch_box, switch_box.send(render_login_check(CUMULUS)))
    assert switch_box.received() == ["nv show system"]

    for item in reversed(undo_items(CUMULUS)):
        switch_box.clear_received()
        undo = render_undo(CUMULUS, item)
        _ok(switch_box, switch_box.send(undo))
        assert switch_box.received() == _nv_lines(undo)
        assert switch_box.received()[-1] == "nv config apply -y"
    assert switch_box.nvue_state() == CumulusSwitch()


def test_cumulus_failure_names_the_switch_and_applies_nothing(switch_box):
    switch_box.reset("cumulus", fail_on="link mtu")
    done = switch_box.send(render_apply(CUMULUS))
    assert done.returncode != 0
    assert "gpu-lab: switch cl-rails: RoCE configuration failed" in done.stderr
    assert "link mtu" in done.stderr
    received = switch_box.received()
    assert received[-1] == "nv config detach"
    assert not [line for line in received if line.startswith("nv config apply")]
    assert switch_box.nvue_state() == CumulusSwitch()


def test_cumulus_change_that_loses_the_session_is_never_confirmed_and_rolls_back(switch_box):
    switch_box.reset("cumulus")
    _ok(switch_box, switch_box.send(render_apply(CUMULUS)))
    before = switch_box.nvue_state()
    raw = {**CUMULUS_RAW, "roce": {"mtu": 9100}}
    switch_box.fail_on("show system")  # the check after the apply gets no answer
    switch_box.clear_received()
    done = switch_box.send(render_apply(planned(raw)))
    assert done.returncode != 0
    assert "nv config apply --confirm-yes" not in switch_box.received()
    assert switch_box.nvue_state().confirm_rollback == before.applied
    switch_box.nvue.close_confirm_window()
    assert switch_box.nvue_state() == before
