"""Ports on 127.0.0.1 for the servers tests start, and waiting until one listens."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (now)."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout_s: float = 5.0, proc: subprocess.Popen | None = None,
                  log: Path | None = None) -> None:
    """Until something accepts on 127.0.0.1:`port`; fails at once when `proc` exits, with its
    `log` (a file) or else its stderr."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            said = log.read_text() if log is not None else proc.stderr.read() if proc.stderr else ""
            raise RuntimeError(f"process exited with {proc.returncode}: {said}")
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {LOOPBACK}:{port} after {timeout_s}s")
