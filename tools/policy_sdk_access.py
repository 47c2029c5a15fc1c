"""The pulumi-policy internals the tools and tests read (never the pack: its own are in
policies/rules/pulumi_policy_internals.py): the SDK's wire encoding and decoding, the proxy it wraps
a resource's properties in and the module whose globals the pack's patches replace.
None is among `pulumi_policy`'s exports; tests/test_sdk_internals.py pins each against the
pulumi-policy the pack's internals were checked against (their CHECKED_VERSION).
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

import pulumi_policy.policy as _servicer_module
from pulumi_policy.deserialize import deserialize_properties as _deserialize_properties
from pulumi_policy.deserialize import serialize_properties as _serialize_properties
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError, unknown_checking_proxy

__all__ = ["UNKNOWN_STRING_VALUE", "UnknownValueError", "sdk_deserialize_properties", "serialize_properties",
           "servicer_module", "unknown_checking_proxy"]
"""Also: `unknown_checking_proxy`, the proxy a validation reads a resource's properties through,
`UnknownValueError`, what it raises on an unknown, and `UNKNOWN_STRING_VALUE`, one of the unknown
sentinels it checks for (pulumi_policy/proxy.py)."""


def serialize_properties(props: Mapping[str, Any]) -> Mapping[str, Any]:
    """Python values to the engine's wire form as the SDK encodes them: assets, archives and `Secret`s
    become their signature objects (pulumi_policy/deserialize.py, serialize_properties)."""
    return _serialize_properties(props)


def sdk_deserialize_properties(props: dict[str, Any]) -> dict[str, Any]:
    """The SDK's own decoding of the wire form, as its servicer runs it unpatched: secrets unwrapped
    (pulumi_policy/deserialize.py, deserialize_properties)."""
    return _deserialize_properties(props)


def servicer_module() -> types.ModuleType:
    """`pulumi_policy.policy`, whose module globals the gRPC servicer looks up at each request and the
    pack's patches replace (for tests that check and restore them)."""
    return _servicer_module
