"""What every add-on module shares: where its children hang and which cluster they go to.

Objects are written as plain Kubernetes manifests (camelCase dicts) by pure functions in each
module, then registered here with the typed pulumi-kubernetes class for core objects and
`CustomResource` for CRDs, so the same dict is what tests and kubernetes-validate look at.
"""

from __future__ import annotations

import importlib.resources
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.mirror import MirrorPlan, write_chart_ca

# Operators and device plugins run privileged pods in their namespaces; OpenShift would
# otherwise rewrite the Pod Security labels from the SCCs a namespace's accounts may use.
PRIVILEGED_NAMESPACE_LABELS = {
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/audit": "privileged",
    "pod-security.kubernetes.io/warn": "privileged",
}
OPENSHIFT_NO_LABEL_SYNC = {"security.openshift.io/scc.podSecurityLabelSync": "false"}

SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}
"""Benchmarks run for minutes and are judged by the report, not by `pulumi up` waiting on them."""


@dataclass
class Kube:
    """Parent, provider and platform of the add-ons' children."""

    name: str
    parent: pulumi.Resource
    provider: k8s.Provider
    """Every child's provider; it depends on the nodes and VMs, which orders the children after them
    and deletes them first (ClusterAddonsArgs.after)."""
    openshift: bool
    nodes: Mapping[str, Sequence[pulumi.Resource]] = field(default_factory=dict)
    """Node name -> what a child pinned to that node also waits for (ClusterAddonsArgs.nodes)."""
    mirror: MirrorPlan | None = None
    """Where the charts come from when set."""

    def child(self, role: str) -> str:
        return f"{self.name}-{role}"

    def opts(self, depends_on: Sequence[pulumi.Resource | None] = (), **kwargs: Any) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(
            parent=self.parent, provider=self.provider,
            depends_on=[d for d in depends_on if d is not None], **kwargs,
        )

    def namespace(self, role: str, name: str, privileged: bool = True) -> pulumi.CustomResource:
        return self.register(role, namespace_manifest(name, privileged, self.openshift))

    def register(self, role: str, manifest: Mapping[str, Any], depends_on: Sequence[pulumi.Resource | None] = (),
              **kwargs: Any) -> pulumi.CustomResource:
        """Register one manifest under the typed class for its kind (CustomResource for CRDs)."""
        m = dict(manifest)
        api_version, kind = m.pop("apiVersion"), m.pop("kind")
        node = pinned_node(manifest)
        opts = self.opts([*depends_on, *self.nodes.get(node, ())] if node else depends_on, **kwargs)
        cls = _TYPED.get((api_version, kind))
        if cls is not None:
            return cls(self.child(role), opts=opts, **{_SNAKE.get(k, k): v for k, v in m.items()})
        if set(m) <= {"metadata", "spec"}:
            return k8s.apiextensions.CustomResource(self.child(role), api_version=api_version, kind=kind,
                                                    metadata=m.get("metadata"), spec=m.get("spec"), opts=opts)
        return FlatCustomResource(self.child(role), dict(manifest), opts)


class FlatCustomResource(pulumi.CustomResource):
    """A custom resource whose fields sit beside metadata, not under spec (e.g. an OpenShift SCC).

    The public `k8s.apiextensions.CustomResource` carries only `spec`, so this registers the whole
    manifest through the core constructor under the token that class uses (`kubernetes:<apiVersion>:<kind>`);
    the provider sends every input as the object. `yaml.v2.ConfigGroup(objs=...)` would take it too,
    but it is a component the provider builds remotely: under mocks its objects are never registered,
    so `make plan` and the policy pack would not see them.
    """

    def __init__(self, resource_name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions):
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=KUBERNETES_PLUGIN_VERSION))
        super().__init__(f"kubernetes:{manifest['apiVersion']}:{manifest['kind']}", resource_name, manifest, opts)


def _plugin_version(package: str) -> str:
    """The provider plugin a Pulumi package asks for: the version in its pulumi-plugin.json, which the language
    host reads."""
    return json.loads(importlib.resources.files(package).joinpath("pulumi-plugin.json").read_text())["version"]


KUBERNETES_PLUGIN_VERSION = _plugin_version("pulumi_kubernetes")
"""What pulumi-kubernetes' own classes send as the `version` option, for resources registered without them."""


_TYPED: dict[tuple[str, str], type] = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "Service"): k8s.core.v1.Service,
    ("apps/v1", "DaemonSet"): k8s.apps.v1.DaemonSet,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("batch/v1", "Job"): k8s.batch.v1.Job,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"):
        k8s.admissionregistration.v1.MutatingWebhookConfiguration,
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"):
        k8s.admissionregistration.v1.ValidatingWebhookConfiguration,
}

# Top-level manifest keys whose Python keyword differs.
_SNAKE = {"stringData": "string_data", "roleRef": "role_ref", "binaryData": "binary_data"}


HOSTNAME = "kubernetes.io/hostname"


def pinned_node(manifest: Mapping[str, Any]) -> str | None:
    """The node a workload's pods are bound to by its hostname label, if any."""
    template = (manifest.get("spec") or {}).get("template") or {}
    return ((template.get("spec") or {}).get("nodeSelector") or {}).get(HOSTNAME)


def role_of(manifest: Mapping[str, Any]) -> str:
    """Stable child role from kind and name, e.g. networkattachmentdefinition-rdma-net."""
    return f"{manifest['kind'].lower()}-{manifest['metadata']['name']}"


def namespace_manifest(name: str, privileged: bool, openshift: bool) -> dict[str, Any]:
    labels = dict(PRIVILEGED_NAMESPACE_LABELS) if privileged else {}
    if openshift and privileged:
        labels.update(OPENSHIFT_NO_LABEL_SYNC)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def metadata(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta.update({k: v for k, v in extra.items() if v})
    return meta


def helm_release(kube: Kube, role: str, chart, namespace: str, values: Mapping[str, Any],
                 depends_on: Sequence[pulumi.Resource | None] = ()) -> k8s.helm.v3.Release:
    """A Helm release the provider installs; nothing is fetched by this program.

    From a mirror's oci:// repository the chart is named by its reference, with no repo, as `helm install
    <name> oci://<registry>/<path>/<chart>` takes it (Helm, "Use OCI-based registries",
    https://helm.sh/docs/topics/registries/); the provider hands the chart to Helm's own locator.
    """
    name, repo = kube.mirror.chart(chart.chart) if kube.mirror is not None else (chart.chart, chart.repo)
    ca_file = write_chart_ca(kube.mirror) if kube.mirror is not None else None
    return k8s.helm.v3.Release(
        kube.child(role),
        name=role,
        chart=name,
        version=chart.version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(
            repo=repo, **({"ca_file": ca_file} if ca_file else {})) if repo is not None else None,
        namespace=namespace,
        values=dict(values),
        # Operators report ready long after install; their CRs below wait on the CRDs instead.
        skip_await=True,
        opts=kube.opts(depends_on),
    )
