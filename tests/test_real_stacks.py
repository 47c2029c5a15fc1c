"""One smoke test per real stack: Pulumi.lab.yaml, Pulumi.openshift.yaml and Pulumi.sim.yaml.

These files describe real sites and change with them; this is the only test module that reads
them (tests/test_fixture_rules.py enforces it). Each is read the way `make plan` reads it (strict
stack-file checks, every section validated), run under mocks with placeholder secrets, and the
plan handed to the policy pack over its gRPC interface: it must plan cleanly and pass.
Everything else is tested on the tests' own stacks (tests/builders.py).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools import mockrun, plan, policy_check, upgrade
from tools.stackfile import stack_path

REPO = Path(__file__).resolve().parent.parent
PACK = REPO / "policies"
REAL_STACKS = {
    "lab": "Pulumi.lab.yaml",
    "openshift": "Pulumi.openshift.yaml",
    "sim": "Pulumi.sim.yaml",
}


def test_the_smoke_tests_cover_every_stack_file_in_the_repository():
    assert sorted(p.name for p in REPO.glob("Pulumi.*.yaml")) == sorted(REAL_STACKS.values())


@pytest.mark.parametrize("stack", list(REAL_STACKS))
def test_real_stack_plans_cleanly_and_passes_the_policy_pack(stack, tmp_path):
    assert stack_path(stack).name == REAL_STACKS[stack]
    run, _ = plan.run_plan(stack, tmp_path, quiet=True)
    assert run.resources, f"{REAL_STACKS[stack]} planned no resources"
    report = policy_check.check(policy_check.parse_stack(plan.pack_input(run)), PACK)  # what make plan hands it
    assert report.mandatory == [], [v.as_dict() for v in report.mandatory]


def test_make_plan_of_the_lab_reports_its_unpinned_helper_and_switch(tmp_path, capsys):
    # Pulumi.lab.yaml pins no host key for its helper node or its switch. pulumi-command's schema makes
    # the whole `connection` a secret, so plan.json holds the string "[secret]" there; make plan hands
    # the pack the connection itself, secret as the CLI hands it, and the host-key rule sees it.
    config = yaml.safe_load((REPO / REAL_STACKS["lab"]).read_text())["config"]
    helper = config["gpu-lab:openshift"]["helper"]["address"]
    [switch] = [str(s["managementAddress"]) for s in config["gpu-lab:switches"]]
    assert "hostKey" not in config["gpu-lab:openshift"]["helper"]
    assert all("hostKey" not in s for s in config["gpu-lab:switches"])

    assert plan.main(["--stack", "lab", "--out", str(tmp_path)]) == 0  # advisory: make plan passes
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "policy-report.json").read_text())
    pinned = [v for v in report["violations"] if v["policy"] == "command-ssh-host-key-pinned"]
    assert {v["level"] for v in pinned} == {"advisory"}
    hosts = {re.search(r"connection to (\S+?):\d+ ", v["message"]).group(1) for v in pinned}
    assert hosts == {helper, switch}
    remote = [r for r in json.loads((tmp_path / "plan.json").read_text())["resources"]
              if r["type"] in ("command:remote:Command", "command:remote:CopyToRemote")]
    assert len(pinned) == len(remote) > 0  # every connection to either
    assert f"0 mandatory and {len(report['violations'])} advisory violation(s)" in out
    # plan.json stays redacted; the report holds no secret value (not even make plan's placeholders)
    assert {r["inputs"]["connection"] for r in remote} == {"[secret]"}
    assert mockrun.PLACEHOLDER not in (tmp_path / "policy-report.json").read_text()
    assert mockrun.PLACEHOLDER not in out

    # policies/config.up.json (what up.yml passes) makes each of them mandatory
    up = policy_check.check(policy_check.parse_stack(plan.pack_input(plan.run_plan("lab", tmp_path, quiet=True)[0])),
                            PACK, json.loads((REPO / "policies" / "config.up.json").read_text()))
    assert len([v for v in up.mandatory if v.policy == "command-ssh-host-key-pinned"]) == len(pinned)


def test_the_upgrade_gate_covers_every_shipped_stack():
    assert sorted(upgrade.SHIPPED_STACKS) == sorted(REAL_STACKS)


@pytest.mark.parametrize("stack", list(REAL_STACKS))
def test_upgrade_gate_nothing_undeclared_moves_reruns_reboots_or_is_replaced(stack):
    """A lab built at the last release, updated to this tree: every URN moved without an alias, every
    replace, delete, re-run and reboot (tools.diff's rules) must be declared in the CHANGELOG entry of
    the version in pyproject.toml. Re-record the baselines with `make baseline` at a release."""
    found = upgrade.findings(stack, upgrade.read_baseline(stack), upgrade.plan(stack))
    declared = upgrade.declarations(upgrade.CHANGELOG.read_text(), upgrade.version())
    missing = upgrade.undeclared(found, declared)
    assert missing == [], "declare these in CHANGELOG.md (### Declared changes) or undo them:\n" + "\n".join(
        f.line() for f in missing)


def test_make_diff_refuses_removing_a_middle_worker_of_the_lab(tmp_path):
    # Pulumi.lab.yaml at HEAD is the lab as built; removing a worker from the middle of its
    # positional names would move the later ones: the identity guard's check refuses it (exit 2,
    # the workers that would move and the lists that keep them), as the real preview would.
    stack = yaml.safe_load((REPO / REAL_STACKS["lab"]).read_text())
    names = stack["config"]["gpu-lab:vsphere"]["workers"]["names"]
    stack["config"]["gpu-lab:vsphere"]["workers"]["names"] = [names[0], *names[2:]]
    path = tmp_path / REAL_STACKS["lab"]
    path.write_text(yaml.safe_dump(stack, sort_keys=False))
    done = subprocess.run([sys.executable, "-m", "tools.diff", "--stack", "lab", "--stack-file", str(path),
                           "--out", str(tmp_path / "out")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "a running lab cannot take this edit" in done.stderr
    assert f"{names[2]}: managementAddress" in done.stderr and "managementAddresses: [" in done.stderr
    assert not (tmp_path / "out" / "diff.json").exists()


def test_make_diff_plans_the_working_tree_on_top_of_the_lab_as_built(tmp_path):
    # The program reads the deployed state (which nodes run and roll one after another); make diff hands
    # it the base's: the unchanged lab changes nothing, not even a dependency, and a worker added at the
    # end is created with a roll that waits for no other node's, the running nodes' chain as it was.
    def diff(path):
        out = tmp_path / path.stem
        done = subprocess.run([sys.executable, "-m", "tools.diff", "--stack", "lab", "--stack-file", str(path),
                               "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads((out / "diff.json").read_text())

    unchanged = diff(REPO / REAL_STACKS["lab"])
    assert unchanged["changes"] == [] and unchanged["stateOnly"] == []
    stack = yaml.safe_load((REPO / REAL_STACKS["lab"]).read_text())
    names = stack["config"]["gpu-lab:vsphere"]["workers"]["names"]
    added = f"{names[-1]}x"
    stack["config"]["gpu-lab:vsphere"]["workers"]["names"] = [*names, added]
    path = tmp_path / "added" / REAL_STACKS["lab"]
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(stack, sort_keys=False))
    document = diff(path)
    assert next(c["op"] for c in document["changes"] if c["name"] == f"vms-{added}-roll") == "create"
    assert not [r for r in document["stateOnly"] if r["name"].endswith("-roll")]


# ---------------------------------------------------------------- the counts the docs quote


@pytest.mark.parametrize("stack", ["lab", "sim"])
def test_the_resource_count_docs_benchmark_quotes_for_the_stack(stack):
    from doc_numbers import quoted_counts

    from tools.stackfile import offline_secrets

    config = mockrun.stack_config(stack)
    workers = len(config["gpu-lab:vsphere"]["workers"]["names"])
    run = mockrun.run_program(config, stack=stack, secrets=offline_secrets(config))
    assert len(run.resources) == quoted_counts()[(REAL_STACKS[stack], workers)]


def test_the_sim_stack_count_quoted_for_its_up():
    # docs/commands.md: `scripts/sim-preview.sh --up` creates the whole sim stack; the engine counts
    # the stack itself too
    from doc_numbers import quoted_counts

    text = (REPO / "docs" / "commands.md").read_text()
    [quoted] = re.findall(r"all (\d+) resources\s+created", text)
    assert int(quoted) == quoted_counts()[(REAL_STACKS["sim"], 3)] + 1


def test_a_typo_in_a_control_plane_name_is_refused_before_any_step(tmp_path):
    """The lab stack protects its control plane: a typo in a control-plane name would delete vms-sckubm03
    (which the engine refuses: protected) and create another etcd member. The identity guard refuses the
    edit first, as the preview does, with the etcd member replacement procedure (exit 2); the engine's
    refusal of a protected delete is tested on the rules (tests/tools/test_diff.py)."""
    stack = yaml.safe_load((REPO / "Pulumi.lab.yaml").read_text())
    stack["config"]["gpu-lab:vsphere"]["controlPlane"]["names"] = ["sckubm01", "sckubm02", "sckubm3"]
    path = tmp_path / "Pulumi.lab.yaml"
    path.write_text(yaml.safe_dump(stack))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "tools.diff", "--stack", "lab", "--stack-file", str(path), "--out",
                           str(out)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "vsphere.controlPlane.names: the edit renames control-plane node(s) sckubm03 to sckubm3" in done.stderr
    assert "Replacing an unhealthy etcd member" in done.stderr
    assert not (out / "diff.json").exists()
