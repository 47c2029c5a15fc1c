"""The CI workflows run the pack the way users are told to, and feed every lab secret."""

import json
import re

import pytest
import yaml
from policy_helpers import ROOT

from components.secrets import SECRET_KEYS  # the program's list of secrets

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


@pytest.mark.parametrize("name, job", [("preview.yml", "preview"), ("up.yml", "up")])
def test_every_lab_secret_comes_from_github_secrets(name, job):
    _, jobs = _load(name)
    script = _runs(jobs[job])
    for _attribute, namespace, key, is_object in SECRET_KEYS:
        if is_object:
            assert f"{namespace}:{key}." in script, key
        else:
            assert re.search(rf"set_secret {namespace}:{key} \"\$\w+\"", script), key
    text = (WORKFLOWS / name).read_text()
    for env_name in re.findall(r"set_secret \S+ \"\$(\w+)\"", script):
        assert re.search(rf"{env_name}: \$\{{\{{ secrets\.\w+ \}}\}}", text), env_name
