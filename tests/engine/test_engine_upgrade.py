"""The upgrade test on the real engine (scripts/engine-upgrade.sh): the last release's `pulumi up` on the
repo's pyvmomi resources against the vCenter simulator, then this tree's `up` (what the release retires,
with the VM checked untouched) and `preview --expect-no-changes`.

Like the engine-sim test: skipped by developers without `make setup-pulumi`, run (and required) in CI.
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
SCRIPT = ROOT / "scripts" / "engine-upgrade.sh"
STEPS = ["previous release", "up with", "the state names", "up with this tree", "credentials",
         "preview --expect-no-changes", "control", "stack tag", "destroy"]


@pytest.fixture(autouse=True)
def _engine_installed():
    require_path(CACHE / "bin" / "pulumi", "the Pulumi engine", "run `make setup-pulumi` first")


def test_the_last_release_upgrades_to_this_tree_without_changes():
    proc = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, env={**os.environ, "PULUMI_CACHE_DIR": str(CACHE)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == f"{len(STEPS)} passed, 0 failed", out
    passed = [line for line in lines if line.startswith("PASS ")]
    for line, what in zip(passed, STEPS, strict=True):
        assert line.startswith(f"PASS {what}") and re.search(r"\(\d+s\)$", line), line
