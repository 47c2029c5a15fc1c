"""`gpu-lab:mirror`: a lab without internet takes every chart and image from its own mirror.

Bad input stops `make plan` with exit 2 naming the key; with a mirror no add-on and no
install-config image names a public host; the charts' image values are the ones the pinned
charts' values.yaml name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import builders
import pytest
import yaml

from components.addons import versions
from components.config import gpu_lab_sections, load_lab
from components.mirror import MirrorPlan, source_path
from components.openshift.files.install_config import render_install_config

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = REPO / "tests" / "upstream"
CA = (Path(__file__).parent / "data" / "mirror-ca.pem").read_text()
MIRROR = {"registry": "registry.lab.local:5000/mirror", "charts": "https://charts.lab.local/gpu-lab", "caBundle": CA}
PUBLIC = ("nvcr.io", "docker.io", "ghcr.io", "quay.io", "registry.k8s.io", "helm.ngc.nvidia.com",
          "kubernetes-sigs.github.io", "raw.githubusercontent.com")


def mirrored_lab(**mirror) -> dict:
    config = builders.lab_stack()
    config["gpu-lab:mirror"] = {**MIRROR, **mirror}
    config["gpu-lab:addons"]["bitfusion"] = {"enabled": True, "clientImage": "docker.io/lab/bitfusion-client:4.5"}
    return config


BAD = [
    ("charts-http", {"charts": "http://charts.lab.local"}, ["mirror.charts: 'http://charts.lab.local'",
                                                          "https:// or oci://"]),
    ("registry-scheme", {"registry": "https://registry.lab.local"}, ["mirror.registry: 'https://registry.lab.local'",
                                                                     "has a scheme"]),
    ("registry-space", {"registry": "registry.lab.local /mirror"}, ["mirror.registry:", "whitespace"]),
    ("ca-not-pem", {"caBundle": "not a certificate"}, ["mirror.caBundle:", "not a PEM certificate bundle"]),
    ("ca-broken", {"caBundle": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"},
     ["mirror.caBundle:", "not a PEM certificate bundle"]),
    ("unknown-key", {"registy": "x"}, ["mirror.registy: unknown key"]),
]


@pytest.mark.parametrize("change,fragments", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_mirror_exits_2_naming_the_key_before_anything_is_planned(tmp_path, change, fragments):
    stack_file = builders.write_stack_file(tmp_path, mirrored_lab(**change), "broken")
    proc = subprocess.run(
        [sys.executable, "-m", "tools.plan", "--stack", "broken", "--stack-file", str(stack_file),
         "--out", str(tmp_path / "out")],
        cwd=REPO, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, (fragment, proc.stderr)
    assert not (tmp_path / "out" / "plan.json").exists()


def test_a_mirror_alone_is_no_configuration():
    with pytest.raises(Exception, match="no configuration"):
        load_lab({"mirror": MIRROR})


def test_source_path_drops_the_host_as_oc_mirror_does():
    assert source_path("nvcr.io/nvidia/cuda:12.4.1-base-ubi8") == "nvidia/cuda:12.4.1-base-ubi8"
    assert source_path("mpioperator/mpi-operator:0.8.0") == "mpioperator/mpi-operator:0.8.0"
    assert source_path("busybox") == "library/busybox"
    assert source_path("localhost:5000/x/y") == "x/y"
    m = MirrorPlan("reg:5000/m", "oci://reg:5000/charts", None)
    assert m.image("reg:5000/m/nvidia/driver") == "reg:5000/m/nvidia/driver"  # already there
    assert m.chart("gpu-operator") == ("oci://reg:5000/charts/gpu-operator", None)


def _run(config: dict):
    from tools.mockrun import run_program
    from tools.stackfile import offline_secrets

    return run_program(config, secrets=offline_secrets(config))


def _public(value) -> list[str]:
    text = json.dumps(value)
    return [host for host in PUBLIC if host in text]


@pytest.fixture(scope="module")
def mirrored_run():
    return _run(mirrored_lab())


def test_with_a_mirror_no_add_on_names_a_public_host(mirrored_run):
    addons = [r for r in mirrored_run.resources if r.type.startswith("kubernetes:")]
    assert addons
    offenders = {r.name: _public(r.inputs) for r in addons if _public(r.inputs)}
    assert offenders == {}
    releases = mirrored_run.of_type("kubernetes:helm.sh/v3:Release")
    assert {r.inputs["repositoryOpts"]["repo"] for r in releases} == {MIRROR["charts"]}
    gpu = next(r for r in releases if r.inputs["chart"] == "gpu-operator")
    values = gpu.inputs["values"]
    assert values["driver"]["repository"] == "registry.lab.local:5000/mirror/nvidia"  # the vGPU driver's
    assert values["toolkit"]["repository"] == "registry.lab.local:5000/mirror/nvidia/k8s"
    assert values["dcgmExporter"]["repository"] == "registry.lab.local:5000/mirror/nvidia/k8s"


def test_an_oci_chart_repository_names_each_chart():
    run = _run(mirrored_lab(charts="oci://registry.lab.local:5000/charts"))
    charts = {r.inputs["chart"]: r.inputs.get("repositoryOpts") for r in run.of_type("kubernetes:helm.sh/v3:Release")}
    assert set(charts) == {f"oci://registry.lab.local:5000/charts/{c.chart}"
                           for c in (versions.NFD, versions.GPU_OPERATOR, versions.NETWORK_OPERATOR)}
    assert not any(opts and opts.get("repo") for opts in charts.values())


def test_the_mpi_operator_image_moves_and_keeps_its_name():
    import pulumi

    from components.addons.images import mirror_images

    transform = mirror_images(MirrorPlan("registry.lab.local:5000/mirror", "https://c", None))
    props = {"metadata": {"name": "mpi-operator"}, "spec": {"template": {"spec": {"containers": [
        {"name": "mpi-operator", "image": versions.MPI_OPERATOR_IMAGE}]}}}}
    args = pulumi.ResourceTransformArgs(custom=True, type_="kubernetes:apps/v1:Deployment", name="addons-mpi-operator",
                                        props=props, opts=pulumi.ResourceOptions())
    result = transform(args)
    assert result is not None
    assert result.props["metadata"] == {"name": "mpi-operator"}
    assert result.props["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "registry.lab.local:5000/mirror/mpioperator/mpi-operator:0.8.0"
    crd = pulumi.ResourceTransformArgs(custom=True, type_="kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
                                       name="x", props={}, opts=pulumi.ResourceOptions())
    assert transform(crd) is None
    shipped = (REPO / "components/addons/manifests/kubeflow+mpi-operator/v0.8.0/deploy/v2beta1/mpi-operator.yaml")
    assert f"image: {versions.MPI_OPERATOR_IMAGE}" in shipped.read_text()


def test_install_config_takes_the_release_from_the_mirror_and_trusts_its_ca():
    lab = load_lab(gpu_lab_sections(mirrored_lab()))
    doc = yaml.safe_load(render_install_config(lab.plan.cluster, "<pull>", "<ssh>"))
    assert doc["imageDigestSources"] == [
        {"source": "quay.io/openshift-release-dev/ocp-release",
         "mirrors": ["registry.lab.local:5000/mirror/openshift/release-images"]},
        {"source": "quay.io/openshift-release-dev/ocp-v4.0-art-dev",
         "mirrors": ["registry.lab.local:5000/mirror/openshift/release"]}]
    assert doc["additionalTrustBundle"] == CA
    assert doc["additionalTrustBundlePolicy"] == "Always"
    assert all(m.startswith("registry.lab.local:5000/") for s in doc["imageDigestSources"] for m in s["mirrors"])


def test_without_a_mirror_the_install_config_has_none_of_it():
    lab = load_lab(gpu_lab_sections(builders.lab_stack()))
    doc = yaml.safe_load(render_install_config(lab.plan.cluster, "<pull>", "<ssh>"))
    assert not {"imageDigestSources", "additionalTrustBundle", "additionalTrustBundlePolicy"} & set(doc)


def _at(values: dict, path: str):
    for key in path.split("."):
        values = values[key]
    return values


@pytest.mark.parametrize("images,values_file", [
    (versions.NFD_IMAGES, "kubernetes-sigs+node-feature-discovery/v0.19.0/deployment/helm/node-feature-discovery/values.yaml"),
    ({k: v for k, v in versions.GPU_OPERATOR_IMAGES.items() if not k.startswith("node-feature-discovery.")},
     "NVIDIA+gpu-operator/v26.7.0/deployments/gpu-operator/values.yaml"),
    ({k: v for k, v in versions.NETWORK_OPERATOR_IMAGES.items() if not k.endswith(("metricsExporter", "RbacProxy"))},
     "Mellanox+network-operator/v26.4.1/deployment/network-operator/values.yaml"),
    ({k.split(".", 1)[1]: v for k, v in versions.NETWORK_OPERATOR_IMAGES.items()
      if k.endswith(("metricsExporter", "RbacProxy"))},
     "Mellanox+network-operator/v26.4.1/deployment/network-operator/charts/sriov-network-operator/values.yaml"),
])
def test_the_image_values_are_the_pinned_charts_own(images, values_file):
    values = yaml.safe_load((UPSTREAM / values_file).read_text())
    assert {path: _at(values, path) for path in images} == images


# ---------------------------------------------------------------- the mirror's CA for Helm


def test_helm_checks_an_https_chart_repository_with_the_mirrors_ca(mirrored_run):
    releases = mirrored_run.of_type("kubernetes:helm.sh/v3:Release")
    (ca_file,) = {r.inputs["repositoryOpts"]["caFile"] for r in releases}
    # pulumi-kubernetes 4.34.2 takes the CA as a path only (helm_release.go, RepositoryOpts.CAFile), read in
    # the provider's process, which the engine starts in the project's directory (pulumi pkg/v3
    # resource/plugin/plugin.go, cmd.Dir = pwd): a relative path names the same file on every machine,
    # and a path that changed alone would upgrade each release.
    assert not Path(ca_file).is_absolute()
    assert (REPO / ca_file).read_text() == CA
    assert MirrorPlan(MIRROR["registry"], MIRROR["charts"], CA).chart_ca_file == ca_file


def test_a_new_ca_gets_a_new_file_and_no_ca_none():
    rotated = MirrorPlan("reg:5000/m", "https://charts.lab.local", CA + CA)
    assert rotated.chart_ca_file not in (None, MirrorPlan("reg:5000/m", "https://charts.lab.local", CA).chart_ca_file)
    run = _run({**mirrored_lab(), "gpu-lab:mirror": {k: v for k, v in MIRROR.items() if k != "caBundle"}})
    assert all("caFile" not in r.inputs["repositoryOpts"] for r in run.of_type("kubernetes:helm.sh/v3:Release"))


def test_an_oci_chart_registry_gets_no_ca_file_and_a_warning(monkeypatch):
    import pulumi

    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, resource=None, *a, **k: warnings.append(message))
    run = _run(mirrored_lab(charts="oci://registry.lab.local:5000/charts"))
    assert all(not r.inputs.get("repositoryOpts") for r in run.of_type("kubernetes:helm.sh/v3:Release"))
    assert [w for w in warnings if "caBundle" in w] == [
        "gpu-lab:mirror.caBundle does not reach Helm for the oci:// charts at oci://registry.lab.local:5000/charts: "
        "pulumi-kubernetes' registry client takes no CA, so the machine that runs pulumi must trust the mirror's CA "
        "(its system trust store)"]
