"""The CI workflows run the pack the way users are told to, feed up every lab secret, and hold
each job to what docs/security.md says it may do and receive."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from policy_helpers import ROOT

from components.secrets import PREVIEW_OPTIONAL, SECRET_KEYS  # the program's list of secrets

WORKFLOWS = ROOT / ".github" / "workflows"


def _load(name):
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    return data.get("on", data.get(True)), data["jobs"]  # YAML 1.1 reads the key `on` as True


def _runs(job):
    return "\n".join(step.get("run", "") for step in job["steps"])


def test_preview_runs_on_pull_requests_with_the_pack():
    on, jobs = _load("preview.yml")
    assert "pull_request" in on
    assert re.search(r"pulumi preview --stack lab --policy-pack policies\b", _runs(jobs["preview"]))
    assert jobs["preview"]["needs"] == "policy-pack"
    assert "pytest -q tests/policies" in _runs(jobs["policy-pack"])


def test_up_runs_on_main_with_the_pack_one_at_a_time():
    on, jobs = _load("up.yml")
    assert on["push"]["branches"] == ["main"]
    [up_line] = [line for line in _runs(jobs["up"]).splitlines() if line.startswith("pulumi up ")]
    assert up_line.startswith("pulumi up --stack lab --yes ")
    assert re.search(r" --policy-pack policies\b", up_line)
    data = yaml.safe_load((WORKFLOWS / "up.yml").read_text())
    assert data["concurrency"]["cancel-in-progress"] is False


UP_CONFIG = ROOT / "policies" / "config.up.json"


def test_up_makes_the_host_key_rule_mandatory_through_the_packs_config():
    _, jobs = _load("up.yml")
    assert re.search(r"pulumi up .*--policy-pack policies --policy-pack-config policies/config\.up\.json\b",
                     _runs(jobs["up"]))
    _, jobs = _load("preview.yml")
    assert "--policy-pack-config" not in _runs(jobs["preview"])  # pull requests: advisory, as in make plan
    assert json.loads(UP_CONFIG.read_text()) == {"command-ssh-host-key-pinned": "mandatory"}


def test_the_up_config_turns_an_unpinned_host_into_a_mandatory_violation():
    import plan_fixtures
    from policy_helpers import PACK

    from tools import policy_check

    stack = policy_check.parse_stack(plan_fixtures.broken_workloads())
    report = policy_check.check(stack, PACK, json.loads(UP_CONFIG.read_text()))
    pinned = [(v.resource, v.level) for v in report.verdicts if v.policy == "command-ssh-host-key-pinned"]
    assert pinned == [(plan_fixtures.SWITCH_COMMAND, "mandatory")]
    assert {v.level for v in report.verdicts if v.policy == "command-connect-timeout"} == {"advisory"}


def _secrets_set(script):
    """Config key -> the environment variable its `set_secret` line reads."""
    return dict(re.findall(r"set_secret (\S+) \"\$(\w+)\"", script))


def test_up_sets_every_lab_secret_from_github_secrets():
    _, jobs = _load("up.yml")
    script = _runs(jobs["up"])
    for _attribute, namespace, key, is_object in SECRET_KEYS:
        if is_object:
            assert f"{namespace}:{key}." in script, key
        else:
            assert f"{namespace}:{key}" in _secrets_set(script), key
    text = (WORKFLOWS / "up.yml").read_text()
    for env_name in _secrets_set(script).values():
        assert re.search(rf"{env_name}: \$\{{\{{ secrets\.\w+ \}}\}}", text), env_name


# ---------------------------------------------------------------- pull requests: least privilege
# What docs/security.md says each job receives is read here from the workflow files themselves.

# The secrets that let a job change the lab: vCenter's admin password, the helper node's SSH key,
# the switches' passwords. Only up.yml (environment lab) may name them.
WRITE_SECRETS = {"VSPHERE_PASSWORD", "HELPER_SSH_PRIVATE_KEY", "SWITCH_PASSWORDS"}
PREVIEW_SECRETS = {"PULUMI_ACCESS_TOKEN", "PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE",
                   "VSPHERE_PREVIEW_USER", "VSPHERE_PREVIEW_PASSWORD", "OPENSHIFT_PULL_SECRET",
                   "OPENSHIFT_SSH_PUBLIC_KEY", "KUBECONFIG", "NVIDIA_LICENSE_TOKEN", "GRIDD_CONF",
                   "REGISTRY_AUTH", "BITFUSION_CLIENT_TOKEN"}


def _code(text: str) -> str:
    """Shell or YAML without its comment lines."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def _secrets_named(job) -> set[str]:
    return set(re.findall(r"secrets\.(\w+)", yaml.safe_dump(job)))


