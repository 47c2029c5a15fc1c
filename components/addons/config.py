"""The `addons` configuration section: what gets installed on the cluster, each part switchable.

Everything is off by default, so a stack without a `gpu-lab:addons` block installs nothing.
Defaults elsewhere follow the guides: the vGPU guest driver and NLS licensing,
PVRDMA for vSphere workers and the DeepOps SR-IOV rails for bare metal, the
Bitfusion wrapping of jobs. Versions live in `versions.py`, not here.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from components.addons import versions
from components.facts import VsphereFacts
from components.model import Cidr, HostName, IPv4, Model, Problem, Vlan, dockerconfigjson_problems, duplicates
from labrules.kubernetes import GPU_RESOURCE

MIN_NODES = 2
"""Two-node jobs (ib_write_bw, NCCL across workers) need two different workers."""

# PCI ids (vendor, device): the guides' NICs.
PVRDMA_PCI = ("15ad", "0820")  # VMware paravirtual RDMA function of a vmxnet3/PVRDMA NIC
CONNECTX5_PF = ("15b3", "1017")  # MT27800 ConnectX-5 physical function
CONNECTX5_VF = ("15b3", "1018")  # its virtual function


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


class NetworkConfig(Model):
    enabled: bool = False
    mode: Literal["pvrdma", "sriov"] | None = Field(
        default=None, description="pvrdma on vSphere workers, sriov on bare metal (default: from the platform)")
    interface: str = Field(default="ens224", description="PVRDMA netdev inside the worker VMs")
    ib_device: str | None = Field(default=None, description="RDMA device for ib_write_bw (default vmw_pvrdma0 "
                                                               "with pvrdma, any device with sriov)")
    pod_pool: Cidr | None = Field(default=None, description="pod addresses on the RDMA network (pvrdma); "
                                                               "default: the upper half of vsphere.networks.rdma.cidr")
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


# ---------------------------------------------------------------- derived facts


@dataclass(frozen=True)
class AddonsLab:
    """The add-ons section and the lab facts its rules and objects read."""

    addons: AddonsConfig
    vsphere: VsphereFacts | None
    """The vSphere plan (worker VMs, RDMA network), None on bare metal."""
    openshift: bool
    """Whether this stack installs OpenShift: the cluster's platform, and where the kubeconfig comes from."""


def nfd_source(lab: AddonsLab) -> str | None:
    """Which one release deploys Node Feature Discovery: "nfd" (the add-on), "gpuOperator" or
    "networkOperator" (their charts' own NFD subchart), or None when nothing needs it.

    Each operator chart turns on its own NFD unless told not to (gpu-operator and network-operator
    values.yaml: nfd.enabled: true), and two NFDs of different versions on the same nodes fight over
    the same labels. The add-on wins when on; else the GPU operator's (NFD 0.19, the version the
    add-on pins, labelling NICs as well as GPUs); else the network operator's.
    """
    a = lab.addons
    if a.nfd.enabled:
        return "nfd"
    if a.gpu_operator.enabled:
        return "gpuOperator"
    if a.network.enabled:
        return "networkOperator"
    return None


def network_mode(lab: AddonsLab) -> str:
    """pvrdma on vSphere, sriov on bare metal, unless the config says otherwise."""
    return lab.addons.network.mode or ("pvrdma" if lab.vsphere is not None else "sriov")


def worker_nodes(lab: AddonsLab) -> list[str]:
    """Node names of the GPU workers the jobs run on."""
    if lab.addons.jobs.nodes is not None:
        return list(lab.addons.jobs.nodes)
    return lab.vsphere.worker_names if lab.vsphere else []


def rdma_cidr(lab: AddonsLab) -> ipaddress.IPv4Network | None:
    """The subnet the ib_write_bw pair talks on: the RDMA network, or the first SR-IOV rail."""
    if network_mode(lab) == "pvrdma":
        return ipaddress.IPv4Network(lab.vsphere.rdma_cidr) if lab.vsphere else None
    return ipaddress.IPv4Network(lab.addons.network.sriov.rails[0].cidr)


def pod_pool(lab: AddonsLab) -> ipaddress.IPv4Network | None:
    """Pod addresses on the PVRDMA network."""
    if lab.addons.network.pod_pool:
        return ipaddress.IPv4Network(lab.addons.network.pod_pool)
    net = rdma_cidr(lab)
    if net is None or net.prefixlen >= 31:
        return None
    return list(net.subnets(prefixlen_diff=1))[1]


