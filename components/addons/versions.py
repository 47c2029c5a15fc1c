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


def summary() -> dict[str, str]:
    """Add-on name -> pinned version (the component's `versions` input)."""
    return {
        "nfd": NFD.version,
        "gpuOperator": GPU_OPERATOR.version,
        "networkOperator": NETWORK_OPERATOR.version,
        "mpiOperator": MPI_OPERATOR,
        "bitfusion": BITFUSION_K8S,
    }
