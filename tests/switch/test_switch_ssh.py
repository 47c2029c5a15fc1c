"""End to end over SSH: the rendered scripts sent to a stand-in switch behind a real OpenSSH server.

The test starts Debian's sshd on a 127.0.0.1 port with a generated host key, key-only login for
the current user and a ForceCommand that plays the switch: whatever command text the client
sends (pulumi-command sends the Command's `create`/`delete` text the same way: one exec request,
no terminal) reaches the switch's shell in SSH_ORIGINAL_COMMAND.

- onyx: a tiny CLI reads the text line by line, records each line, and feeds it to the Onyx
  model (tests/switch/switch_sim.py), which refuses unknown commands; state persists between
  sessions in a JSON file.
- cumulus: bash runs the script, as on Cumulus Linux, with a fake `nv` first on PATH that records
  its arguments and drives the NVUE model.

The server is tests/sshd_server.py's (openssh-server and openssh-client:
scripts/install-switch-test-tools.sh). Password login would need a system account with a known
password; key login exercises the same transport.
"""

from __future__ import annotations

import getpass
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import sshd_server
from sshd_server import running_sshd
from switch_sim import nvue_args

from components.config import load_lab
from components.switch.config import SwitchConfig
from components.switch.files import render_apply, render_revert

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module", autouse=True)
def ssh_tools() -> dict[str, str]:
    return sshd_server.ssh_tools()

CUMULUS = SwitchConfig.model_validate({
    "name": "cl-rails", "os": "cumulus", "managementAddress": "10.0.0.3", "user": "cumulus",
    "ports": {"hosts": ["swp10"], "rails": [{"subnet": "10.10.11.0/24", "ports": ["swp1", "swp2"]},
                                            {"subnet": "10.10.12.0/24", "ports": ["swp3", "swp4"]}]},
})

# The stand-in switch's programs. {python}, {dir} and {sim} are filled in at start-up; sshd
# starts them with a clean environment, so the shell gives them PYTHONPATH (switch_sim.py).
SWITCH_SHELL = """\
#!/bin/bash
# ForceCommand: the client's command text is in SSH_ORIGINAL_COMMAND.
export PYTHONPATH={sim}
case "$(cat {dir}/mode)" in
    onyx) exec {python} {dir}/onyx-cli ;;
    cumulus) PATH="{dir}/bin:$PATH" exec /bin/bash -c "$SSH_ORIGINAL_COMMAND" ;;
esac
"""
ONYX_CLI = """\
import json, os, sys
from switch_sim import OnyxSwitch
state = json.load(open({dir!r} + "/onyx.json"))
box = OnyxSwitch(running=set(state["running"]), saved=set(state["saved"]))
with open({dir!r} + "/received.log", "a") as log:
    for line in os.environ.get("SSH_ORIGINAL_COMMAND", "").splitlines():
        log.write(line + "\\n")
        try:
            box.command(line.strip())
        except ValueError as err:
            print("% " + str(err), file=sys.stderr)
            sys.exit(1)
json.dump({{"running": sorted(box.running), "saved": sorted(box.saved)}}, open({dir!r} + "/onyx.json", "w"))
"""
FAKE_NV = """\
import json, sys
from switch_sim import CumulusSwitch
args = sys.argv[1:]
with open({dir!r} + "/received.log", "a") as log:
    log.write("nv " + " ".join(args) + "\\n")
fail_on = open({dir!r} + "/fail_on").read().strip()
if fail_on and fail_on in " ".join(args):
    print("Error: invalid value", file=sys.stderr)
    sys.exit(1)
state = json.load(open({dir!r} + "/nvue.json"))
box = CumulusSwitch(applied={{tuple(p) for p in state["applied"]}},
                    pending=None if state["pending"] is None else {{tuple(p) for p in state["pending"]}})
box.nv(args)
json.dump({{"applied": sorted(box.applied), "pending": None if box.pending is None else sorted(box.pending)}},
          open({dir!r} + "/nvue.json", "w"))
"""