def ib_write_bw_addresses(lab: AddonsLab) -> list[str]:
    """Fixed addresses of the ib_write_bw server and client on the RDMA network."""
    if lab.addons.jobs.ib_write_bw_addresses:
        return [str(a) for a in lab.addons.jobs.ib_write_bw_addresses]
    pool = pod_pool(lab) if network_mode(lab) == "pvrdma" else rdma_cidr(lab)
    if pool is None:
        return []
    last = pool.broadcast_address
    return [str(last - 2), str(last - 1)]


def _lab_rdma_addresses(lab: AddonsLab) -> dict[str, str]:
    """Addresses already taken on the RDMA network: vmk ports and worker VM NICs."""
    return lab.vsphere.rdma_addresses_taken() if lab.vsphere else {}


# ---------------------------------------------------------------- rules


def check(lab: AddonsLab) -> list[Problem]:
    """Rules across the add-ons and the rest of the lab."""
    a = lab.addons
    p: list[Problem] = []
    mode = network_mode(lab)
    jobs = a.jobs

    # Add-ons the jobs depend on.
    rdma_jobs = {"ibWriteBw": jobs.ib_write_bw, **jobs.mpi_jobs}
    gpu_jobs = {"nvidiaSmi": jobs.nvidia_smi, **jobs.mpi_jobs}
    for key, on in rdma_jobs.items():
        if on and not a.network.enabled:
            p.append(Problem(f"addons.jobs.{key}", "runs over the RDMA network; set addons.network.enabled: true"))
    for key, on in jobs.mpi_jobs.items():
        if on and not a.mpi_operator.enabled:
            p.append(Problem(f"addons.jobs.{key}", "is an MPIJob; set addons.mpiOperator.enabled: true"))
    for key, on in gpu_jobs.items():
        if on and not a.gpu_operator.enabled:
            p.append(Problem(f"addons.jobs.{key}",
                             f"requests {GPU_RESOURCE}; set addons.gpuOperator.enabled: true"))

    # Nodes the jobs land on.
    nodes = worker_nodes(lab)
    bitfusion_jobs = a.bitfusion.enabled and (a.bitfusion.health_check or a.bitfusion.benchmark)
    if (any(jobs.switches.values()) or bitfusion_jobs or a.network.enabled) and not nodes:
        p.append(Problem("addons.jobs.nodes", "no GPU worker nodes: list the worker node names (no vsphere "
                                              "section to take them from)"))
    two_node = [k for k, on in rdma_jobs.items() if on]
    if two_node and 0 < len(nodes) < MIN_NODES:
        p.append(Problem("addons.jobs.nodes", f"{', '.join(two_node)} need at least {MIN_NODES} worker nodes, "
                                              f"found {len(nodes)}"))
    for name in duplicates(nodes):
        p.append(Problem("addons.jobs.nodes", f"node {name!r} is listed more than once"))

    # vGPU workers: guest driver and one vGPU per VM.
    vms = lab.vsphere.vms if lab.vsphere else ()
    vgpu_profiles = {vm.vgpu_profile for vm in vms if vm.role == "worker" and vm.vgpu_profile}
    if a.gpu_operator.enabled and vgpu_profiles and a.gpu_operator.vgpu is None:
        p.append(Problem("addons.gpuOperator.vgpu",
                         f"worker VMs use vGPU profile {', '.join(sorted(vgpu_profiles))}, where NVIDIA's "
                         "data-center driver does not load; set vgpu.repository to the private registry "
                         "holding the vGPU guest driver image"))
    if vgpu_profiles and jobs.gpus_per_worker != 1 and jobs.nodes is None:
        p.append(Problem("addons.jobs.gpusPerWorker",
                         f"{jobs.gpus_per_worker}: each worker VM carries one vGPU "
                         "(vsphere.workers.vgpuProfile); use 1"))
    lic = a.gpu_operator.licensing
    if a.gpu_operator.enabled and a.gpu_operator.vgpu and lic.mode == "legacy" and not lic.server_address:
        p.append(Problem("addons.gpuOperator.licensing.serverAddress",
                         "licensing mode legacy needs the licence server address (port 7070 by default)"))
    if a.gpu_operator.gpudirect_rdma and mode == "pvrdma":
        p.append(Problem("addons.gpuOperator.gpudirectRdma",
                         "GPUDirect RDMA needs ConnectX devices (network mode sriov); PVRDMA cannot do it; set false"))

    # RDMA networking.
    if a.network.enabled:
        if mode == "pvrdma":
            p += _pvrdma_problems(lab, nodes)
        else:
            p += _sriov_problems(lab)
    if a.network.enabled and jobs.ib_write_bw:
        p += _ib_address_problems(lab)

    if a.bitfusion.enabled and not a.bitfusion.client_image:
        p.append(Problem("addons.bitfusion.clientImage",
                         "Bitfusion jobs need an image with the Bitfusion client installed; set its reference"))
    return p


