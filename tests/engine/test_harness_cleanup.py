"""The day-2 engine harness (day2_engine.py) leaves nothing running and no temporary directory behind,
whether a test passes, fails half-way, or a server fails to start.

No engine needed: the servers here are stand-ins for sshd that listen (or never do) on the port their
config file names, and record their process id, so the test can see the process gone.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import day2_engine
import pytest
from day2_engine import CumulusStandIn, HelperNode

LISTENING_SSHD = """\
#!{python}
# sshd stand-in: -D -e -f CONFIG; listens on CONFIG's Port on 127.0.0.1 until terminated
import socket, sys, time
config = open(sys.argv[sys.argv.index("-f") + 1]).read().split()
open({pids!r}, "a").write(f"{{__import__('os').getpid()}}\\n")
if {listen}:
    s = socket.socket()
    s.bind(("127.0.0.1", int(config[config.index("Port") + 1])))
    s.listen()
while True:
    time.sleep(1)
"""


def _standin(tmp_path: Path, listen: bool) -> tuple[str, Path]:
    pids = tmp_path / "pids"
    script = tmp_path / ("sshd" if listen else "sshd-deaf")
    script.write_text(LISTENING_SSHD.format(python=sys.executable, pids=str(pids), listen=listen))
    script.chmod(0o755)
    return str(script), pids


def _alive(pids: Path) -> list[int]:
    alive = []
    for pid in map(int, pids.read_text().split()):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        # a zombie is gone for our purpose; /proc says so on Linux
        status = Path(f"/proc/{pid}/status")
        if status.exists() and "State:\tZ" in status.read_text():
            continue
        alive.append(pid)
    return alive


def test_a_failing_test_still_stops_the_server(tmp_path):
    sshd, pids = _standin(tmp_path, listen=True)
    with pytest.raises(AssertionError, match="the test failed"):
        with contextlib.ExitStack() as cleanup:
            helper = cleanup.enter_context(HelperNode.start(tmp_path / "helper", sshd))
            assert helper.proc.poll() is None
            raise AssertionError("the test failed")
    assert pids.read_text().strip() and _alive(pids) == []


def test_a_server_that_never_listens_is_stopped_by_its_failed_start(tmp_path):
    sshd, pids = _standin(tmp_path, listen=False)
    with pytest.raises(TimeoutError):
        HelperNode.start(tmp_path / "helper", sshd)
    assert pids.read_text().strip() and _alive(pids) == []


def test_a_failed_switch_start_removes_its_temporary_directory(monkeypatch):
    monkeypatch.setattr(day2_engine, "SWITCH_USER", "gpulab-nobody-here")  # userdel of no one: harmless
    made: list[Path] = []

    def fail(cls, d, *args):
        made.append(d)
        (d / "half-made").write_text("x")
        raise RuntimeError("sshd did not start")

    monkeypatch.setattr(CumulusStandIn, "_start_in", classmethod(fail))
    with pytest.raises(RuntimeError, match="sshd did not start"):
        CumulusStandIn.start("/nonexistent/sshd", "pw")
    [d] = made
    assert d.name.startswith("gpu-lab-switch-") and not d.exists()
