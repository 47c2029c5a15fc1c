"""A recorded registration in comparable form: what `make diff` compares between the base and the
working tree (secrets as a hash, assets by content), written by the base's subprocess as JSON."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from tools.diff.paths import DYNAMIC_TYPE, ROOT_STACK_TYPE, SECRET, _urn_type
from tools.mockrun import Recorded, Run, unwrap_secrets
from tools.plan import describe_assets
from tools.program_model import whole_numbers

# ---------------------------------------------------------------- recorded resources, comparable


@dataclass
class Planned:
    """One registered resource in comparable form: secrets replaced by their hash, assets by their content hash."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    provider: str  # the explicit provider's URN, "" for the default provider
    id: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    protect: bool = False
    retain_on_delete: bool = False
    delete_before_replace: bool | None = None
    ignore_changes: list[str] = field(default_factory=list)
    replace_on_changes: list[str] = field(default_factory=list)
    aliases: list[dict[str, Any]] = field(default_factory=list)
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    dependencies: list[str] | None = None
    """The URNs the state lists as its dependencies; None in a recording that did not keep them (a baseline)."""
    deleted_with: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    """Derived from secret inputs before hashing: what a provider's rule needs (the kubeconfig's active cluster)."""
    provider_pickle: str | None = field(default=None, repr=False, compare=False)
    """A dynamic resource's serialized provider (in-process recordings only; never written)."""

    def document(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "provider_pickle"}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Planned:
        return cls(**doc)


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def comparable(value: Any) -> Any:
    """Recorded inputs as plain JSON: secrets as {SECRET: sha256 of the value}, assets by content hash."""
    from tools.sdk_access import is_secret_value

    if is_secret_value(value):
        return {SECRET: digest(comparable(value["value"]))}
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return describe_assets(whole_numbers(value))


def planned(r: Recorded) -> Planned:
    facts: dict[str, Any] = {}
    if r.type == "pulumi:providers:kubernetes":
        facts["activeCluster"] = _active_cluster(unwrap_secrets(r.inputs))
    pickle = None
    if r.type == DYNAMIC_TYPE and r.inputs.get("__provider") is not None:
        pickle = unwrap_secrets(r.inputs["__provider"])
    return Planned(
        urn=r.urn, type=r.type, name=r.name, parent=_parent(r.parent_urn), custom=r.custom,
        provider=r.provider.rsplit("::", 1)[0] if r.provider else "", id=r.id,
        inputs=comparable(r.inputs), outputs=comparable(r.outputs),
        protect=r.protect, retain_on_delete=r.retain_on_delete, delete_before_replace=r.delete_before_replace,
        ignore_changes=list(r.ignore_changes), replace_on_changes=list(r.replace_on_changes),
        aliases=list(r.aliases), property_dependencies=dict(r.property_dependencies),
        dependencies=sorted(r.dependencies), deleted_with=r.deleted_with,
        facts=facts, provider_pickle=pickle,
    )


def snapshot(run: Run) -> list[Planned]:
    return [planned(r) for r in run.resources]


def _parent(urn: str) -> str:
    return "" if not urn or _urn_type(urn) == ROOT_STACK_TYPE else urn


# ---------------------------------------------------------------- kubeconfig facts


def _active_cluster(inputs: Mapping[str, Any]) -> str | None:
    """A hash of the cluster entry the kubeconfig's active context names (DiffConfig's
    getActiveClusterFromConfig), None when it cannot be read."""
    try:
        config = yaml.safe_load(inputs.get("kubeconfig") or "")
        context_name = inputs.get("context") or config.get("current-context")
        context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
        cluster_name = inputs.get("cluster") or context["cluster"]
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == cluster_name)
        return digest(cluster)
    except Exception:  # noqa: BLE001 - any unreadable kubeconfig: unknown
        return None
