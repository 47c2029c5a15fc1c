"""A lab without internet: the public registries and chart repositories none of its add-ons may name.

Sources: where the pinned charts and images come from (components/addons/versions.py and the
charts' values), and the registries NVIDIA's and Red Hat's air-gapped guides mirror from
(NVIDIA GPU Operator, "Install NVIDIA GPU Operator in Air-Gapped Environments",
https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/install-gpu-operator-air-gapped.html).
"""

from __future__ import annotations

PUBLIC_HOSTS = (
    "nvcr.io", "docker.io", "index.docker.io", "registry-1.docker.io", "ghcr.io", "quay.io", "registry.k8s.io",
    "k8s.gcr.io", "gcr.io", "registry.redhat.io", "public.ecr.aws", "mcr.microsoft.com",
    "helm.ngc.nvidia.com", "kubernetes-sigs.github.io", "raw.githubusercontent.com", "github.com",
)
"""Hosts that are out of reach behind a lab's firewall."""


def image_host(reference: str) -> str:
    """The registry host of an image reference; a reference without one is Docker Hub's (the Docker
    reference grammar: a first component without '.' or ':' and not localhost is a path)."""
    first, _, rest = reference.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first.split(":")[0].lower()
    return "docker.io"


def url_host(value: str) -> str | None:
    """The host of an http(s):// or oci:// URL, else None."""
    for scheme in ("https://", "http://", "oci://"):
        if value.lower().startswith(scheme):
            return value[len(scheme):].split("/")[0].split(":")[0].lower()
    return None


def is_public(host: str | None) -> bool:
    return host is not None and any(host == h or host.endswith("." + h) for h in PUBLIC_HOSTS)
