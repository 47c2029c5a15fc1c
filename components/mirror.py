"""The `mirror` setting: where a lab without internet takes its charts and images from.

One registry holds every image, laid out as `oc-mirror` writes it (the source's path kept under
the mirror, the source host dropped), one Helm repository holds every chart, and the mirror's CA
is trusted by the cluster's nodes. References:
- NVIDIA GPU Operator, "Install NVIDIA GPU Operator in Air-Gapped Environments",
  https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/install-gpu-operator-air-gapped.html
- OpenShift, "Mirroring images for a disconnected installation by using the oc-mirror plugin v2",
  https://docs.redhat.com/en/documentation/openshift_container_platform/4.20/html/disconnected_environments/about-installing-oc-mirror-v2
- OpenShift, "Installation configuration parameters" (`imageDigestSources`, `additionalTrustBundle`,
  `additionalTrustBundlePolicy`),
  https://docs.redhat.com/en/documentation/openshift_container_platform/4.20/html/installation_configuration/installation-config-parameters-agent

Model, plan and the pure rewrites in one module: every part that pulls something reads the same
MirrorPlan, so no part decides a mirrored name on its own.
"""

from __future__ import annotations

import hashlib
import re
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field

from components.model import Model

# A registry host with an optional port and path: no scheme, no whitespace, no tag.
_REGISTRY = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*$")


def _check_registry(value: str) -> str:
    if "://" in value:
        raise ValueError(f"{value!r} has a scheme; give host[:port][/path] as image references name it, "
                         "e.g. registry.lab.local:5000/mirror")
    if any(c.isspace() for c in value):
        raise ValueError(f"{value!r} holds whitespace; give host[:port][/path], e.g. registry.lab.local:5000/mirror")
    if not _REGISTRY.match(value):
        raise ValueError(f"{value!r} is not host[:port][/path] (lower-case path components), "
                         "e.g. registry.lab.local:5000/mirror")
    return value


def _check_charts(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("https", "oci") or not parts.hostname or any(c.isspace() for c in value):
        raise ValueError(f"{value!r} is not an https:// or oci:// URL of a Helm chart repository, "
                         "e.g. https://charts.lab.local/nvidia or oci://registry.lab.local:5000/charts")
    return value.rstrip("/")


def _check_ca_bundle(value: str) -> str:
    if "-----BEGIN CERTIFICATE-----" not in value:
        raise ValueError("is not a PEM certificate bundle: no '-----BEGIN CERTIFICATE-----' block; "
                         "give the mirror CA's certificate(s) in PEM")
    # OpenSSL parses every certificate of the bundle, as the nodes' trust store will.
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=value)
    except (ssl.SSLError, ValueError) as err:
        raise ValueError(f"is not a PEM certificate bundle ({err.args[-1] if err.args else err}); "
                         "give the mirror CA's certificate(s) in PEM") from None
    return value if value.endswith("\n") else value + "\n"


Registry = Annotated[str, AfterValidator(_check_registry)]
ChartsUrl = Annotated[str, AfterValidator(_check_charts)]
PemBundle = Annotated[str, AfterValidator(_check_ca_bundle)]


class MirrorConfig(Model):
    """`gpu-lab:mirror`: the lab's own image registry and chart repository."""

    registry: Registry = Field(description="image mirror, host[:port][/path]; every image is pulled from "
                                           "<registry>/<its path at the source>, as oc-mirror lays it out")
    charts: ChartsUrl = Field(description="Helm repository every chart is installed from: an https:// chart "
                                          "repository or an oci:// registry path holding the charts")
    ca_bundle: PemBundle | None = Field(
        default=None, description="PEM of the CA that signed the mirror's certificate (install-config "
                                  "additionalTrustBundle); omit when the nodes already trust it")


@dataclass(frozen=True)
class MirrorPlan:
    registry: str
    charts: str
    ca_bundle: str | None

    def image(self, reference: str) -> str:
        """`reference` as the mirror holds it; one already on the mirror stays as it is."""
        if reference.startswith(self.registry + "/"):
            return reference
        return f"{self.registry}/{source_path(reference)}"

    def repository(self, repository: str) -> str:
        """An image repository (no tag) as the mirror holds it."""
        return self.image(repository)

    def chart(self, name: str) -> tuple[str, str | None]:
        """(chart, repo) of a Helm release: an oci:// repository names the chart itself and has no repo."""
        if self.charts.startswith("oci://"):
            return f"{self.charts}/{name}", None
        return name, self.charts

    @property
    def chart_ca_file(self) -> str | None:
        """Where the CA Helm checks an https:// chart repository with is written, relative to the project.

        pulumi-kubernetes takes the CA as a file path only (Release `repositoryOpts.caFile`, read with
        os.ReadFile in the provider's process, whose working directory is the project's), and a changed
        path alone upgrades the release: so a path that depends on the bundle alone, never on the
        machine. Its oci:// registry client takes no CA: the machine running pulumi must trust it.
        """
        if self.ca_bundle is None or self.charts.startswith("oci://"):
            return None
        return f"{CHART_CA_DIR}/ca-{hashlib.sha256(self.ca_bundle.encode()).hexdigest()[:16]}.pem"


CHART_CA_DIR = "build/mirror"
PROJECT_ROOT = Path(__file__).resolve().parents[1]


def write_chart_ca(plan: MirrorPlan) -> str | None:
    """Write the mirror's CA where `chart_ca_file` says (the same bytes each run) and return that path."""
    relative = plan.chart_ca_file
    if relative is None or plan.ca_bundle is None:
        return None
    path = PROJECT_ROOT / relative
    if not path.is_file() or path.read_text() != plan.ca_bundle:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(plan.ca_bundle)
    return relative


def mirror_plan(config: MirrorConfig | None) -> MirrorPlan | None:
    return MirrorPlan(config.registry, config.charts, config.ca_bundle) if config is not None else None


def source_path(reference: str) -> str:
    """An image reference without its registry host: docker.io's short names get their implicit
    `library/` (the Docker reference grammar, distribution/reference normalize.go)."""
    first, _, rest = reference.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return rest
    return reference if rest else f"library/{reference}"


# oc-mirror v2 puts a release's payload at <registry>/openshift/release-images and its component images
# at <registry>/openshift/release, and writes the matching mirror sets (IDMS) for them.
RELEASE_SOURCES = (("quay.io/openshift-release-dev/ocp-release", "openshift/release-images"),
                   ("quay.io/openshift-release-dev/ocp-v4.0-art-dev", "openshift/release"))


def image_digest_sources(mirror: MirrorPlan) -> list[dict[str, object]]:
    """install-config `imageDigestSources` for the OpenShift release images."""
    return [{"source": source, "mirrors": [f"{mirror.registry}/{path}"]} for source, path in RELEASE_SOURCES]
