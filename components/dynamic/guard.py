"""LabIdentity: the lab's identity (components/identity_rules.py) kept in the state by a dynamic
resource whose check refuses an edit a running lab cannot take, and `guard_deployed`, the same
refusal from the recorded state where the engine skips that check (`--target`, `--replace`).
How the two halves cover each other: docs/day2.md and docs/engine.md ("The identity guard").

The provider class is pickled into the state by module and name (docs/engine.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from components.dynamic.provider import DYNAMIC_PACKAGE
from components.identity_rules import IDENTITY_KEYS, identity_problems, identity_warnings
from components.model import whole_numbers

KIND = "lab-identity"
READ_STATE = "pulumi:pulumi:readStackResourceOutputs"
"""The engine's builtin invoke that returns every resource's outputs of a stack's last deployment."""
READ_OUTPUTS = "pulumi:pulumi:readStackOutputs"
"""The builtin invoke behind StackReference: the stack outputs of the last deployment, {} when there is
none. Asked first: READ_STATE dereferences the last deployment without checking that there is one
(pulumi/pulumi pkg/backend/backend.go, GetStackResourceOutputs), which a stack never deployed lacks."""
OUTPUT = "labIdentity"
"""The stack output every deployment of this program has (a digest of the identity), so READ_OUTPUTS
tells a deployed stack from a new one."""


class _IdentityProvider(ResourceProvider):
    """Holds the identity in the state; its check refuses a change a running lab cannot take."""

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        old, new = _plain(olds), _plain(news)
        if not old:  # created now: nothing runs yet to protect
            return CheckResult(news, [])
        # An empty property name: the engine then reports the reason alone, not the whole property value.
        return CheckResult(news, [CheckFailure("", problem) for problem in identity_problems(old, new)])

    def warnings(self, olds: dict[str, Any], news: dict[str, Any]) -> list[str]:
        """What the check could not judge (not a gRPC method: `make diff` and guard_deployed print them)."""
        old = _plain(olds)
        return identity_warnings(old, _plain(news)) if old else []

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=_plain(olds) != _plain(news), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(KIND, _plain(props))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(_plain(news))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        return None


def _plain(props: Mapping[str, Any]) -> dict[str, Any]:
    return {k: whole_numbers(v) for k, v in props.items() if k in IDENTITY_KEYS}


_PROVIDER = _IdentityProvider()


class LabIdentity(Resource):
    """The lab's identity in the state; a preview that would change it in place fails, naming the change."""

    def __init__(self, name: str, identity: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(_PROVIDER, name, {"kind": KIND, **identity}, opts)


@dataclass(frozen=True)
class DeployedState:
    """What the stack's last deployment recorded, read once before anything registers."""

    resources: Mapping[str, Mapping[str, Any]] | None
    """URN -> {"type", "outputs"} (the engine's readStackResourceOutputs); None when it could not be read."""
    deployed: bool
    """False for a stack never deployed (nothing to protect, no node that runs)."""
    problem: str = ""
    """Why the state could not be read."""

    def names_of(self, type_: str) -> frozenset[str] | None:
        """The names of the deployed resources of `type_`; None when the state could not be read."""
        if self.resources is None:
            return None
        return frozenset(urn.rsplit("::", 1)[-1] for urn, entry in self.resources.items()
                         if (entry or {}).get("type") == type_)


def read_deployed_state() -> DeployedState:
    """The last deployment's resources and outputs; a failure to read is returned, not raised, so each
    reader decides what is safe without it (the guard warns, the node rolls keep their order)."""
    organization = pulumi.get_organization() or "organization"
    stack = f"{organization}/{pulumi.get_project()}/{pulumi.get_stack()}"
    try:
        outputs = (pulumi.runtime.invoke(READ_OUTPUTS, {"name": stack}).value or {}).get("outputs") or {}
        if not outputs:
            return DeployedState({}, deployed=False)  # never deployed (or by a gpu-lab that exported nothing)
        result = pulumi.runtime.invoke(READ_STATE, {"stackName": stack}).value or {}
    except Exception as err:  # noqa: BLE001 - any failure to read: the readers' safe side, never a silent pass
        return DeployedState(None, deployed=True, problem=f"reading the state of {stack}: {err}")
    return DeployedState(dict(result.get("outputs") or {}), deployed=True)


def guard_deployed(name: str, identity: Mapping[str, Any], state: DeployedState) -> None:
    """Refuse, before anything is registered, an edit the deployed lab cannot take: the identity the
    last deployment recorded (the `name` LabIdentity's state) against `identity`. Holds where the
    resource's check does not run (`--target`, `--replace`; see the module docstring). A deployment
    that recorded none (a new stack) has nothing to protect; an unreadable state is warned about."""
    deployed, why = _deployed_identity(name, state)
    if deployed is None:
        if not state.deployed:
            # The engine cannot say more without risk: readStackResourceOutputs dereferences the last
            # deployment unchecked (READ_OUTPUTS), so a stack with no outputs is not asked for its resources.
            pulumi.log.info("lab-identity: the stack records no outputs (never deployed, or its first `up` stopped "
                            "before writing them): only the preview's check of lab-identity protects this run, and "
                            "the node rolls go one at a time through their provider's lock")
        elif why:
            pulumi.log.warn(f"lab-identity: the guard cannot read the deployed identity ({why}); only the preview's "
                            "check of lab-identity protects this run, and it does not run under --target or "
                            "--replace")
        return
    for warning in identity_warnings(deployed, identity):
        pulumi.log.warn(f"lab-identity: {warning}")
    problems = identity_problems(deployed, identity)
    if problems:
        raise pulumi.RunError("a running lab cannot take this edit (the deployed lab-identity, read from the stack's "
                              "state, whatever --target or --replace say):\n"
                              + "\n".join(f"  - {problem}" for problem in problems))


def identity_digest(identity: Mapping[str, Any]) -> str:
    """The stack output OUTPUT: which identity the deployment recorded, in short."""
    text = json.dumps(_plain({"kind": KIND, **identity}), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _deployed_identity(name: str, state: DeployedState) -> tuple[dict[str, Any] | None, str]:
    if state.resources is None:
        return None, state.problem
    if not state.deployed:
        return None, ""  # the preview's check only
    for urn, entry in state.resources.items():
        if urn.endswith(f"::{name}") and (entry or {}).get("type") == f"{DYNAMIC_PACKAGE}:dynamic:Resource":
            outputs = _plain((entry or {}).get("outputs") or {})
            if outputs.get("kind") == KIND:
                return outputs, ""
    return None, f"the stack's state has {len(state.resources)} resource(s) but no {name}"
