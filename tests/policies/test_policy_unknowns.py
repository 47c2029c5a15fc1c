"""Values unknown during preview never crash a rule and never make a compliant stack fail."""

import copy

import plan_fixtures
import pytest
from policy_helpers import args_for, policy_check, stack_args, violations
from pulumi_policy import StackValidationPolicy

from rules import ALL_POLICIES

RESOURCE_POLICIES = [p for p in ALL_POLICIES if not isinstance(p, StackValidationPolicy)]
STACK_POLICIES = [p for p in ALL_POLICIES if isinstance(p, StackValidationPolicy)]


def _leaves(value, path=""):
    """Every property path of a resource, containers included (a whole list or object can be unknown)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if "." in k or "[" in k:
                p = f'{path}["{k}"]'
            else:
                p = f"{path}.{k}" if path else k
            yield p
            yield from _leaves(v, p)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            p = f"{path}[{i}]"
            yield p
            yield from _leaves(v, p)


LAB = plan_fixtures.lab()
CASES = [(r["name"], path) for r in LAB["resources"] for path in _leaves(r["properties"])]


def test_there_are_many_cases():
    assert len(CASES) > 400


@pytest.mark.parametrize("policy", ALL_POLICIES, ids=lambda p: p.name)
def test_preview_fixture_passes_every_rule(policy):
    assert violations(policy, plan_fixtures.preview_unknowns()) == []


def test_every_single_unknown_property_leaves_the_lab_compliant():
    """One property at a time turned unknown, every rule: no exception, no violation."""
    failures = []
    for name, path in CASES:
        stack = copy.deepcopy(LAB)
        (resource,) = [r for r in stack["resources"] if r["name"] == name]
        resource["unknownPaths"] = [path]
        found = []
        parsed = policy_check.parse_stack(stack)
        (r,) = [x for x in parsed.resources if x.name == name]
        args = args_for(r)
        for policy in RESOURCE_POLICIES:
            policy.validate(args, lambda msg, urn=None, p=policy.name, f=found: f.append((p, msg)))
        if _matters_to_stack_rules(resource["type"]):
            sargs = stack_args(stack, parsed=parsed)
            for policy in STACK_POLICIES:
                policy.validate(sargs, lambda msg, urn=None, p=policy.name, f=found: f.append((p, msg)))
        if found:
            failures.append((name, path, found))
    assert failures == []


def _matters_to_stack_rules(type_: str) -> bool:
    # the stack rules read only these types; skipping the rest keeps the test fast
    return type_.startswith(("gpu-lab:", "vsphere:", "pulumi-python:dynamic"))


@pytest.mark.parametrize("name", [r["name"] for r in LAB["resources"]])
def test_a_resource_with_every_property_unknown_leaves_the_lab_compliant(name):
    stack = copy.deepcopy(LAB)
    (resource,) = [r for r in stack["resources"] if r["name"] == name]
    resource["unknownPaths"] = list(resource["properties"])
    resource.pop("secretPaths", None)
    for policy in ALL_POLICIES:
        assert violations(policy, stack) == [], policy.name
