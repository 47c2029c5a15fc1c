"""Helpers for the policy-pack tests (imported by name; conftest.py only adds fixtures).

Rules are called directly, but their arguments are built exactly as the pack's server builds them
for a gRPC request: fixture resource -> engine wire form (tools/policy_check.mark: secret
signatures, unknown sentinels) -> protobuf Struct -> MessageToDict -> rules.props.decode (the
secret-keeping deserializer the pack installs) -> the SDK's unknown-checking proxy.
"""

from __future__ import annotations

import copy
from pathlib import Path

from google.protobuf import json_format
from plan_fixtures import find, props  # noqa: F401  (the tests import them from here)
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
    StackValidationPolicy,
)

from rules.props import decode
from tools import policy_check
from tools.policy_sdk_access import unknown_checking_proxy

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "policies"


def engine_props(wire: dict):
    """Wire-form properties as the pack's Analyze sees them (through a real protobuf Struct)."""
    as_dict = json_format.MessageToDict(policy_check.to_struct(wire))
    return unknown_checking_proxy(decode(as_dict))


def _opts(parent: str) -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], parent or None)


def args_for(r, config: dict | None = None) -> ResourceValidationArgs:
    """ResourceValidationArgs of one resource of a parsed stack."""
    return ResourceValidationArgs(r.type, engine_props(r.properties), r.urn, r.name, _opts(r.parent), None, config)


def resource_args(stack: dict, name: str, config: dict | None = None) -> ResourceValidationArgs:
    (r,) = [x for x in policy_check.parse_stack(copy.deepcopy(stack)).resources if x.name == name]
    return args_for(r, config)


def stack_args(stack: dict, config: dict | None = None, parsed=None) -> StackValidationArgs:
    parsed = parsed or policy_check.parse_stack(copy.deepcopy(stack))
    by_urn = {}
    resources = []
    for r in parsed.resources:
        pr = PolicyResource(r.type, engine_props(r.outputs), r.urn, r.name, _opts(r.parent), None, None, [], {})
        by_urn[r.urn] = pr
        resources.append((pr, r))
    for pr, r in resources:
        pr.parent = by_urn.get(r.parent)
        pr.dependencies = [by_urn[u] for u in r.dependencies if u in by_urn]
        pr.property_dependencies = {k: [by_urn[u] for u in v if u in by_urn]
                                    for k, v in r.property_dependencies.items()}
    return StackValidationArgs([pr for pr, _ in resources], config)


def violations(policy, stack: dict, config: dict | None = None) -> list[tuple[str, str]]:
    """(resource name, message) for every violation the policy reports on the stack."""
    found: list[tuple[str, str]] = []
    parsed = policy_check.parse_stack(copy.deepcopy(stack))
    if isinstance(policy, StackValidationPolicy):
        names = {r.urn: r.name for r in parsed.resources}
        policy.validate(stack_args(stack, config, parsed),
                        lambda msg, urn=None: found.append((names.get(urn, ""), msg)))
    else:
        for r in parsed.resources:
            policy.validate(args_for(r, config), lambda msg, urn=None, n=r.name: found.append((n, msg)))
    return found