def test_pull_requests_run_only_on_pull_request_never_pull_request_target():
    on, _ = _load("preview.yml")
    assert set(on) == {"pull_request"}  # pull_request_target would run a fork's code with the base's secrets
    for name in ("preview.yml", "up.yml"):
        assert "pull_request_target" not in _load(name)[0]


def test_every_pull_request_gets_the_offline_diff_and_the_policy_tests_with_no_secret():
    _, jobs = _load("preview.yml")
    for name in ("policy-pack", "day-2-diff"):
        job = jobs[name]
        assert job["runs-on"] == "ubuntu-latest", name  # GitHub's runner: not the lab's network
        assert "environment" not in job and "if" not in job, name  # every pull request, forks too
        assert _secrets_named(job) == set(), name
    assert "pytest -q tests/policies" in _runs(jobs["policy-pack"])
    # the pack's verdicts on the lab stack, unpinned hosts included (the read-only preview cannot see
    # a connection whose key it is not given: it is unknown there)
    assert re.search(r"make plan STACK=lab\b", _runs(jobs["policy-pack"]))
    diff = _runs(jobs["day-2-diff"])
    assert re.search(r"make diff STACK=lab BASE=\S+", diff)
    assert "GITHUB_STEP_SUMMARY" in diff


def test_the_lab_preview_waits_for_a_reviewer_never_runs_for_forks_and_reads_only():
    _, jobs = _load("preview.yml")
    job = jobs["preview"]
    assert job["environment"] == "lab-preview"  # required reviewers (docs/security.md)
    assert "github.event.pull_request.head.repo.full_name == github.repository" in job["if"]
    assert "gpu-lab-preview" in job["runs-on"] and "gpu-lab" not in job["runs-on"]  # not up's runner
    named = _secrets_named(job)
    assert named & WRITE_SECRETS == set()
    assert named <= PREVIEW_SECRETS, named - PREVIEW_SECRETS
    # the file's code (its comments name them to say they are never given) never mentions them
    assert not WRITE_SECRETS & set(re.findall(r"\b[A-Z_]+\b", _code((WORKFLOWS / "preview.yml").read_text())))
    script = _code(_runs(job))
    keys = _secrets_set(script)
    assert keys["vsphere:password"] == "VSPHERE_PREVIEW_PASSWORD"
    assert 'vsphere:user "$VSPHERE_PREVIEW_USER"' in script
    # a preview runs no Command: the helper key and the switch passwords stay unset
    assert "gpu-lab:helperSshPrivateKey" not in keys and "gpu-lab:switchPasswords" not in script
    assert set(keys) == {f"{n}:{k}" for a, n, k, is_object in SECRET_KEYS
                         if not is_object and a not in PREVIEW_OPTIONAL}
    assert not re.search(r"pulumi (up|destroy|refresh|import|state)\b", script)


