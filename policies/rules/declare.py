"""Turning a check function into a pulumi-policy rule.

A rule's description is its check function's docstring, re-flowed to one line: the text that
says which guide asks for the rule and why sits on the code that enforces it, and each rule is
declared in one line instead of a block of keyword arguments.

A resource rule names the resource types it judges (``types``: type tokens, or a predicate on
the type token); the pack then runs it only for resources of those types (``judges``), since the
engine sends every resource to every rule one at a time during preview. A rule that names no
types judges every resource. The check function keeps its own type test, so calling it directly
(the tests do) gives the same verdicts.
"""

from __future__ import annotations

from collections.abc import Callable

from pulumi_policy import EnforcementLevel, Policy, PolicyConfigSchema, ResourceValidationPolicy, StackValidationPolicy

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY

Types = tuple[str, ...] | Callable[[str], bool]

_TYPES_JUDGED: dict[str, Callable[[str], bool]] = {}  # rule name -> does it judge this type


def _description(check: Callable) -> str:
    if not check.__doc__:
        # python -OO drops docstrings; a rule without its description must not load silently
        raise RuntimeError(f"{check.__name__} has no docstring, which is its rule's description")
    return " ".join(check.__doc__.split())


def resource_policy(name: str, level: EnforcementLevel, check: Callable,
                    schema: PolicyConfigSchema | None = None, types: Types | None = None) -> ResourceValidationPolicy:
    if types is not None:
        if callable(types):
            _TYPES_JUDGED[name] = types
        else:
            _TYPES_JUDGED[name] = frozenset(types).__contains__
    return ResourceValidationPolicy(name=name, description=_description(check), enforcement_level=level,
                                    config_schema=schema, validate=check)


def stack_policy(name: str, level: EnforcementLevel, check: Callable,
                 schema: PolicyConfigSchema | None = None) -> StackValidationPolicy:
    return StackValidationPolicy(name=name, description=_description(check), enforcement_level=level,
                                 config_schema=schema, validate=check)


def judges(policy: Policy, resource_type: str) -> bool:
    """Whether a resource rule judges resources of this type (rules that named no types judge all)."""
    matches = _TYPES_JUDGED.get(policy.name)
    return matches is None or matches(resource_type)
