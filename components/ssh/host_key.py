"""The host-key pre-flight: a check, run where pulumi runs, that a host presents its pinned key.

pulumi-command verifies `connection.hostKey` itself (golang.org/x/crypto/ssh FixedHostKey in
provider/pkg/provider/remote/connection.go, SSHConfig), but a mismatch reads only
"ssh: handshake failed: ssh: host key mismatch", after every dial attempt. This check runs first
(a local Command the host's Commands and copies depend on) and says which host, which key it
presents and which key is pinned, by fingerprint, before anything is sent to it.

The script goes to `sh -s` on stdin: pulumi-command quotes a failed Command's `create` text
whole in its error (provider/pkg/provider/local/commandOutputs.go, run), which would bury the
message under the script three times over.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
from pulumi_command import local

from components import shell_templates
from components.model import ssh_key_line_problem, ssh_public_key_parts

# A key's type as ssh-keyscan -t names it (ssh-keyscan(1): dsa, ecdsa, ed25519, ecdsa-sk,
# ed25519-sk, rsa); "ecdsa" fetches the host's ECDSA key whatever its curve.
KEYSCAN_TYPES = {
    "ssh-ed25519": "ed25519",
    "ssh-rsa": "rsa",
    "ssh-dss": "dsa",
    "ecdsa-sha2-nistp256": "ecdsa",
    "ecdsa-sha2-nistp384": "ecdsa",
    "ecdsa-sha2-nistp521": "ecdsa",
    "sk-ssh-ed25519@openssh.com": "ed25519-sk",
    "sk-ecdsa-sha2-nistp256@openssh.com": "ecdsa-sk",
}


def render_host_key_check(host: str, port: int, pinned_key: str, *, setting: str = "the stack",
                          attempts: int = 1, timeout_seconds: int = 10) -> str:
    """The sh script that fails unless ``host``:``port`` presents ``pinned_key`` (an OpenSSH public
    key line, e.g. SshPublicKey config). ``setting`` names where the key is pinned (e.g.
    "openshift.helper.hostKey"), for the messages; ``attempts`` x ``timeout_seconds`` bound the
    wait for an unreachable host (use the connection's dialErrorLimit and perDialTimeout)."""
    problem = ssh_key_line_problem(pinned_key)
    if problem is not None or pinned_key.split()[0] not in KEYSCAN_TYPES:
        raise ValueError(f"pinned key for {host}:{port} is not an OpenSSH public key line: {problem}")
    key_type, blob = ssh_public_key_parts(pinned_key)
    return shell_templates.render("components.ssh", "check-host-key.sh", {
        "HOST": host,
        "PORT": port,
        "KEY_TYPE": KEYSCAN_TYPES[key_type],
        "PINNED_KEY": f"{key_type} {blob}",
        "SETTING": setting,
        "CONNECT_ATTEMPTS": attempts,
        "CONNECT_TIMEOUT": timeout_seconds,
    }, comments=[f"the SSH host key of {host}:{port} must be the one {setting} pins"])


RUN_STDIN = "/bin/sh -s"
"""The `create` of a Command whose script comes on stdin."""


def host_key_check(name: str, host: str, port: int, pinned_key: str, *, setting: str, attempts: int,
                   timeout_seconds: int, triggers: Sequence[pulumi.Input[str]] = (),
                   opts: pulumi.ResourceOptions | None = None) -> local.Command:
    """The pre-flight as a local Command; make every Command and copy that reaches the host depend on it.

    It runs when created and again whenever its script (host, port, key) changes; `triggers`
    (e.g. the hash of what is about to be sent) make it run again, by replacement, when they change.
    """
    return local.Command(
        name,
        create=RUN_STDIN,
        stdin=render_host_key_check(host, port, pinned_key, setting=setting, attempts=attempts,
                                    timeout_seconds=timeout_seconds),
        triggers=list(triggers),
        opts=opts,
    )
