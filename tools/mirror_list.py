"""Every chart and image a stack installs, for filling its mirror: `make mirror-list STACK=<stack>`.

Computed from the add-ons plan the program registers (components/addons/plan.py), never from a
list kept by hand. Each Helm release the stack installs is rendered by Helm's own template engine
(build/bin/chart-render, `make chartrender`, chartrender/main.go) from the pinned chart in
tests/charts/ (MANIFEST.tsv), with exactly the values the program gives that release
(nfd_values, gpu_operator_values, network_operator_values), its release name and namespace, and
the platform's capabilities (OpenShift's API groups when the stack installs OpenShift), as
`helm template --include-crds` renders it, hooks included. The images are read from every
rendered object: every container, init container and ephemeral container of every pod template
(Deployments, DaemonSets, Jobs, the hooks' Jobs among them), every `*_IMAGE` environment value
(images an operator hands its operands), and every `repository/image/version` block of the
operators' custom resources (the GPU operator's ClusterPolicy lists each operand, those the stack
leaves disabled included, so turning one on later needs no new mirror run). The objects the
program registers itself (the NicClusterPolicy, the PVRDMA device plugin, Bitfusion) are read the
same way, and the images that only name a tag in the plan (the acceptance jobs', the MPI operator's
shipped manifest) are added as they are. Images carry their tags; none of the pins has a digest.

`--format oc-mirror` prints an ImageSetConfiguration for oc-mirror v2 (mirror.openshift.io/v2alpha1,
"Mirroring images for a disconnected installation by using the oc-mirror plugin v2",
https://docs.redhat.com/en/documentation/openshift_container_platform/4.20/html/disconnected_environments/about-installing-oc-mirror-v2):
`mirror.additionalImages` and `mirror.helm.repositories`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.addons import bitfusion, gpu, rdma, versions
from components.addons.plan import PVRDMA_RESOURCE, AddonsPlan
from components.config import gpu_lab_sections, load_lab
from components.model import ConfigError
from tools.stackfile import load_stack_config

ROOT = Path(__file__).resolve().parents[1]
CHARTS = ROOT / "tests" / "charts"
CHART_RENDER = ROOT / "build" / "bin" / "chart-render"
# What an OpenShift cluster serves beyond Kubernetes' own groups, as the charts may ask for it
# (.Capabilities.APIVersions.Has).
OPENSHIFT_API_VERSIONS = ("security.openshift.io/v1", "config.openshift.io/v1", "route.openshift.io/v1",
                          "image.openshift.io/v1")
# Pod specs hold these container lists; a `*_IMAGE` env value is an image an operator deploys.
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


class RenderError(RuntimeError):
    pass


@dataclass(frozen=True)
class Chart:
    repository: str
    name: str
    version: str


@dataclass(frozen=True)
class Release:
    """A Helm release the program installs: its name and namespace (components/addons/kube.helm_release)."""
    name: str
    chart: versions.HelmChart
    namespace: str
    values: dict[str, Any]


def releases(addons: AddonsPlan) -> list[Release]:
    """The Helm releases a plan installs, each with the values the program gives it (gpu.py, rdma.py)."""
    out: list[Release] = []
    if addons.nfd:
        out.append(Release("nfd", versions.NFD, gpu.NFD_NAMESPACE, gpu.nfd_values(addons.mirror)))
    if addons.gpu_operator.enabled:
        out.append(Release("gpu-operator", versions.GPU_OPERATOR, gpu.GPU_NAMESPACE,
                           gpu.gpu_operator_values(addons, addons.openshift)))
    if addons.network.enabled:
        out.append(Release("network-operator", versions.NETWORK_OPERATOR, rdma.NAMESPACE,
                           rdma.network_operator_values(addons.nfd_source == "networkOperator",
                                                        addons.network.mode == "sriov", addons.mirror)))
    return out


def chart_file(chart: versions.HelmChart) -> Path:
    return CHARTS / f"{chart.chart}-{chart.version}.tgz"


def render(release: Release, openshift: bool, kube_version: str | None = None,
           binary: Path = CHART_RENDER) -> list[dict[str, Any]]:
    """The release's objects as Helm renders them: [{"source": template, "hook": events or "", "object": {...}}],
    CRDs of the charts' crds/ first, hooks last. Without kube_version the chart sees the Kubernetes version of
    Helm's client libraries, as `helm template` does."""
    if not binary.is_file():
        raise RenderError(f"{binary} is not built: run make chartrender")
    with tempfile.NamedTemporaryFile("w", suffix=".json") as values:
        json.dump(release.values, values)
        values.flush()
        cmd = [str(binary), "--chart", str(chart_file(release.chart)), "--values", values.name,
               "--name", release.name, "--namespace", release.namespace]
        if kube_version:
            cmd += ["--kube-version", kube_version]
        if openshift:
            cmd += ["--api-versions", ",".join(OPENSHIFT_API_VERSIONS)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RenderError(f"{release.chart.chart} {release.chart.version}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def images_of(obj: Any) -> set[str]:
    """Every image an object names: its pod specs' containers and `*_IMAGE` env values, wherever they sit,
    and every `repository/image/version` block (an operator's custom resource)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key in CONTAINER_LISTS:
                containers = node.get(key)
                if isinstance(containers, list):
                    found.update(i for c in containers if isinstance(c, dict) for i in _container_images(c))
            repo, image, version = node.get("repository"), node.get("image"), node.get("version")
            if all(isinstance(x, str) and x for x in (repo, image, version)):
                found.add(f"{repo}/{image}{'@' if str(version).startswith('sha256:') else ':'}{version}")
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(obj)
    return found


def _container_images(container: dict[str, Any]) -> set[str]:
    out = {container["image"]} if isinstance(container.get("image"), str) and container["image"] else set()
    for env in container.get("env") or []:
        if str(env.get("name", "")).endswith("_IMAGE") and isinstance(env.get("value"), str) and env["value"]:
            out.add(env["value"])
    return out


def _images(objects: Iterable[Any]) -> set[str]:
    return set().union(*(images_of(o) for o in objects))


def mirror_list(addons: AddonsPlan, binary: Path = CHART_RENDER) -> tuple[list[Chart], list[str]]:
    """(charts, images) a plan installs; give it the plan without the mirror (source_plan) to list
    what to mirror from."""
    charts: list[Chart] = []
    images: set[str] = set()
    for release in releases(addons):
        charts.append(Chart(release.chart.repo, release.chart.chart, release.chart.version))
        images |= _images(r["object"] for r in render(release, addons.openshift, binary=binary))
    # what the program registers itself
    if addons.network.enabled:
        images |= images_of(rdma.nic_cluster_policy(addons.openshift))
        if addons.network.mode == "pvrdma":
            images |= _images(rdma.rdma_shared_device_plugin(PVRDMA_RESOURCE))
    if addons.bitfusion.enabled:
        images |= _images([*bitfusion.device_plugin(), *bitfusion.webhook(addons.openshift)])
        images.add(f"{versions.BITFUSION_IMAGE_REPO}/bitfusion-client:{versions.BITFUSION_K8S}")
        if addons.bitfusion.client_image:
            images.add(addons.bitfusion.client_image)
    if addons.mpi_operator:
        images.add(f"docker.io/{versions.MPI_OPERATOR_IMAGE}")
    jobs = addons.jobs
    used = [(jobs.nvidia_smi, jobs.images.cuda), (jobs.ib_write_bw, jobs.images.perftest),
            (jobs.nccl_rdma or jobs.nccl_tcp, jobs.images.nccl_tests),
            (jobs.horovod_rdma or jobs.horovod_tcp, jobs.images.horovod)]
    images |= {image for on, image in used if on}
    return charts, sorted(images)


def image_set(charts: list[Chart], images: list[str]) -> dict[str, Any]:
    repositories: dict[str, list[dict[str, str]]] = {}
    for c in charts:
        repositories.setdefault(c.repository, []).append({"name": c.name, "version": c.version})
    return {"kind": "ImageSetConfiguration", "apiVersion": "mirror.openshift.io/v2alpha1", "mirror": {
        "additionalImages": [{"name": i} for i in images],
        "helm": {"repositories": [{"name": url.rstrip("/").rsplit("/", 1)[-1] or url, "url": url, "charts": cs}
                                  for url, cs in repositories.items()]}}}


def source_plan(sections: Mapping[str, Any]) -> AddonsPlan:
    """The add-ons plan as the public sources name it: the lab plan's of the stack's sections without the mirror."""
    return load_lab({key: value for key, value in sections.items() if key != "mirror"}).plan.addons


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="lab")
    parser.add_argument("--stack-file", type=Path, help="read this file instead of Pulumi.<stack>.yaml")
    parser.add_argument("--format", choices=("plain", "oc-mirror"), default="plain")
    args = parser.parse_args(argv)
    try:
        sections = gpu_lab_sections(load_stack_config(args.stack, args.stack_file))
        load_lab(sections)  # the stack as given is sound, mirror included
        charts, images = mirror_list(source_plan(sections))
    except (ConfigError, RenderError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
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
