"""A lab with `gpu-lab:mirror` pulls nothing from the internet: no add-on names a public host."""

from __future__ import annotations

from labrules.mirror import image_host, is_public, url_host
from labrules.types import CLUSTER_ADDONS

from .declare import MANDATORY, stack_policy
from .kubernetes import containers
from .props import known, reveal, stack_resources

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
_CONFIG_TYPES = ("kubernetes:yaml/v2:ConfigFile", "kubernetes:yaml/v2:ConfigGroup",
                 "kubernetes:yaml:ConfigFile", "kubernetes:yaml:ConfigGroup")


def _strings(node, path=""):
    node = reveal(node)
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _strings(v, f"{path}[{i}]")
    elif isinstance(node, str):
        yield path, node


def _public_in_values(values) -> list[tuple[str, str]]:
    """(path, value) of each chart value naming a public registry: a URL, or an image or repository
    value (keys `image`, `repository`, or any value of an `images` map)."""
    found = []
    for path, value in _strings(values):
        leaf = path.rsplit(".", 1)[-1]
        image_like = leaf in ("image", "repository") or ".images." in f".{path}"
        host = url_host(value) or (image_host(value) if image_like and value and "/" in value else None)
        if is_public(host):
            found.append((path, value))
    return found


def check_mirror_only(args, report_violation) -> None:
    """With a mirror (`gpu-lab:mirror`), no add-on names a public registry or chart repository: Helm
    releases' repo, chart and image values, container images of every manifest, ConfigFile and
    ConfigGroup sources. OpenShift's "Mirroring images for a disconnected installation" and NVIDIA's
    "Install NVIDIA GPU Operator in Air-Gapped Environments": behind the lab's firewall a pull from
    nvcr.io, docker.io, ghcr.io, quay.io or registry.k8s.io leaves pods in ImagePullBackOff, and an
    install from helm.ngc.nvidia.com fails."""
    resources = stack_resources(args)
    mirrored = [r for r in resources if r.type == CLUSTER_ADDONS and known(r.get("mirror"))]
    if not mirrored:
        return
    for r in resources:
        if not r.type.startswith("kubernetes:"):
            continue
        bad: list[str] = []
        if r.type == HELM_RELEASE:
            for key in ("repositoryOpts.repo", "chart"):
                value = reveal(r.get(key))
                if isinstance(value, str) and is_public(url_host(value)):
                    bad.append(f"{key} {value}")
            bad += [f"values.{p} {v}" for p, v in _public_in_values(r.get("values"))]
        elif r.type in _CONFIG_TYPES:
            for path, value in _strings({k: r.props.get(k) for k in ("file", "files", "yaml")}):
                if is_public(url_host(value)):
                    bad.append(f"{path} {value}")
        for path, container in containers(r.props):
            image = reveal(container.get("image"))
            if isinstance(image, str) and is_public(image_host(image)):
                bad.append(f"{path}.image {image}")
        for what in bad:
            report_violation(f"{r.name} names a public registry or repository with a mirror set: {what}; "
                             f"take it from the mirror ({reveal(mirrored[0].get('mirror.registry'))}, "
                             f"{reveal(mirrored[0].get('mirror.charts'))})", r.urn)


mirror_only = stack_policy("addons-mirror-only", MANDATORY, check_mirror_only)

POLICIES = [mirror_only]
