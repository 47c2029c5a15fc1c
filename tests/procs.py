"""Stopping the servers tests start (vcsim, sshd, haproxy, dnsmasq, provider processes)."""

import subprocess


def stop(proc: subprocess.Popen, grace_s: float = 5.0) -> None:
    """SIGTERM, wait up to `grace_s`, then SIGKILL; never leaves the process behind."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace_s)
