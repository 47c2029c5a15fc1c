"""The whole program under the real engine and the real provider plugins against lab-vcsim
(scripts/sim-preview.sh): `pulumi preview --policy-pack policies` of the sim stack, and its up,
no-change preview, day-2 edit and destroy.

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
# absolute: the harness runs the engine from other directories (a relative PULUMI_CACHE_DIR is the cwd's)
CACHE = Path(os.environ.get("PULUMI_CACHE_DIR", ROOT / ".cache" / "pulumi")).resolve()
SCRIPT = ROOT / "scripts" / "sim-preview.sh"
SKIPPED = 77  # the script's exit code when the engine or a plugin is missing
_TIMEOUT_S = 600  # preview ~10 s, up to destroy ~30 s on 2 idle cores


def run_script(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        ["bash", str(SCRIPT), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PULUMI_CACHE_DIR": str(CACHE)},
    )
    if proc.returncode == SKIPPED:
        pytest.skip(proc.stdout.strip().splitlines()[-1])
    return proc


@pytest.mark.built_by_hand
def test_sim_stack_previews_with_the_real_providers_and_the_policy_pack():
    proc = run_script("--stack", "sim")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    passed = [line for line in proc.stdout.splitlines() if line.startswith("PASS ")]
    assert [line.split()[1] for line in passed] == ["lab-vcsim", "stack", "preview"], out
    # Every resource of the sim stack is planned: 3 worker hosts x (vmk + 4 host settings),
    # vDS + 2 port groups, 6 VMs, 3 vGPU profiles, 6 node rolls (3 control plane, 3 workers),
    # 1 anti-affinity rule, 2 components, the pyvmomi resources' explicit provider, the lab's
    # identity record and its provider, the stack.
    assert re.search(r"PASS preview --policy-pack policies: 38 to create", proc.stdout), out


@pytest.mark.built_by_hand
def test_sim_stack_up_day2_and_destroy_with_the_real_providers():
    proc = run_script("--stack", "sim", "--up", "--add-worker")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    passed = [line for line in proc.stdout.splitlines() if line.startswith("PASS ")]
    assert [line.split()[1].rstrip(":") for line in passed] == [
        "lab-vcsim", "stack", "preview", "up", "preview", "day-2", "destroy"], out
    # Every resource is created, and the program and vSphere agree right after.
    assert re.search(r"PASS up: 38 created", proc.stdout), out
    assert "PASS preview --expect-no-changes: no changes after up" in proc.stdout
    # One more worker: its VM and its roll (which gives it its vGPU), the VMs component's outputs and the
    # identity record's node list (both in state only); nothing else.
    planned = re.findall(r"^  \((\w[\w-]*)\)\s+urn=\S+::(\S+)$", proc.stdout, re.M)
    assert sorted(planned) == [("create", "vms-simw04"), ("create", "vms-simw04-roll"),
                               ("update", "lab-identity"), ("update", "vms")], out
    assert re.search(r"PASS day-2 up \(worker simw04\): \+ 2 created,~ 2 updated", proc.stdout), out
    # destroy removes all 40 and puts hosts, VMs, switches and port groups back as they were before up.
    assert re.search(r"PASS destroy: 40 deleted, \d+s; hosts, VMs, switches and port groups as before up",
                     proc.stdout), out


def test_sim_preview_refuses_up_on_a_lab_stack():
    proc = subprocess.run(["bash", str(SCRIPT), "--stack", "lab", "--up"], cwd=ROOT, capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert "--up runs only on the sim stack" in proc.stderr


@pytest.mark.built_by_hand
def test_sim_stack_previews_as_a_read_only_user():
    # What the pull-request preview job does (docs/security.md): a vCenter user whose role is
    # Read-only (lab-vcsim refuses it every method that would change the inventory).
    proc = run_script("--stack", "sim", "--read-only")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "with the Read-only user lab-reader" in proc.stdout
    assert re.search(r"PASS preview --policy-pack policies: 38 to create", proc.stdout), out


@pytest.mark.built_by_hand
def test_a_built_lab_previewed_as_a_read_only_user_plans_only_login_updates():
    proc = run_script("--stack", "sim", "--up", "--read-only")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "PASS read-only preview as lab-reader: nothing to create, replace or delete" in proc.stdout
    # The explicit providers of our dynamic resources hold the vCenter login: the Read-only login is an
    # update of those two providers, and of nothing else (no host setting or node roll takes a step).
    planned = re.findall(r"^  \((\w+)\)\t(\S+)  (\S+)$", proc.stdout, re.M)
    assert sorted(planned) == [("update", "pulumi:providers:pulumi-python", "node-rolls"),
                               ("update", "pulumi:providers:pulumi-python", "pyvmomi")], out
