"""The real Pulumi engine on the repo's pyvmomi resources against lab-vcsim (scripts/engine-sim.sh).

The engine is built by `make setup-pulumi` (minutes from cold), so a developer's `make test`
skips this when it is absent; CI builds it first and runs it.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from required_tools import require_path

ROOT = Path(__file__).resolve().parents[2]
# absolute: the harness runs the engine from other directories (a relative PULUMI_CACHE_DIR is the cwd's)
CACHE = Path(os.environ.get("PULUMI_CACHE_DIR", ROOT / ".cache" / "pulumi")).resolve()
SCRIPT = ROOT / "scripts" / "engine-sim.sh"
STEPS = 8  # PASS lines engine-sim.sh prints when every step succeeds
_TIMEOUT_S = 300  # ~15 s on 2 idle cores; generous for a loaded CI machine

@pytest.fixture(autouse=True)
def _engine_installed():
    """Developers without the engine skip this; CI builds it first, so there it must run."""
    require_path(CACHE / "bin" / "pulumi", "the Pulumi engine", "run `make setup-pulumi` first")


def test_engine_sim_passes():
    proc = subprocess.run(
        ["bash", str(SCRIPT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PULUMI_CACHE_DIR": str(CACHE)},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == f"{STEPS} passed, 0 failed", out
    passed = [line for line in lines if line.startswith("PASS ")]
    assert len(passed) == STEPS and not any(line.startswith("FAIL") for line in lines), out
    # The steps that matter, in order, each with a timing.
    for line, what in zip(passed, ["lab-vcsim", "project", "preview --policy-pack", "up --policy-pack",
                                   "password", "a provider's configuration", "update", "destroy"], strict=True):
        assert line.startswith(f"PASS {what}") and re.search(r"\(\d+s\)$", line), line
