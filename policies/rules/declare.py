"""Turning a check function into a pulumi-policy rule.

A rule's description is its check function's docstring, re-flowed to one line: the text that
says which guide asks for the rule and why sits on the code that enforces it, and each rule is
declared in one line instead of a block of keyword arguments.
"""

from __future__ import annotations

from typing import Callable

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationPolicy, StackValidationPolicy

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY


def _description(check: Callable) -> str:
    if not check.__doc__:
        # python -OO drops docstrings; a rule without its description must not load silently
        raise RuntimeError(f"{check.__name__} has no docstring, which is its rule's description")
    return " ".join(check.__doc__.split())


def resource_policy(name: str, level: EnforcementLevel, check: Callable,
                    schema: PolicyConfigSchema | None = None) -> ResourceValidationPolicy:
    return ResourceValidationPolicy(name=name, description=_description(check), enforcement_level=level,
                                    config_schema=schema, validate=check)


def stack_policy(name: str, level: EnforcementLevel, check: Callable,
                 schema: PolicyConfigSchema | None = None) -> StackValidationPolicy:
    return StackValidationPolicy(name=name, description=_description(check), enforcement_level=level,
                                 config_schema=schema, validate=check)
