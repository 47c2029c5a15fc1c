"""The `addons` section as the stack file says it: what gets installed on the cluster, each part switchable.

Everything is off by default, so a stack without a `gpu-lab:addons` block installs nothing.
Defaults elsewhere follow the guides: the vGPU guest driver and NLS licensing, PVRDMA for vSphere
workers and the DeepOps SR-IOV rails for bare metal, the Bitfusion wrapping of jobs. Versions
live in `versions.py`, not here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from components.addons import versions
from components.model import Cidr, HostName, IPv4, Model, Vlan


class Toggle(Model):
    enabled: bool = False


class VgpuDriver(Model):
    """The vGPU guest driver image the user builds from NVIDIA's driver container."""

    repository: str = Field(description="private registry path holding the image, e.g. registry.lab.local:5000/nvidia")
    image: str = Field(default="driver", description="image name inside the repository")
    version: str = Field(default=versions.VGPU_GUEST_DRIVER,
                         description="guest driver version; must match the hosts' vGPU manager branch")


class Licensing(Model):
    """vGPU licensing: NLS (client configuration token) or the legacy licence server."""

    mode: Literal["nls", "legacy"] = "nls"
    server_address: str | None = Field(default=None, description="legacy licence server host (mode legacy)")
    server_port: int = Field(default=7070, ge=1, le=65535, description="legacy licence server port")


class GpuOperatorConfig(Model):
    enabled: bool = False
    vgpu: VgpuDriver | None = Field(
        default=None, description="vGPU guest driver; omit on bare metal to use NVIDIA's data-center driver")
    licensing: Licensing = Licensing()
    gpudirect_rdma: bool = Field(default=False, description="GPUDirect RDMA (needs ConnectX, i.e. mode sriov)")


class SriovRail(Model):
    """One rail of the DeepOps design: a ConnectX-5 port, its VLAN and its pod network."""

    pf_name: str = Field(description="physical function netdev, e.g. enp5s0")
    vlan: Vlan
    network_name: HostName = Field(description="network attachment name pods ask for, e.g. sriov111")
    resource_name: str = Field(pattern=r"^[A-Za-z0-9_]+$", description="device plugin resource, e.g. sriov_111")
    cidr: Cidr = Field(description="addresses of the pods on this rail")
    link_gbps: float = Field(default=100, gt=0, description="line rate of this rail's port, Gb/s (acceptance report)")


class SriovConfig(Model):
    num_vfs: int = Field(default=8, ge=1, le=127, description="virtual functions per port")
    rails: list[SriovRail] = Field(
        min_length=1,
        default_factory=lambda: [
            SriovRail(pf_name="enp5s0", vlan=111, network_name="sriov111", resource_name="sriov_111",
                      cidr="10.10.11.0/24"),
            SriovRail(pf_name="enp132s0", vlan=112, network_name="sriov112", resource_name="sriov_112",
                      cidr="10.10.12.0/24"),
        ],
    )


DEFAULT_POD_ADDRESSES_PER_NODE = 8
"""One RDMA pod per GPU of an 8-GPU node: the block each node gets, fixed, so that adding or removing a
worker moves no other node's range (nv-ipam keeps a node's range only while the block size stays)."""


class NetworkConfig(Model):
    enabled: bool = False
    mode: Literal["pvrdma", "sriov"] | None = Field(
        default=None, description="pvrdma on vSphere workers, sriov on bare metal (default: from the platform)")
    interface: str = Field(default="ens224", description="PVRDMA netdev inside the worker VMs")
    ib_device: str | None = Field(default=None, description="RDMA device for ib_write_bw (default vmw_pvrdma0 "
                                                               "with pvrdma, any device with sriov)")
    pod_pool: Cidr | None = Field(default=None, description="pod addresses on the RDMA network (pvrdma); "
                                                               "default: the upper half of vsphere.networks.rdma.cidr")
    pod_addresses_per_node: int = Field(
        default=DEFAULT_POD_ADDRESSES_PER_NODE, ge=2,
        description="addresses nv-ipam gives each node out of each pool (its perNodeBlockSize); keep it once "
                    "RDMA pods run: a change hands every node a new range while running pods keep their addresses")
    sriov: SriovConfig = SriovConfig()


class JobImages(Model):
    cuda: str = versions.CUDA_IMAGE
    nccl_tests: str = versions.NCCL_TESTS_IMAGE
    perftest: str = versions.NCCL_TESTS_IMAGE
    horovod: str = versions.HOROVOD_IMAGE


class JobsConfig(Model):
    """Fabric acceptance jobs; each one is off unless switched on."""

    namespace: HostName = "gpu-lab-acceptance"
    nodes: list[HostName] | None = Field(
        default=None, description="GPU worker node names (default: the vsphere section's worker VMs)")
    gpus_per_worker: int = Field(default=1, ge=1, le=16)
    nvidia_smi: bool = False
    ib_write_bw: bool = False
    nccl_rdma: bool = False
    nccl_tcp: bool = False
    horovod_rdma: bool = False
    horovod_tcp: bool = False
    ib_write_bw_addresses: list[IPv4] | None = Field(
        default=None, min_length=2, max_length=2,
        description="fixed RDMA addresses of the ib_write_bw server and client (default: last two of the pool)")
    horovod_batches: int = Field(default=100, ge=1, description="tf_cnn_benchmarks --num_batches")
    images: JobImages = JobImages()

    @property
    def mpi_jobs(self) -> dict[str, bool]:
        return {"ncclRdma": self.nccl_rdma, "ncclTcp": self.nccl_tcp,
                "horovodRdma": self.horovod_rdma, "horovodTcp": self.horovod_tcp}

    @property
    def switches(self) -> dict[str, bool]:
        return {"nvidiaSmi": self.nvidia_smi, "ibWriteBw": self.ib_write_bw, **self.mpi_jobs}


class BitfusionConfig(Model):
    enabled: bool = False
    client_image: str | None = Field(
        default=None, description="image with the Bitfusion client installed (the Bitfusion guide, step 3)")
    client_os: Literal["ubuntu18", "ubuntu20", "centos7", "centos8"] = "ubuntu20"
    gpus: int = Field(default=1, ge=1, description="`bitfusion run -n`")
    fraction: float = Field(default=0.5, gt=0, le=1, description="`bitfusion run -p`: share of each GPU")
    health_check: bool = True
    benchmark: bool = True


class AddonsConfig(Model):
    nfd: Toggle = Toggle()
    gpu_operator: GpuOperatorConfig = GpuOperatorConfig()
    network: NetworkConfig = NetworkConfig()
    mpi_operator: Toggle = Toggle()
    jobs: JobsConfig = JobsConfig()
    bitfusion: BitfusionConfig = BitfusionConfig()

    def enabled_map(self) -> dict[str, bool]:
        """Add-on name -> on/off (the component's `enabled` input)."""
        return {
            "nfd": self.nfd.enabled,
            "gpuOperator": self.gpu_operator.enabled,
            "network": self.network.enabled,
            "mpiOperator": self.mpi_operator.enabled,
            **self.jobs.switches,
            "bitfusion": self.bitfusion.enabled,
        }

    @property
    def any_enabled(self) -> bool:
        return any(self.enabled_map().values())
