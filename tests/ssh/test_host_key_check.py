"""The host-key pre-flight (components/ssh/host_key.py) against a real OpenSSH server on loopback.

The expected fingerprints come from `ssh-keygen -l` run here on the key files themselves, so
the script's messages are compared with OpenSSH's own view of each key.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import sshd_server
from sshd_server import free_port, running_sshd

from components.ssh.host_key import RUN_STDIN, render_host_key_check

SETTING = "openshift.helper.hostKey"


@pytest.fixture(scope="module")
def tools() -> dict[str, str]:
    return sshd_server.ssh_tools()


@pytest.fixture(scope="module")
def host(tmp_path_factory, tools):
    """An sshd with an ed25519 and an RSA host key; no login is needed to read them."""
    with running_sshd(tmp_path_factory.mktemp("host-key-sshd"), tools["sshd"], key_types=("ed25519", "rsa")) as sshd:
        yield sshd


def other_key(tmp_path: Path, key_type: str) -> Path:
    """A key pair the host does not have."""
    path = tmp_path / f"other_{key_type}"
    subprocess.run(["ssh-keygen", "-q", "-t", key_type, "-N", "", "-C", "somebody-else", "-f", str(path)], check=True)
    return path.with_suffix(".pub")


def fingerprint(public_key_file: Path) -> str:
    """`ssh-keygen -l` of the key: bits, SHA256 fingerprint and type, without the comment."""
    words = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(public_key_file)],
                           capture_output=True, text=True, check=True).stdout.split()
    return f"{words[0]} {words[1]} {words[-1]}"


def run_check(port: int, pinned: str, **kwargs) -> subprocess.CompletedProcess:
    """The check as host_key_check's local Command runs it: pulumi-command runs `create` with
    /bin/sh -c (provider/pkg/provider/local/commandOutputs.go) and writes `stdin` to it."""
    script = render_host_key_check("127.0.0.1", port, pinned, setting=SETTING, **kwargs)
    return subprocess.run(["/bin/sh", "-c", RUN_STDIN], input=script, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("key_type", ["ed25519", "rsa"])
def test_the_pinned_key_passes(host, key_type):
    done = run_check(host.port, host.public_key(key_type))
    assert done.returncode == 0, done.stderr + host.log()
    pub = host.host_keys[key_type].with_suffix(".pub")
    assert done.stdout.strip() == f"gpu-lab: 127.0.0.1:{host.port} presents the pinned host key {fingerprint(pub)}"
    assert done.stderr == ""


def test_a_wrong_key_fails_naming_the_host_and_both_fingerprints(host, tmp_path):
    wrong = other_key(tmp_path, "ed25519")
    done = run_check(host.port, wrong.read_text())
    assert done.returncode == 1, done.stdout + done.stderr
    presented = fingerprint(host.host_keys["ed25519"].with_suffix(".pub"))
    assert f"gpu-lab: SSH host key mismatch for 127.0.0.1:{host.port}: it presents {presented}, " \
           f"but {SETTING} pins {fingerprint(wrong)}. Nothing was sent to it." in done.stderr
    assert presented != fingerprint(wrong)
    assert done.stdout == ""


def test_a_key_type_the_host_lacks_names_the_keys_it_has(host, tmp_path):
    wrong = other_key(tmp_path, "ecdsa")
    done = run_check(host.port, wrong.read_text())
    assert done.returncode == 1
    assert f"it presents {fingerprint(host.host_keys['rsa'].with_suffix('.pub'))}" in done.stderr \
        or f"it presents {fingerprint(host.host_keys['ed25519'].with_suffix('.pub'))}" in done.stderr, done.stderr
    assert f"{SETTING} pins {fingerprint(wrong)}" in done.stderr
    for key_type in ("ed25519", "rsa"):
        assert fingerprint(host.host_keys[key_type].with_suffix(".pub")) in done.stderr


def test_an_unreachable_host_gets_its_own_message(host):
    port = free_port()  # nothing listens there
    done = run_check(port, host.public_key(), attempts=2, timeout_seconds=2)
    assert done.returncode == 1
    assert done.stderr.startswith(f"gpu-lab: cannot check the SSH host key of 127.0.0.1:{port}: no SSH server "
                                  "answered (2 attempt(s) of 2 s"), done.stderr
    assert "check the address, the port and that sshd runs there" in done.stderr


def test_the_renderer_refuses_what_is_not_a_public_key():
    with pytest.raises(ValueError, match="127.0.0.1:22.*not an OpenSSH public key line"):
        render_host_key_check("127.0.0.1", 22, "127.0.0.1 AAAAC3NzaC1lZDI1NTE5")


def test_values_are_rendered_in_front_of_the_template():
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC8wDKIPxTD+BPx9yKrkMAGoDRrmSxLth9xr0wbOTtcO core@lab"
    script = render_host_key_check("192.0.2.10", 2222, key, setting="switches[0].hostKey", attempts=3,
                                   timeout_seconds=7)
    assert "HOST=192.0.2.10\nPORT=2222\nKEY_TYPE=ed25519\n" in script
    # the comment is not part of the key
    assert "PINNED_KEY='ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC8wDKIPxTD+BPx9yKrkMAGoDRrmSxLth9xr0wbOTtcO'\n" in script
    assert "SETTING='switches[0].hostKey'\nCONNECT_ATTEMPTS=3\nCONNECT_TIMEOUT=7\n" in script