def test_the_preview_and_up_start_from_a_clean_runner():
    for name, job in (("preview.yml", "preview"), ("up.yml", "up")):
        steps = _load(name)[1][job]["steps"]
        runs = [s.get("run", "") for s in steps]
        checkout = next(i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/checkout@"))
        wipe = next(i for i, r in enumerate(runs) if 'find "$GITHUB_WORKSPACE" -mindepth 1' in r)
        home = next(i for i, r in enumerate(runs) if "PULUMI_HOME=" in r)
        assert wipe < checkout and home < checkout, name
        assert '>> "$GITHUB_ENV"' in runs[home], name
        assert steps[checkout]["with"]["persist-credentials"] is False, name
        if name == "preview.yml":
            assert re.search(r'home="\$RUNNER_TEMP/pulumi-home"', runs[home]) and 'rm -rf "$home"' in runs[home]
            assert any(s.get("if") == "always()" and 'rm -rf "${PULUMI_HOME:?}"' in s.get("run", "") for s in steps)
        else:
            # up: the Pulumi home is one of the job's private directories, removed with them
            # (tests/tools/test_up_steps.py runs both steps)
            assert 'job=$(mktemp -d "$RUNNER_TEMP/' in runs[home] and 'echo "PULUMI_HOME=$job/' in runs[home]
            assert steps[-1]["if"] == "always()" and 'rm -rf -- "$GPU_LAB_JOB_DIR"' in steps[-1]["run"]


# ---------------------------------------------------------------- up: only main, only approved


def test_up_runs_only_from_main():
    on, jobs = _load("up.yml")
    job = jobs["up"]
    assert set(on) == {"push", "workflow_dispatch"} and on["push"]["branches"] == ["main"]
    assert job["if"] == "github.ref == 'refs/heads/main'"
    first = job["steps"][0]
    assert first["env"]["REF"] == "${{ github.ref }}"
    for ref, refused in (("refs/heads/main", False), ("refs/heads/feature", True), ("refs/tags/v1", True),
                         ("refs/pull/7/merge", True), ("refs/heads/main-old", True)):
        done = subprocess.run(["bash", "-c", first["run"]], env={"REF": ref, "PATH": os.environ["PATH"]},
                              capture_output=True, text=True, timeout=30)
        assert (done.returncode != 0) == refused, ref
        assert (f"not from {ref}" in done.stderr) == refused


# GitHub's REST API for GET /repos/{owner}/{repo}/environments/{name} and its deployment branch
# policies ("REST API endpoints for deployment environments",
# https://docs.github.com/en/rest/deployments/environments): tools/up_environment.py reads them,
# tests/tools/test_up_steps.py holds its fixtures and runs the step against a local API.


def test_up_checks_the_lab_environment_before_it_builds_anything():
    _, jobs = _load("up.yml")
    steps = jobs["up"]["steps"]
    assert jobs["up"]["environment"] == "lab"
    check = next(i for i, s in enumerate(steps) if s.get("run") == "bash scripts/up-steps.sh environment")
    setup = next(i for i, s in enumerate(steps) if s.get("run") == "make setup")
    checkout = next(i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout < check < setup  # the script comes with the checkout; nothing is built before it
    assert steps[check]["env"]["GH_TOKEN"] == "${{ github.token }}"
    data = yaml.safe_load((WORKFLOWS / "up.yml").read_text())
    assert data["permissions"] == {"contents": "read", "actions": "read"}  # actions: read lets the token read it


def test_up_removes_the_install_directory_whatever_happened():
    _, jobs = _load("up.yml")
    last = jobs["up"]["steps"][-1]
    assert last["if"] == "always()"
    assert "rm -rf build/*/openshift-install" in last["run"]
    # where the program puts it by default (components/openshift/component.py)
    from components.openshift import component
    assert 'f"build/{pulumi.get_stack()}/openshift-install"' in Path(component.__file__).read_text()


PINNED = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")


@pytest.mark.parametrize("name", ["preview.yml", "up.yml"])
def test_every_action_is_pinned_by_commit(name):
    _, jobs = _load(name)
    uses = [s["uses"] for job in jobs.values() for s in job["steps"] if "uses" in s]
    assert uses
    for action in uses:
        assert PINNED.match(action), action
    # the tag beside each pin, for whoever updates it
    for line in (WORKFLOWS / name).read_text().splitlines():
        if "uses:" in line:
            assert re.search(r"@[0-9a-f]{40}  # v\d+\.\d+\.\d+$", line), line
