"""Every version the add-ons pin, in one place.

Bumping a component is a one-line change here; the component registers these as its
`versions` input so the policy pack and `plan.json` show exactly what a stack installs.
Sources: each project's release tags (checked when pinned), not "latest".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HelmChart:
    chart: str
    repo: str
    version: str


# Node Feature Discovery: the version the pinned GPU operator chart is tested with.
NFD = HelmChart("node-feature-discovery", "https://kubernetes-sigs.github.io/node-feature-discovery/charts", "0.19.0")

# NVIDIA GPU operator (ClusterPolicy nvidia.com/v1). Its chart versions carry the "v".
GPU_OPERATOR = HelmChart("gpu-operator", "https://helm.ngc.nvidia.com/nvidia", "v26.7.0")

# NVIDIA network operator (NicClusterPolicy mellanox.com/v1alpha1); its chart versions do not.
NETWORK_OPERATOR = HelmChart("network-operator", "https://helm.ngc.nvidia.com/nvidia", "26.4.1")

# Components the network operator deploys from a NicClusterPolicy, and the RDMA shared device
# plugin we run ourselves on PVRDMA workers: NVIDIA publishes them all under one tag per release.
NETWORK_OPERATOR_REPOSITORY = "nvcr.io/nvidia/mellanox"
NETWORK_OPERATOR_COMPONENTS = f"network-operator-v{NETWORK_OPERATOR.version}"

# Kubeflow MPI operator, MPIJob kubeflow.org/v2beta1 (the guides' v1alpha2 and v1 are gone).
MPI_OPERATOR = "v0.8.0"
# Its release manifest (repository, tag, path), shipped in components/addons/manifests/ (shipped.py).
MPI_OPERATOR_SOURCE = ("kubeflow/mpi-operator", MPI_OPERATOR, "deploy/v2beta1/mpi-operator.yaml")

# vGPU guest driver built by the user into their private registry (NVIDIA vGPU 17.x branch,
# which still supports the lab's V100s); must match the vGPU manager on the ESXi hosts.
VGPU_GUEST_DRIVER = "550.127.05"

# VMware Bitfusion Kubernetes integration (device plugin, webhook, client package images).
BITFUSION_K8S = "0.2"
BITFUSION_IMAGE_REPO = "docker.io/bitfusiondeviceplugin"

# Images of the acceptance jobs.
CUDA_IMAGE = "nvcr.io/nvidia/cuda:12.4.1-base-ubi8"
# nccl-tests built with MPI, perftest (ib_write_bw) and sshd for the MPI operator; CUDA 12.4
# runs on the 550 guest driver.
NCCL_TESTS_IMAGE = "ghcr.io/coreweave/nccl-tests:12.4.1-cudnn-devel-ubuntu20.04-nccl2.21.5-1-85f9143"
# The guide's TensorFlow/Horovod benchmark image. Upstream publishes it under `latest` only:
# mirror it into the lab registry under a fixed tag and set addons.jobs.images.horovod.
HOROVOD_IMAGE = "docker.io/mpioperator/tensorflow-benchmarks:latest"


# Every image a chart's values name, as "<values path>": "<the chart's default>" (a repository, or for
# the SR-IOV operator's `images` map a whole reference): with a mirror, each is set to its mirrored
# form (components/addons/images.py). tests/addons/test_mirror.py holds them against the charts' values.yaml.
NFD_IMAGES = {"image.repository": "registry.k8s.io/nfd/node-feature-discovery"}

GPU_OPERATOR_IMAGES = {
    "validator.repository": "nvcr.io/nvidia",
    "operator.repository": "nvcr.io/nvidia",
    "driver.repository": "nvcr.io/nvidia",
    "driver.manager.repository": "nvcr.io/nvidia/cloud-native",
    "toolkit.repository": "nvcr.io/nvidia/k8s",
    "devicePlugin.repository": "nvcr.io/nvidia",
    "dcgm.repository": "nvcr.io/nvidia/cloud-native",
    "dcgmExporter.repository": "nvcr.io/nvidia/k8s",
    "gfd.repository": "nvcr.io/nvidia",
    "migManager.repository": "nvcr.io/nvidia/cloud-native",
    "nodeStatusExporter.repository": "nvcr.io/nvidia",
    "gds.repository": "nvcr.io/nvidia/cloud-native",
    "gdrcopy.repository": "nvcr.io/nvidia/cloud-native",
    "vgpuManager.driverManager.repository": "nvcr.io/nvidia/cloud-native",
    "vgpuDeviceManager.repository": "nvcr.io/nvidia/cloud-native",
    "vfioManager.repository": "nvcr.io/nvidia/cloud-native",
    "vfioManager.driverManager.repository": "nvcr.io/nvidia/cloud-native",
    "sandboxDevicePlugin.repository": "nvcr.io/nvidia",
    "kataSandboxDevicePlugin.repository": "nvcr.io/nvidia/cloud-native",
    "ccManager.repository": "nvcr.io/nvidia/cloud-native",
    "draDriver.repository": "nvcr.io/nvidia",
    # its NFD subchart's own default
    "node-feature-discovery.image.repository": "registry.k8s.io/nfd/node-feature-discovery",
}

_SRIOV = "sriov-network-operator.images"
_MELLANOX_TAG = f"network-operator-v{NETWORK_OPERATOR.version}"
NETWORK_OPERATOR_IMAGES = {
    "operator.repository": "nvcr.io/nvidia/cloud-native",
    "operator.ofedDriver.initContainer.repository": NETWORK_OPERATOR_REPOSITORY,
    "node-feature-discovery.image.repository": f"{NETWORK_OPERATOR_REPOSITORY}/node-feature-discovery",
    "maintenance-operator-chart.operator.image.repository": NETWORK_OPERATOR_REPOSITORY,
    **{f"{_SRIOV}.{key}": f"{NETWORK_OPERATOR_REPOSITORY}/{name}:{_MELLANOX_TAG}" for key, name in (
        ("operator", "sriov-network-operator"), ("sriovConfigDaemon", "sriov-network-operator-config-daemon"),
        ("sriovCni", "sriov-cni"), ("ibSriovCni", "ib-sriov-cni"), ("ovsCni", "ovs-cni-plugin"),
        ("rdmaCni", "rdma-cni"), ("sriovDevicePlugin", "sriov-network-device-plugin"),
        ("sriovDraDriver", "dra-driver-sriov"), ("webhook", "sriov-network-operator-webhook"))},
    f"{_SRIOV}.resourcesInjector": "ghcr.io/k8snetworkplumbingwg/network-resources-injector:v1.7.0",
    # the subchart's own defaults; the network operator's values do not set them
    f"{_SRIOV}.metricsExporter": "ghcr.io/k8snetworkplumbingwg/sriov-network-metrics-exporter",
    f"{_SRIOV}.metricsExporterKubeRbacProxy": "quay.io/brancz/kube-rbac-proxy:v0.21.2",
}

# The MPI operator's image in its shipped manifest (a short Docker Hub name).
MPI_OPERATOR_IMAGE = "mpioperator/mpi-operator:0.8.0"


def summary() -> dict[str, str]:
    """Add-on name -> pinned version (the component's `versions` input)."""
    return {
        "nfd": NFD.version,
        "gpuOperator": GPU_OPERATOR.version,
        "networkOperator": NETWORK_OPERATOR.version,
        "mpiOperator": MPI_OPERATOR,
        "bitfusion": BITFUSION_K8S,
    }
