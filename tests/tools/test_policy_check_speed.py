"""The policy pass skips the Remediate round when no policy remediates and pipelines Analyze:
the verdicts must be exactly those of the one-at-a-time Remediate-then-Analyze loop."""

from pathlib import Path

import plan_fixtures

from tools import policy_check

PACK = Path(__file__).resolve().parents[2] / "policies"


def _verdicts(report):
    return [v.as_dict() for v in report.verdicts], report.not_applicable


def test_fast_pass_gives_the_same_verdicts_as_the_cli_order(monkeypatch):
    for fixture in ("broken-fabric", "broken-workloads", "lab"):
        stack = policy_check.parse_stack(plan_fixtures.STACKS[fixture]())
        fast = _verdicts(policy_check.check(stack, PACK))
        with monkeypatch.context() as m:
            m.setattr(policy_check, "ANALYZE_IN_FLIGHT", 1)
            m.setattr(policy_check, "needs_remediate_pass", lambda levels: True)
            slow = _verdicts(policy_check.check(stack, PACK))
        assert fast == slow, fixture
        if fixture != "lab":
            assert fast[0], "a broken fixture must produce verdicts"


def test_remediate_pass_only_for_a_policy_at_the_remediate_level():
    # pulumi_policy's Remediate skips every policy whose enforcement level is not "remediate"
    # (pulumi_policy/policy.py, PolicyAnalyzerServicer.Remediate).
    assert not policy_check.needs_remediate_pass({"a": "advisory", "b": "mandatory", "c": "disabled"})
    assert policy_check.needs_remediate_pass({"a": "advisory", "b": "remediate"})
