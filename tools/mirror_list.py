"""Every chart and image a stack installs, for filling its mirror: `make mirror-list STACK=<stack>`.

Computed from the add-ons plan the program registers (components/addons/plan.py) and the values
it gives each chart, never from a list kept by hand. Images of a chart come from the chart's own
values merged with the stack's: every `<x>.repository/<x>.image/<x>.version` block (version
defaulting to the chart's appVersion), every `image: {repository, tag}` block and every `images`
map, in the chart and its subcharts. That is a values-driven list, not a rendered one (no Helm
here): it names every image the values name, components the stack leaves off included, and would
miss an image a template names without a value. The pinned charts are read from tests/charts/
(MANIFEST.tsv). Images carry their tags; none of the pins has a digest.

`--format oc-mirror` prints an ImageSetConfiguration for oc-mirror v2 (mirror.openshift.io/v2alpha1,
"Mirroring images for a disconnected installation by using the oc-mirror plugin v2",
https://docs.redhat.com/en/documentation/openshift_container_platform/4.20/html/disconnected_environments/about-installing-oc-mirror-v2):
`mirror.additionalImages` and `mirror.helm.repositories`.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.addons import bitfusion, versions
from components.addons.gpu import gpu_operator_values, nfd_values
from components.addons.images import merged
from components.addons.plan import AddonsLab, AddonsPlan, addons_plan
from components.addons.rdma import network_operator_values, nic_cluster_policy, rdma_shared_device_plugin
from components.config import gpu_lab_sections, load_lab
from components.model import ConfigError
from tools.stackfile import load_stack_config

CHARTS = Path(__file__).resolve().parents[1] / "tests" / "charts"


@dataclass(frozen=True)
class Chart:
    repository: str
    name: str
    version: str


def _chart_files(chart: versions.HelmChart) -> dict[str, Any]:
    """Chart.yaml and values.yaml of the chart and its subcharts: {"": (meta, values), "<sub>": ...}."""
    out: dict[str, Any] = {}
    with tarfile.open(CHARTS / f"{chart.chart}-{chart.version}.tgz") as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if parts[-1] not in ("Chart.yaml", "values.yaml"):
                continue
            sub = parts[2] if len(parts) == 4 and parts[1] == "charts" else "" if len(parts) == 2 else None
            if sub is None:
                continue
            data = yaml.safe_load(tar.extractfile(member).read()) or {}  # type: ignore[union-attr]
            out.setdefault(sub, {})[parts[-1]] = data
    return out


def _images_in(values: Any, app_version: str) -> set[str]:
    found: set[str] = set()

    def walk(node: Any, key: str) -> None:
        if isinstance(node, dict):
            repo, image = node.get("repository"), node.get("image")
            if isinstance(repo, str) and repo and isinstance(image, str) and image:
                found.add(f"{repo}/{image}:{node.get('version') or app_version}")
            elif isinstance(repo, str) and repo and key == "image":
                name = node.get("name")
                path = f"{repo}/{name}" if isinstance(name, str) and name else repo
                found.add(f"{path}:{node.get('tag') or app_version}")
            for k, v in node.items():
                if k == "images" and isinstance(v, dict):
                    found.update(x for x in v.values() if isinstance(x, str) and "/" in x)
                else:
                    walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)

    walk(values, "")
    return found


def chart_images(chart: versions.HelmChart, values: dict[str, Any]) -> set[str]:
    """The images a chart's values name once the stack's values are merged in (subcharts too)."""
    files = _chart_files(chart)
    top = files[""]
    final = merged(top["values.yaml"], values)
    images = _images_in(final, top["Chart.yaml"].get("appVersion", ""))
    for sub, data in files.items():
        if sub:
            sub_values = merged(data.get("values.yaml", {}), final.get(sub) or {})
            images |= _images_in(sub_values, data["Chart.yaml"].get("appVersion", ""))
    return images


def mirror_list(addons: AddonsPlan) -> tuple[list[Chart], list[str]]:
    """(charts, images) a plan installs; give it the plan without the mirror (source_plan) to list
    what to mirror from."""
    source = addons
    charts: list[Chart] = []
    images: set[str] = set()
    releases: list[tuple[versions.HelmChart, dict[str, Any]]] = []
    if source.nfd:
        releases.append((versions.NFD, nfd_values()))
    if source.gpu_operator.enabled:
        releases.append((versions.GPU_OPERATOR, gpu_operator_values(source, source.openshift)))
    if source.network.enabled:
        releases.append((versions.NETWORK_OPERATOR, network_operator_values(
            source.nfd_source == "networkOperator", source.network.mode == "sriov")))
        images |= {f"{c['repository']}/{c['image']}:{c['version']}" for c in _components(nic_cluster_policy(
            source.openshift))}
        if source.network.mode == "pvrdma":
            images |= {c["image"] for m in rdma_shared_device_plugin("pvrdma") for c in _containers(m)}
    for chart, values in releases:
        charts.append(Chart(chart.repo, chart.chart, chart.version))
        images |= chart_images(chart, values)
    if source.mpi_operator:
        images.add(f"docker.io/{versions.MPI_OPERATOR_IMAGE}")
    jobs = source.jobs
    used = [(jobs.nvidia_smi, jobs.images.cuda), (jobs.ib_write_bw, jobs.images.perftest),
            (jobs.nccl_rdma or jobs.nccl_tcp, jobs.images.nccl_tests),
            (jobs.horovod_rdma or jobs.horovod_tcp, jobs.images.horovod)]
    images |= {image for on, image in used if on}
    if source.bitfusion.enabled:
        images |= {c["image"] for m in [*bitfusion.device_plugin(), *bitfusion.webhook(source.openshift)]
                   for c in _containers(m)}
        images.add(f"{versions.BITFUSION_IMAGE_REPO}/bitfusion-client:{versions.BITFUSION_K8S}")
        if source.bitfusion.client_image:
            images.add(source.bitfusion.client_image)
    if source.gpu_operator.enabled and source.gpu_operator.vgpu is not None:
        v = source.gpu_operator.vgpu
        images.add(f"{v.repository}/{v.image}:{v.version}")
    return charts, sorted(images)


def _components(policy: dict[str, Any]) -> list[dict[str, Any]]:
    spec = policy["spec"]
    found = [spec["nvIpam"]]
    found += list((spec.get("secondaryNetwork") or {}).values())
    return found


def _containers(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    pod = ((manifest.get("spec") or {}).get("template") or {}).get("spec") or {}
    return [c for c in [*pod.get("initContainers", []), *pod.get("containers", [])] if c.get("image")]


def image_set(charts: list[Chart], images: list[str]) -> dict[str, Any]:
    repositories: dict[str, list[dict[str, str]]] = {}
    for c in charts:
        repositories.setdefault(c.repository, []).append({"name": c.name, "version": c.version})
    return {"kind": "ImageSetConfiguration", "apiVersion": "mirror.openshift.io/v2alpha1", "mirror": {
        "additionalImages": [{"name": i} for i in images],
        "helm": {"repositories": [{"name": url.rstrip("/").rsplit("/", 1)[-1] or url, "url": url, "charts": cs}
                                  for url, cs in repositories.items()]}}}


def source_plan(lab: AddonsLab) -> AddonsPlan:
    """The add-ons plan as the public sources name it: the stack's, with the mirror taken out."""
    return addons_plan(dataclasses.replace(lab, mirror=None))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="lab")
    parser.add_argument("--stack-file", type=Path, help="read this file instead of Pulumi.<stack>.yaml")
    parser.add_argument("--format", choices=("plain", "oc-mirror"), default="plain")
    args = parser.parse_args(argv)
    try:
        lab = load_lab(gpu_lab_sections(load_stack_config(args.stack, args.stack_file)))
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    charts, images = mirror_list(source_plan(lab.plan.addons))
    if args.format == "oc-mirror":
        print(yaml.safe_dump(image_set(charts, images), sort_keys=False), end="")
        return 0
    for c in charts:
        print(f"chart {c.repository} {c.name} {c.version}")
    for image in images:
        print(f"image {image}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
