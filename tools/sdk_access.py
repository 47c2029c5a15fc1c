"""The Pulumi SDK internals the tools and tests read (never the program): the root Stack's exports,
a registration's properties as the wire carries them, an Output's value from outside the event loop,
the preview's Unknown and the SDK's args-to-dict, and the wire's own forms (secret, asset, unknown) that
tests build requests and expectations from.
None has a public equivalent; tests/test_sdk_internals.py pins each against components.sdk_internals'
CHECKED_AGAINST version. Why each is needed: docs/engine.md ("The SDK boundary").
"""

from __future__ import annotations

from typing import Any

from pulumi._types import input_type_to_dict
from pulumi.output import Unknown
from pulumi.runtime import get_root_resource
from pulumi.runtime import rpc as _rpc
from pulumi.runtime.sync_await import _sync_await

__all__ = ["ASSET_SIG", "SECRET_SIG", "SIG_KEY", "UNKNOWN", "Unknown", "deserialize_properties", "input_type_to_dict",
           "is_secret_value", "resolved", "stack_exports", "unwrap_secret", "wrap_secret"]
"""Also: `Unknown`, what the mocks record for a value unknown in a preview (pulumi/output.py), and
`input_type_to_dict`, an args class's properties as the SDK registers them (pulumi/_types.py)."""


def stack_exports() -> dict[str, Any]:
    """The values given to `pulumi.export` in this run, by name (Inputs, not resolved): the root Stack's
    `outputs` (pulumi/pulumi sdk/python/lib/pulumi/runtime/stack.py, Stack)."""
    root = get_root_resource()
    if root is None:
        raise RuntimeError("no root Stack: run the program under pulumi.runtime.set_mocks first")
    return dict(root.outputs)  # type: ignore[attr-defined]  # Stack's; AttributeError, not {}, if it goes


# read with getattr: an SDK without one still imports, and tests/test_sdk_internals.py names what went
SIG_KEY: str = getattr(_rpc, "_special_sig_key", "")
"""The key that marks a wire value as special (rpc.py, _special_sig_key; the engine's sig.Key)."""
SECRET_SIG: str = getattr(_rpc, "_special_secret_sig", "")
"""SIG_KEY's value for a secret, `{SIG_KEY: SECRET_SIG, "value": ...}` (rpc.py, _special_secret_sig)."""
ASSET_SIG: str = getattr(_rpc, "_special_asset_sig", "")
"""SIG_KEY's value for an asset (rpc.py, _special_asset_sig)."""
UNKNOWN: str = getattr(_rpc, "UNKNOWN", "")
"""The string the wire carries for a value unknown during preview (rpc.py, UNKNOWN)."""


def deserialize_properties(struct: Any, keep_unknowns: bool = False) -> dict[str, Any]:
    """A registration request's `object` Struct as Python values; secrets stay marked, and with
    `keep_unknowns` an unknown is an `Unknown` (as pulumi.dynamic's Check and Diff decode)
    (pulumi/pulumi sdk/python/lib/pulumi/runtime/rpc.py, deserialize_properties)."""
    if keep_unknowns:
        return _rpc.deserialize_properties(struct, True)
    return _rpc.deserialize_properties(struct)


def is_secret_value(value: Any) -> bool:
    """True for a deserialized property value the program marked secret (rpc.py, is_rpc_secret)."""
    return _rpc.is_rpc_secret(value)


def wrap_secret(value: Any) -> Any:
    """`value` in the engine's secret wire form (rpc.py, wrap_rpc_secret)."""
    return _rpc.wrap_rpc_secret(value)


def unwrap_secret(value: Any) -> Any:
    """A deserialized property value without its secret wrapper; others as they are (rpc.py, unwrap_rpc_secret)."""
    return _rpc.unwrap_rpc_secret(value)


def resolved(output: Any) -> tuple[Any, bool]:
    """The Output's value and whether it is secret, waiting for both (sync_await.py, _sync_await: what
    `@pulumi.runtime.test` itself uses)."""
    return _sync_await(output.future()), _sync_await(output.is_secret())
