"""The whole program under the real engine and the real provider plugins against vcsim
(scripts/sim-preview.sh): `pulumi preview --policy-pack policies` of the sim stack.

The provider plugins are built from source by hand (docs/engine.md), so this runs only where
they are installed and otherwise skips with the script's reason, in CI too.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("PULUMI_CACHE_DIR", ROOT / ".cache" / "pulumi"))
SCRIPT = ROOT / "scripts" / "sim-preview.sh"
SKIPPED = 77  # the script's exit code when the engine or a plugin is missing
_TIMEOUT_S = 600  # ~20 s on 2 idle cores


@pytest.mark.built_by_hand
def test_sim_stack_previews_with_the_real_providers_and_the_policy_pack():
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--stack", "sim"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PULUMI_CACHE_DIR": str(CACHE)},
    )
    out = proc.stdout + proc.stderr
    if proc.returncode == SKIPPED:
        pytest.skip(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0, out
    passed = [line for line in proc.stdout.splitlines() if line.startswith("PASS ")]
    assert [line.split()[1] for line in passed] == ["vcsim", "stack", "preview"], out
    # Every resource of the sim stack is planned: 3 worker hosts x (vmk + 4 host settings),
    # vDS + 2 port groups, 6 VMs, 3 vGPU profiles, 1 anti-affinity rule, 2 components, the
    # pyvmomi resources' explicit provider and the stack.
    assert re.search(r"PASS preview --policy-pack policies: 34 to create", proc.stdout), out


def test_sim_preview_refuses_up_on_a_lab_stack():
    proc = subprocess.run(["bash", str(SCRIPT), "--stack", "lab", "--up"], cwd=ROOT, capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert "--up runs only on the sim stack" in proc.stderr
