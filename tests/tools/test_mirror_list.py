"""make mirror-list: every chart and image a stack installs, from the add-ons plan and the pinned charts."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import subprocess
import sys
from pathlib import Path

import builders
import yaml

from components.addons import versions
from components.config import gpu_lab_sections, load_lab
from tools.mirror_list import CHARTS, image_set, mirror_list, source_plan

REPO = Path(__file__).resolve().parents[2]


def _lists(config):
    return mirror_list(source_plan(load_lab(gpu_lab_sections(config)).plan.addons))


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


def test_the_lab_lists_its_charts_and_the_gpu_operator_operands():
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


def test_without_the_vgpu_driver_the_data_center_driver_is_listed():
    plan = source_plan(load_lab(gpu_lab_sections(builders.lab_stack())).plan.addons)
    plan = dataclasses.replace(plan, gpu_operator=dataclasses.replace(plan.gpu_operator, vgpu=None))
    _, images = mirror_list(plan)
    assert "nvcr.io/nvidia/driver:595.91.07" in images


def test_a_mirror_does_not_change_what_to_mirror_from():
    config = builders.lab_stack()
    config["gpu-lab:mirror"] = {"registry": "registry.lab.local:5000/mirror", "charts": "https://charts.lab.local"}
    assert _lists(config) == _lists(builders.lab_stack())


def test_oc_mirror_image_set(tmp_path):
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
