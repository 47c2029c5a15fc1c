"""make mirror-list: every chart and image a stack installs, from the add-ons plan and the pinned charts rendered
by Helm (build/bin/chart-render)."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import subprocess
import sys
from pathlib import Path

import builders
import pytest
import yaml
from required_tools import require_chart_render

from components.addons import versions
from components.config import gpu_lab_sections
from tools.mirror_list import CHARTS, image_set, images_of, mirror_list, releases, render, source_plan

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def chart_render():
    return require_chart_render()


def _plan(config):
    return source_plan(gpu_lab_sections(config))


def _lists(config):
    return mirror_list(_plan(config))


def test_the_pinned_charts_are_the_recorded_bytes():
    with open(CHARTS / "MANIFEST.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    pinned = {f"{c.chart}-{c.version}.tgz" for c in (versions.NFD, versions.GPU_OPERATOR, versions.NETWORK_OPERATOR)}
    assert {r["file"] for r in rows if r["role"] == "pinned"} == pinned
    # one earlier release of each, for the upgrade tests (tests/addons/test_addons_upgrade.py)
    previous = sorted(r["file"].rsplit("-", 1)[0] for r in rows if r["role"] == "previous")
    assert previous == sorted(f.rsplit("-", 1)[0] for f in pinned)
    assert {p.name for p in CHARTS.glob("*.tgz")} == {r["file"] for r in rows}
    for r in rows:
        assert hashlib.sha256((CHARTS / r["file"]).read_bytes()).hexdigest() == r["sha256"]


def test_the_lab_lists_its_charts_and_the_gpu_operator_operands(chart_render):
    charts, images = _lists(builders.lab_stack())
    assert {(c.repository, c.name, c.version) for c in charts} == {
        (versions.GPU_OPERATOR.repo, "gpu-operator", "v26.7.0"), (versions.NFD.repo, versions.NFD.chart, "0.19.0"),
        (versions.NETWORK_OPERATOR.repo, "network-operator", "26.4.1")}
    assert "registry.lab.local:5000/nvidia/driver:550.127.05" in images  # the vGPU guest driver the stack sets
    assert "nvcr.io/nvidia/gpu-operator:v26.7.0" in images
    assert "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0" in images
    assert "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless" in images
    assert "nvcr.io/nvidia/mellanox/nvidia-k8s-ipam:network-operator-v26.4.1" in images
    assert "docker.io/mpioperator/mpi-operator:0.8.0" in images
    assert versions.CUDA_IMAGE in images


def test_without_the_vgpu_driver_the_data_center_driver_is_listed(chart_render):
    plan = source_plan(gpu_lab_sections(builders.lab_stack()))
    plan = dataclasses.replace(plan, gpu_operator=dataclasses.replace(plan.gpu_operator, vgpu=None))
    _, images = mirror_list(plan)
    assert "nvcr.io/nvidia/driver:595.91.07" in images


def test_a_mirror_does_not_change_what_to_mirror_from(chart_render):
    config = builders.lab_stack()
    config["gpu-lab:mirror"] = {"registry": "registry.lab.local:5000/mirror", "charts": "https://charts.lab.local"}
    assert _lists(config) == _lists(builders.lab_stack())


def test_oc_mirror_image_set(tmp_path, chart_render):
    stack = builders.write_stack_file(tmp_path, builders.lab_stack(), "test")
    proc = subprocess.run([sys.executable, "-m", "tools.mirror_list", "--stack", "test", "--stack-file", str(stack),
                           "--format", "oc-mirror"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = yaml.safe_load(proc.stdout)
    assert doc["apiVersion"] == "mirror.openshift.io/v2alpha1" and doc["kind"] == "ImageSetConfiguration"
    assert {"name": "nvcr.io/nvidia/gpu-operator:v26.7.0"} in doc["mirror"]["additionalImages"]
    ngc = next(r for r in doc["mirror"]["helm"]["repositories"] if r["url"] == versions.GPU_OPERATOR.repo)
    assert {"name": "gpu-operator", "version": "v26.7.0"} in ngc["charts"]
    assert image_set([], [])["mirror"]["additionalImages"] == []


def test_the_hooks_images_are_listed(chart_render):
    """Images a template names without a value: the hooks' Jobs (the network operator's keep-ncp and CRD
    upgrade, the GPU operator's CRD upgrade), read from the objects Helm renders for each release."""
    plan = _plan(builders.lab_stack())
    _, images = mirror_list(plan)
    hooks = [r for release in releases(plan) for r in render(release, plan.openshift) if r["hook"]]
    jobs = {r["object"]["metadata"]["name"]: r for r in hooks if r["object"]["kind"] == "Job"}
    assert "pre-install" in jobs["network-operator-keep-ncp"]["hook"]
    assert jobs["network-operator-keep-ncp"]["source"] == "network-operator/templates/keep-ncp-hook.yaml"
    assert "pre-upgrade" in jobs["network-operator-upgrade-crd"]["hook"]
    assert "pre-upgrade" in jobs["gpu-operator-upgrade-crd"]["hook"]
    for name in ("network-operator-keep-ncp", "network-operator-upgrade-crd", "gpu-operator-upgrade-crd"):
        assert images_of(jobs[name]["object"]), name
    for hook in hooks:
        assert images_of(hook["object"]) <= set(images), hook["source"]