def _pvrdma_problems(lab: AddonsLab, nodes: list[str]) -> list[Problem]:
    p: list[Problem] = []
    if lab.vsphere is None:
        return [Problem("addons.network.mode", "pvrdma needs the vsphere section (the worker VMs' PVRDMA NICs); "
                                               "bare-metal nodes use mode sriov")]
    net = rdma_cidr(lab)
    pool = pod_pool(lab)
    if pool is None or net is None or not pool.subnet_of(net):
        return [Problem("addons.network.podPool", f"{pool} is not inside the RDMA network {net}; give a subnet of it")]
    for address, owner in sorted(_lab_rdma_addresses(lab).items()):
        if ipaddress.IPv4Address(address) in pool:
            p.append(Problem("addons.network.podPool",
                             f"{pool} contains {address} of {owner}; pick a range the hosts and VMs do not use"))
    if nodes and (pool.num_addresses - 2) // len(nodes) < 2:
        p.append(Problem("addons.network.podPool",
                         f"{pool} is too small for {len(nodes)} nodes; give each node at least 2 addresses"))
    return p


def _sriov_problems(lab: AddonsLab) -> list[Problem]:
    p: list[Problem] = []
    rails = lab.addons.network.sriov.rails
    for key, attr in (("vlan", "vlan"), ("networkName", "network_name"), ("resourceName", "resource_name"),
                      ("pfName", "pf_name")):
        for value in duplicates([getattr(r, attr) for r in rails]):
            p.append(Problem("addons.network.sriov.rails", f"{key} {value!r} is used by more than one rail; "
                                                           "each rail needs its own (one NIC per subnet)"))
    nets = [ipaddress.IPv4Network(r.cidr) for r in rails]
    for i, a in enumerate(nets):
        for b in nets[i + 1:]:
            if a.overlaps(b):
                p.append(Problem(f"addons.network.sriov.rails[{i}].cidr",
                                 f"{a} overlaps {b}; each rail needs its own subnet"))
    return p


def _ib_address_problems(lab: AddonsLab) -> list[Problem]:
    path = "addons.jobs.ibWriteBwAddresses"
    addresses = ib_write_bw_addresses(lab)
    net = rdma_cidr(lab)
    if net is None or len(addresses) != 2:
        return []
    p: list[Problem] = []
    if addresses[0] == addresses[1]:
        p.append(Problem(path, "server and client need different addresses"))
    taken = _lab_rdma_addresses(lab)
    for i, address in enumerate(addresses):
        ip = ipaddress.IPv4Address(address)
        if ip not in net or ip in (net.network_address, net.broadcast_address):
            p.append(Problem(f"{path}[{i}]", f"{address} is not a usable address of the RDMA network {net}"))
        elif address in taken:
            p.append(Problem(f"{path}[{i}]", f"{address} is already used by {taken[address]}"))
    return p


def required_secrets(lab: AddonsLab) -> list[tuple[str, str]]:
    """(LabSecrets attribute, why) for each secret the enabled add-ons need up front."""
    a = lab.addons
    needed: list[tuple[str, str]] = []
    if a.any_enabled and not lab.openshift:
        needed.append(("kubeconfig", "add-ons are enabled and no OpenShift install in this stack provides a "
                                     "kubeconfig"))
    if a.gpu_operator.enabled and a.gpu_operator.vgpu is not None:
        needed.append(("registry_auth", "the vGPU guest driver image is pulled from a private registry"))
        if a.gpu_operator.licensing.mode == "nls":
            needed.append(("nvidia_license_token", "vGPU guests license through NLS "
                                                   "(client_configuration_token.tok)"))
    if a.bitfusion.enabled:
        needed.append(("bitfusion_client_token", "Bitfusion clients authenticate with the tokens archive"))
    return needed


def registry_auth_problems(value: str, path: str = "gpu-lab:registryAuth") -> list[Problem]:
    """gpu-lab:registryAuth becomes the .dockerconfigjson of a kubernetes.io/dockerconfigjson Secret (the vGPU
    guest driver image's pull secret): refused here, naming the key, rather than by the API server."""
    return dockerconfigjson_problems(value, path, "the registry's auth file (podman login --authfile FILE, or "
                                                  "~/.docker/config.json after docker login)")
