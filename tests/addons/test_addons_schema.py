"""Every core Kubernetes object the add-ons register is valid against the Kubernetes schemas.

kubernetes-validate checks the manifest the provider would send (strict: unknown fields fail),
for the lab stack, plain Kubernetes, OpenShift and bare metal.
"""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest
from addons_harness import kube_objects, manifest

KUBERNETES_VERSION = "1.33"  # OpenShift 4.20's Kubernetes
CORE_GROUPS = ("v1", "apps/v1", "batch/v1", "rbac.authorization.k8s.io/v1", "admissionregistration.k8s.io/v1")


def core_manifests(run) -> list[dict]:
    return [manifest(r) for r in kube_objects(run) if manifest(r)["apiVersion"] in CORE_GROUPS]


def assert_valid(manifests: list[dict]) -> None:
    failures = []
    for m in manifests:
        try:
            kubernetes_validate.validate(m, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as err:
            failures.append(f"{m['kind']} {m['metadata']['name']}: {err.message}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("fixture", ["full_run", "openshift_run", "baremetal_run", "stack_run"])
def test_core_objects_are_valid(fixture, request):
    manifests = core_manifests(request.getfixturevalue(fixture))
    kinds = {m["kind"] for m in manifests}
    assert {"Namespace", "ServiceAccount", "Job"} <= kinds
    assert_valid(manifests)


def test_every_core_kind_is_covered(full_run, openshift_run):
    kinds = {m["kind"] for run in (full_run, openshift_run) for m in core_manifests(run)}
    assert kinds == {"Namespace", "Secret", "ConfigMap", "ServiceAccount", "Service", "DaemonSet", "Deployment",
                     "Job", "ClusterRole", "RoleBinding", "MutatingWebhookConfiguration",
                     "ValidatingWebhookConfiguration"}


@pytest.mark.parametrize("breakage", ["unknown field", "wrong type", "missing field"])
def test_the_validator_catches_broken_objects(full_run, breakage):
    job = copy.deepcopy(next(m for m in core_manifests(full_run) if m["kind"] == "Job"))
    container = job["spec"]["template"]["spec"]["containers"][0]
    if breakage == "unknown field":
        container["securityContext"] = {"privilegd": True}
    elif breakage == "wrong type":
        job["spec"]["backoffLimit"] = "two"
    else:
        del container["name"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, KUBERNETES_VERSION, strict=True)