@dataclass
class StandInSwitch:
    dir: Path
    port: int
    user: str
    client_key: Path
    known_hosts: Path

    def reset(self, mode: str, fail_on: str = "") -> None:
        (self.dir / "mode").write_text(mode)
        (self.dir / "fail_on").write_text(fail_on)
        (self.dir / "received.log").write_text("")
        (self.dir / "onyx.json").write_text(json.dumps({"running": [], "saved": []}))
        (self.dir / "nvue.json").write_text(json.dumps({"applied": [], "pending": None}))

    def send(self, text: str) -> subprocess.CompletedProcess:
        """Run `text` as one SSH exec request, as pulumi-command does with create/delete."""
        return subprocess.run(
            ["ssh", "-T", "-F", "/dev/null", "-p", str(self.port), "-i", str(self.client_key),
             "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
             "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
             "-o", "ConnectTimeout=5", "-o", "LogLevel=ERROR", f"{self.user}@127.0.0.1", text],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
        )

    def sshd_log(self) -> str:
        return (self.dir / "sshd.log").read_text()

    def received(self) -> list[str]:
        return (self.dir / "received.log").read_text().splitlines()

    def onyx_state(self) -> dict:
        return json.loads((self.dir / "onyx.json").read_text())

    def nvue_state(self) -> dict:
        return json.loads((self.dir / "nvue.json").read_text())


@pytest.fixture(scope="module")
def switch_box(tmp_path_factory, ssh_tools):
    d = tmp_path_factory.mktemp("switch-sshd")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "client_key", "-f", str(d / "client_key")],
                   check=True)
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    fill = {"python": sys.executable, "dir": str(d), "sim": str(HERE)}
    (d / "bin").mkdir()
    for path, text in ((d / "switch-shell", SWITCH_SHELL.format(**fill)),
                       (d / "onyx-cli", ONYX_CLI.format(**fill)),
                       (d / "bin" / "nv", f"#!{sys.executable}\n" + FAKE_NV.format(**fill))):
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
        yield StandInSwitch(d, sshd.port, user, d / "client_key", d / "known_hosts")


def _lab_switch(lab_sections) -> SwitchConfig:
    return load_lab(lab_sections).switches[0]


def test_onyx_cli_receives_exactly_the_rendered_lines_and_revert_clears_them(switch_box, lab_sections):
    sw = _lab_switch(lab_sections)
    switch_box.reset("onyx")
    apply = render_apply(sw)
    done = switch_box.send(apply)
    assert done.returncode == 0, done.stderr + switch_box.sshd_log()
    assert switch_box.received() == apply.splitlines()
    state = switch_box.onyx_state()
    assert "interface ethernet 1/4 traffic-class 3 congestion-control ecn minimum-absolute 150 maximum-absolute 1500" \
        in state["running"]
    assert state["saved"] == state["running"]

    (switch_box.dir / "received.log").write_text("")
    revert = render_revert(sw)
    done = switch_box.send(revert)
    assert done.returncode == 0, done.stderr + switch_box.sshd_log()
    assert switch_box.received() == revert.splitlines()
    assert switch_box.onyx_state() == {"running": [], "saved": []}


def test_cumulus_shell_runs_exactly_the_rendered_nv_commands(switch_box):
    switch_box.reset("cumulus")
    apply = render_apply(CUMULUS)
    done = switch_box.send(apply)
    assert done.returncode == 0, done.stderr + switch_box.sshd_log()
    expected = ["nv " + " ".join(args) for args in map(nvue_args, apply.splitlines()) if args is not None]
    assert switch_box.received() == expected
    state = switch_box.nvue_state()
    assert state["pending"] is None
    assert ["interface", "swp3", "bridge", "domain", "br_default", "access", "112"] in state["applied"]

    (switch_box.dir / "received.log").write_text("")
    done = switch_box.send(render_revert(CUMULUS))
    assert done.returncode == 0, done.stderr + switch_box.sshd_log()
    assert switch_box.received()[-1] == "nv config apply -y"
    assert switch_box.nvue_state() == {"applied": [], "pending": None}


def test_cumulus_failure_names_the_switch_and_applies_nothing(switch_box):
    switch_box.reset("cumulus", fail_on="link mtu")
    done = switch_box.send(render_apply(CUMULUS))
    assert done.returncode != 0
    assert "gpu-lab: switch cl-rails: RoCE configuration failed" in done.stderr
    assert "link mtu" in done.stderr
    received = switch_box.received()
    assert received[-1] == "nv config detach"
    assert "nv config apply -y" not in received
    assert switch_box.nvue_state() == {"applied": [], "pending": None}
