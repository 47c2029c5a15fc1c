"""The only place the project touches Pulumi SDK internals: parts with no public equivalent.

Checked against pulumi 3.272.0 (Python SDK). tests/test_sdk_internals.py pins each name, its
signature and the behaviour relied on, and names the installed SDK version when one changes.
Everything else goes through the public API: `pulumi.runtime.set_mocks` and
`@pulumi.runtime.test` run the program offline and wait for all its outstanding work,
`pulumi.runtime.reset_options` drops the previous run's root Stack, `pulumi.CustomResource`
registers a Kubernetes object the typed classes cannot carry.

- `stack_exports()`: what the program passed to `pulumi.export`, i.e. the root Stack's `outputs`
  dict (`pulumi.runtime.stack.Stack.outputs`). Public API only writes exports; the engine reads
  them when the Stack registers its outputs at the end of a real run. Under `set_mocks` the root
  Stack registers (empty) outputs before the program starts, so neither the mock monitor nor a
  public getter ever sees them.
- `deserialize_properties(struct)`, `is_secret_value(value)`: `pulumi.runtime.rpc`'s decoding of
  a registration's property Struct, keeping secrets as the wire protocol's marked dicts. The
  recording monitor reads the RegisterResource request itself because the public
  `MockResourceArgs` carry no parent URN, which the plan's tree needs; `pulumi.runtime.rpc` is not
  among `pulumi.runtime`'s exports.
- `resolved(output)`: an Output's value and secretness, awaited from outside the SDK's event loop
  (tests that build one component and inspect its Outputs). The public way is to assert inside an
  `apply` of a `@pulumi.runtime.test` function; `pulumi.runtime.sync_await._sync_await` is what that
  decorator itself uses.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import get_root_resource
from pulumi.runtime import rpc as _rpc
from pulumi.runtime.sync_await import _sync_await

CHECKED_AGAINST = {"pulumi": "3.272.0"}


def stack_exports() -> dict[str, Any]:
    """The values given to `pulumi.export` in this run, by name (Inputs, not resolved)."""
    root = get_root_resource()
    if root is None:
        raise RuntimeError("no root Stack: run the program under pulumi.runtime.set_mocks first")
    return dict(root.outputs)  # type: ignore[attr-defined]  # Stack's; AttributeError, not {}, if it goes


def deserialize_properties(struct: Any) -> dict[str, Any]:
    """A registration request's `object` Struct as Python values; secrets stay marked."""
    return _rpc.deserialize_properties(struct)


def is_secret_value(value: Any) -> bool:
    """True for a deserialized property value the program marked secret."""
    return _rpc.is_rpc_secret(value)


def resolved(output: Any) -> tuple[Any, bool]:
    """The Output's value and whether it is secret, waiting for both."""
    return _sync_await(output.future()), _sync_await(output.is_secret())
