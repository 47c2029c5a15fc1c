"""addons-mirror-only: with `gpu-lab:mirror` no add-on names a public registry or chart repository."""

from __future__ import annotations

from pathlib import Path

import plan_fixtures
import pytest
from policy_helpers import violations

from rules import mirror
from rules.declare import MANDATORY

CA = (Path(__file__).resolve().parents[1] / "addons" / "data" / "mirror-ca.pem").read_text()
MIRROR = {"registry": "registry.lab.local:5000/mirror", "charts": "https://charts.lab.local/gpu-lab", "caBundle": CA}


@pytest.fixture(scope="module")
def mirrored() -> dict:
    config = plan_fixtures.policy_stack_config()
    config["gpu-lab:mirror"] = MIRROR
    return plan_fixtures.plan_of(config)


def _addons(stack: dict) -> dict:
    return next(r for r in stack["resources"] if r["type"] == mirror.CLUSTER_ADDONS)


def test_is_mandatory():
    assert mirror.mirror_only.enforcement_level == MANDATORY


def test_a_mirrored_lab_passes(mirrored):
    assert _addons(mirrored)["properties"]["mirror"]["registry"] == MIRROR["registry"]
    assert violations(mirror.mirror_only, mirrored) == []


def test_without_a_mirror_nothing_is_judged(lab):
    assert violations(mirror.mirror_only, lab) == []


def test_public_charts_and_images_are_named_once_a_mirror_is_set(lab):
    _addons(lab)["properties"]["mirror"] = {"registry": MIRROR["registry"], "charts": MIRROR["charts"]}
    found = violations(mirror.mirror_only, lab)
    text = "\n".join(m for _, m in found)
    assert "repositoryOpts.repo https://helm.ngc.nvidia.com/nvidia" in text
    assert "repositoryOpts.repo https://kubernetes-sigs.github.io/node-feature-discovery/charts" in text
    assert "nvcr.io/nvidia/cuda:12.4.1-base-ubi8" in text
    assert "nvcr.io/nvidia/mellanox/k8s-rdma-shared-dev-plugin" in text


def test_one_public_image_in_a_mirrored_lab_is_found(mirrored):
    job = next(r for r in mirrored["resources"] if r["type"] == "kubernetes:batch/v1:Job")
    job["properties"]["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:1.36"  # Docker Hub's
    release = next(r for r in mirrored["resources"] if r["type"] == mirror.HELM_RELEASE)
    release["properties"]["values"].setdefault("operator", {})["repository"] = "quay.io/x"
    found = violations(mirror.mirror_only, mirrored)
    assert {n for n, _ in found} == {job["name"], release["name"]}, found
    assert any("busybox:1.36" in m for _, m in found) and any("values.operator.repository quay.io/x" in m
                                                               for _, m in found)


def test_public_host_rules():
    from labrules.mirror import image_host, is_public, url_host

    assert image_host("busybox") == "docker.io" and image_host("mpioperator/mpi-operator:0.8.0") == "docker.io"
    assert image_host("registry.lab.local:5000/mirror/nvidia/cuda") == "registry.lab.local"
    assert url_host("oci://ghcr.io/x") == "ghcr.io" and url_host("nvidia/cuda") is None
    assert is_public("nvcr.io") and is_public("helm.ngc.nvidia.com") and not is_public("registry.lab.local")
