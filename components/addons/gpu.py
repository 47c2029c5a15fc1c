"""Node Feature Discovery and the NVIDIA GPU operator, with vGPU guest driver and licensing.

On vGPU workers (the RDG) the data-center driver does not load: the GPU operator runs the
vGPU guest driver image the user built into a private registry (pulled with `registry_auth`)
and licenses each guest from a Secret holding `gridd.conf` and, for NLS, the client
configuration token; the legacy licence server listens on 7070. On bare metal
the operator's own data-center driver is used.
"""

from __future__ import annotations

from typing import Any

import pulumi

from components.addons import versions
from components.addons.images import with_mirror
from components.addons.kube import Kube, helm_release, metadata
from components.addons.plan import AddonsPlan, Licensing
from components.mirror import MirrorPlan
from components.secrets import LabSecrets

NFD_NAMESPACE = "node-feature-discovery"
GPU_NAMESPACE = "gpu-operator"
LICENSING_SECRET = "licensing-config"
REGISTRY_SECRET = "registry-secret"
FEATURE_TYPE_VGPU = 1  # gridd.conf FeatureType for NVIDIA vGPU guests


def nfd_values(mirror: MirrorPlan | None = None) -> dict[str, Any]:
    # Label network (02), display (03) and accelerator classes by vendor so both operators find
    # GPUs (pci-10de) and ConnectX NICs (pci-15b3).
    return with_mirror({"worker": {"config": {"sources": {"pci": {
        "deviceClassWhitelist": ["02", "03", "0b40", "12"],
        "deviceLabelFields": ["vendor"],
    }}}}}, versions.NFD_IMAGES, mirror)


def render_gridd_conf(licensing: Licensing) -> str:
    """gridd.conf for vGPU guests (used unless the gridd_conf secret supplies one)."""
    lines = ["# vGPU guest licensing, written by gpu-lab", f"FeatureType={FEATURE_TYPE_VGPU}"]
    if licensing.mode == "legacy":
        lines += [f"ServerAddress={licensing.server_address}", f"ServerPort={licensing.server_port}"]
    else:
        lines.append("# NLS: the client configuration token sits beside this file")
    return "\n".join(lines) + "\n"


def gpu_operator_values(addons: AddonsPlan, openshift: bool) -> dict[str, Any]:
    gpu = addons.gpu_operator
    driver: dict[str, Any] = {"enabled": True}
    if gpu.vgpu is not None:
        driver.update({
            "repository": gpu.vgpu.repository,
            "image": gpu.vgpu.image,
            "version": gpu.vgpu.version,
            "imagePullSecrets": [REGISTRY_SECRET],
            "licensingConfig": {"secretName": LICENSING_SECRET, "nlsEnabled": gpu.licensing.mode == "nls"},
        })
    if gpu.gpudirect_rdma:
        # The DeepOps nodes run MOFED on the host, so no driver container for it.
        driver["rdma"] = {"enabled": True, "useHostMofed": True}
    return with_mirror({
        # one NFD per cluster (nfd_source)
        "nfd": {"enabled": addons.nfd_source == "gpuOperator"},
        "platform": {"openshift": openshift},
        "driver": driver,
    }, versions.GPU_OPERATOR_IMAGES, addons.mirror)


def registry_secret(registry_auth: pulumi.Input[str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata(REGISTRY_SECRET, GPU_NAMESPACE),
            "type": "kubernetes.io/dockerconfigjson",
            "stringData": pulumi.Output.secret({".dockerconfigjson": registry_auth})}


def licensing_secret(gridd_conf: pulumi.Input[str], token: pulumi.Input[str] | None) -> dict[str, Any]:
    data: dict[str, Any] = {"gridd.conf": gridd_conf}
    if token is not None:
        data["client_configuration_token.tok"] = token
    # The whole payload stays secret even when gridd.conf itself came from plain config.
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata(LICENSING_SECRET, GPU_NAMESPACE),
            "type": "Opaque", "stringData": pulumi.Output.secret(data)}


def deploy_nfd(kube: Kube) -> pulumi.Resource:
    ns = kube.namespace("nfd-namespace", NFD_NAMESPACE)
    return helm_release(kube, "nfd", versions.NFD, NFD_NAMESPACE, nfd_values(kube.mirror), depends_on=[ns])


def deploy_gpu_operator(kube: Kube, addons: AddonsPlan, secrets: LabSecrets,
                        after: list[pulumi.Resource | None]) -> pulumi.Resource:
    gpu = addons.gpu_operator
    ns = kube.namespace("gpu-operator-namespace", GPU_NAMESPACE)
    needed: list[pulumi.Resource] = [ns]
    if gpu.vgpu is not None:
        auth = secrets.require("registry_auth", "the vGPU guest driver image is pulled from a private registry")
        needed.append(kube.register("registry-secret", registry_secret(auth), [ns]))
        token = None
        if gpu.licensing.mode == "nls":
            token = secrets.require("nvidia_license_token", "vGPU guests license through NLS")
        gridd = secrets.gridd_conf if secrets.gridd_conf is not None else render_gridd_conf(gpu.licensing)
        needed.append(kube.register("licensing-secret", licensing_secret(gridd, token), [ns]))
    return helm_release(kube, "gpu-operator", versions.GPU_OPERATOR, GPU_NAMESPACE,
                        gpu_operator_values(addons, kube.openshift), depends_on=[*needed, *after])
