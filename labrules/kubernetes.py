"""Kubernetes: how GPU and RDMA workloads ask for their devices.

Sources: the NVIDIA device plugin's extended resource (NVIDIA k8s-device-plugin, README,
https://github.com/NVIDIA/k8s-device-plugin), and the DeepOps RoCE guide (NVIDIA DeepOps,
High-Performance RoCE Implementation in Multi-Node Kubernetes Cluster,
https://github.com/NVIDIA/deepops/blob/master/docs/k8s-cluster/roce-perf-k8s.md), whose RDMA jobs
add IPC_LOCK so verbs can pin memory.
"""

from __future__ import annotations

# The extended resource a GPU is scheduled by; Kubernetes needs it in limits (requests alone are refused).
GPU_RESOURCE = "nvidia.com/gpu"

# The one capability RDMA needs (pinning memory); nothing privileged.
RDMA_CAPABILITY = "IPC_LOCK"

# A container asks for RDMA when a resource name contains one of these (the RDMA shared device
# plugin's rdma/<name>, SR-IOV network resources).
RDMA_RESOURCE_PATTERNS = ("rdma", "sriov")