def test_every_image_of_every_rendered_object_is_listed(chart_render):
    plan = _plan(builders.lab_stack())
    _, images = mirror_list(plan)
    for release in releases(plan):
        for r in render(release, plan.openshift):
            assert images_of(r["object"]) <= set(images), r["source"]


def test_the_list_is_what_the_stack_renders_not_every_value():
    """Components the stack turns off render nothing: PVRDMA installs no SR-IOV operator, so none of its images."""
    lab = _plan(builders.lab_stack())
    sriov = dataclasses.replace(lab, network=dataclasses.replace(lab.network, mode="sriov"))
    require_chart_render()
    _, pvrdma_images = mirror_list(lab)
    _, sriov_images = mirror_list(sriov)
    operator = f"{versions.NETWORK_OPERATOR_REPOSITORY}/sriov-network-operator:{versions.NETWORK_OPERATOR_COMPONENTS}"
    # the operator and the images it hands its operands (*_IMAGE env of its Deployment)
    assert operator in sriov_images and operator not in pvrdma_images
    assert f"{versions.NETWORK_OPERATOR_REPOSITORY}/sriov-cni:{versions.NETWORK_OPERATOR_COMPONENTS}" in sriov_images
    assert not any("sriov" in i for i in pvrdma_images)
    assert f"{versions.NETWORK_OPERATOR_REPOSITORY}/k8s-rdma-shared-dev-plugin:{versions.NETWORK_OPERATOR_COMPONENTS}" \
        in pvrdma_images  # our own device plugin, PVRDMA only
    assert not any("k8s-rdma-shared-dev-plugin" in i for i in sriov_images)


def test_images_of_reads_containers_env_and_operator_blocks():
    pod = {"initContainers": [{"name": "i", "image": "r/init:1"}],
           "containers": [{"name": "c", "image": "r/main:2", "env": [
               {"name": "CNI_IMAGE", "value": "r/cni:3"}, {"name": "OTHER", "value": "r/no:4"},
               {"name": "X_IMAGE", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]}],
           "ephemeralContainers": [{"name": "e", "image": "r/debug:5"}]}
    cron = {"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": pod}}}}}
    assert images_of(cron) == {"r/init:1", "r/main:2", "r/cni:3", "r/debug:5"}
    policy = {"kind": "ClusterPolicy", "spec": {
        "driver": {"repository": "r", "image": "driver", "version": "550", "manager": {
            "repository": "r/cn", "image": "mgr", "version": "sha256:abc"}},
        "vgpuManager": {"image": "vgpu-manager"}}}  # no repository or version: the user's own build, not listed
    assert images_of(policy) == {"r/driver:550", "r/cn/mgr@sha256:abc"}
