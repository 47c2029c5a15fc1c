"""Debian's OpenSSH server on a 127.0.0.1 port, for the tests that need a real SSH server.

`running_sshd` generates the host key(s), writes an sshd_config with the given extra lines,
starts `sshd -D` as the current user and waits until it listens; on exit it stops it. Needs
openssh-server and openssh-client (scripts/install-switch-test-tools.sh): `ssh_tools()` finds
them, or skips (fails under CI) with that hint.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from loopback import free_port, wait_for_port
from procs import stop
from required_tools import require_tool

SSH_HINT = "needs openssh-server and openssh-client: run scripts/install-switch-test-tools.sh"


def ssh_tools() -> dict[str, str]:
    """sshd, ssh, ssh-keygen and ssh-keyscan, each by its path."""
    return {tool: require_tool(tool, SSH_HINT) for tool in ("sshd", "ssh", "ssh-keygen", "ssh-keyscan")}


@dataclass
class Sshd:
    dir: Path
    port: int
    host_keys: dict[str, Path]
    """key type (ssh-keygen -t) -> the private key file; its public key is beside it, `.pub`."""

    def public_key(self, key_type: str = "ed25519") -> str:
        """The host's public key line of that type, as in its .pub file."""
        return self.host_keys[key_type].with_suffix(".pub").read_text().strip()

    def log(self) -> str:
        return (self.dir / "sshd.log").read_text()


@contextmanager
def running_sshd(directory: Path, sshd: str, extra_config: str = "",
                 key_types: Sequence[str] = ("ed25519",)) -> Iterator[Sshd]:
    """sshd on a free 127.0.0.1 port with fresh host keys of `key_types`, its files under `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    host_keys = {}
    for key_type in key_types:
        path = directory / f"host_key_{key_type}"
        subprocess.run(["ssh-keygen", "-q", "-t", key_type, "-N", "", "-C", f"host-{key_type}", "-f", str(path)],
                       check=True)
        host_keys[key_type] = path
    port = free_port()
    lines = ["ListenAddress 127.0.0.1", f"Port {port}", *(f"HostKey {p}" for p in host_keys.values()),
             f"PidFile {directory}/sshd.pid", "UsePAM no", "StrictModes no", "LogLevel ERROR"]
    (directory / "sshd_config").write_text("\n".join(lines) + "\n" + textwrap.dedent(extra_config))
    # sshd started as root wants its privilege-separation directory, which Debian makes at boot
    # (not in containers). It stays: another sshd (a parallel test run) may be using it.
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    log = (directory / "sshd.log").open("w")
    proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(directory / "sshd_config")],
                            stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_for_port(port, 10, proc, directory / "sshd.log")
        yield Sshd(directory, port, host_keys)
    finally:
        stop(proc)
        log.close()
