"""The add-ons' facts: what the rules read of the lab (AddonsLab), and what the components read (AddonsPlan).

Each derived fact (which release brings NFD, the RDMA network mode, the worker nodes, the pod
pool, the ib_write_bw addresses, what a pod needs of the RDMA network) is decided here once; the
lab plan (components/lab_plan.py) carries the AddonsPlan addons_plan makes of a validated AddonsLab,
and the components and tools read that.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass

from components.addons.model import AddonsConfig
from components.facts import VsphereFacts
from components.mirror import MirrorPlan
from labrules.vsphere import RDMA_MTU

PVRDMA_RESOURCE = "pvrdma"  # -> rdma/pvrdma
PVRDMA_NETWORK = "rdma-net"
PVRDMA_STATIC_NETWORK = "rdma-static"
SRIOV_RESOURCE_PREFIX = "nvidia.com"


@dataclass(frozen=True)
class AddonsLab:
    """The add-ons section and the lab facts its rules read."""

    addons: AddonsConfig
    vsphere: VsphereFacts | None
    """The vSphere plan (worker VMs, RDMA network), None on bare metal."""
    openshift: bool
    """Whether this stack installs OpenShift: the cluster's platform, and where the kubeconfig comes from."""
    mirror: MirrorPlan | None = None
    """The lab's image and chart mirror; None: the public registries and repositories."""


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


# ---------------------------------------------------------------- what the components read


@dataclass(frozen=True)
class VgpuDriver:
    repository: str
    image: str
    version: str


@dataclass(frozen=True)
class Licensing:
    mode: str
    """nls or legacy."""
    server_address: str | None
    server_port: int


@dataclass(frozen=True)
class GpuOperatorPlan:
    enabled: bool
    vgpu: VgpuDriver | None
    """The vGPU guest driver image; None on bare metal (NVIDIA's data-center driver)."""
    licensing: Licensing
    gpudirect_rdma: bool


@dataclass(frozen=True)
class SriovRail:
    pf_name: str
    vlan: int
    network_name: str
    resource_name: str
    cidr: str


@dataclass(frozen=True)
class NetworkPlan:
    enabled: bool
    mode: str
    """pvrdma or sriov (network_mode)."""
    interface: str
    ib_device: str | None
    rdma_cidr: ipaddress.IPv4Network | None
    rdma_mtu: int | None
    """The vSphere RDMA network's MTU, None on bare metal."""
    pod_pool: ipaddress.IPv4Network | None
    pod_addresses_per_node: int
    """nv-ipam's perNodeBlockSize of every pool: fixed, never the pool divided by the nodes."""
    num_vfs: int
    rails: tuple[SriovRail, ...]


@dataclass(frozen=True)
class RdmaPlan:
    """What a pod needs to use the RDMA network, whichever design provides it."""

    mode: str
    networks: tuple[str, ...]
    static_network: str
    static_prefix: int
    resources: tuple[tuple[str, int], ...]
    ib_device: str | None
    mtu: int

    @property
    def limits(self) -> dict[str, int]:
        return dict(self.resources)

    def annotation(self) -> str:
        """`k8s.v1.cni.cncf.io/networks` value for pods on every RDMA network."""
        return ",".join(self.networks)

    def static_annotation(self, address: str) -> str:
        """Network selection asking for a fixed address on the static attachment."""
        return json.dumps([{"name": self.static_network, "ips": [f"{address}/{self.static_prefix}"]}])


def rdma_plan(net: NetworkPlan) -> RdmaPlan:
    """What pods need of the RDMA network the add-ons' network plan describes."""
    cidr = net.rdma_cidr
    static_prefix = cidr.prefixlen if cidr else 24
    if net.mode == "pvrdma":
        mtu = net.rdma_mtu if net.rdma_mtu is not None else RDMA_MTU
        return RdmaPlan("pvrdma", (PVRDMA_NETWORK,), PVRDMA_STATIC_NETWORK, static_prefix,
                        ((f"rdma/{PVRDMA_RESOURCE}", 1),), net.ib_device or "vmw_pvrdma0", mtu)
    rails = net.rails
    return RdmaPlan("sriov", tuple(r.network_name for r in rails), f"{rails[0].network_name}-static",
                    static_prefix, tuple((f"{SRIOV_RESOURCE_PREFIX}/{r.resource_name}", 1) for r in rails),
                    net.ib_device, RDMA_MTU)


@dataclass(frozen=True)
class JobImages:
    cuda: str
    nccl_tests: str
    perftest: str
    horovod: str


@dataclass(frozen=True)
class JobsPlan:
    namespace: str
    nodes: tuple[str, ...]
    """The GPU workers the jobs run on (worker_nodes)."""
    gpus_per_worker: int
    nvidia_smi: bool
    ib_write_bw: bool
    nccl_rdma: bool
    nccl_tcp: bool
    horovod_rdma: bool
    horovod_tcp: bool
    ib_write_bw_addresses: tuple[str, ...]
    horovod_batches: int
    images: JobImages

    @property
    def any_enabled(self) -> bool:
        return any((self.nvidia_smi, self.ib_write_bw, self.nccl_rdma, self.nccl_tcp, self.horovod_rdma,
                    self.horovod_tcp))


@dataclass(frozen=True)
class BitfusionPlan:
    enabled: bool
    client_image: str | None
    gpus: int
    fraction: float
    health_check: bool
    benchmark: bool


@dataclass(frozen=True)
class AddonsPlan:
    """What ClusterAddons and `make render` read of the add-ons and the lab."""

    enabled: dict[str, bool]
    """Add-on name -> on/off (the component's `enabled` input), in the section's order."""
    openshift: bool
    nfd: bool
    nfd_source: str | None
    mpi_operator: bool
    gpu_operator: GpuOperatorPlan
    network: NetworkPlan
    jobs: JobsPlan
    bitfusion: BitfusionPlan
    rdma: RdmaPlan | None
    """What pods need of the RDMA network; None with the network add-on off."""
    mirror: MirrorPlan | None = None
    """Where every chart and image comes from when set (components/mirror.py); the images of the plan
    above are already the mirror's."""


def addons_plan(lab: AddonsLab) -> AddonsPlan:
    """The components' facts of a validated add-ons section."""
    a = lab.addons
    gpu, net, jobs, bf = a.gpu_operator, a.network, a.jobs, a.bitfusion
    mirror = lab.mirror
    image = mirror.image if mirror is not None else (lambda reference: reference)
    vgpu = VgpuDriver(image(gpu.vgpu.repository), gpu.vgpu.image, gpu.vgpu.version) if gpu.vgpu is not None else None
    client_image = image(bf.client_image) if bf.client_image is not None else None
    network = NetworkPlan(
        enabled=net.enabled, mode=network_mode(lab), interface=net.interface, ib_device=net.ib_device,
        rdma_cidr=rdma_cidr(lab), rdma_mtu=lab.vsphere.rdma_mtu if lab.vsphere else None,
        pod_pool=pod_pool(lab), pod_addresses_per_node=net.pod_addresses_per_node, num_vfs=net.sriov.num_vfs,
        rails=tuple(SriovRail(r.pf_name, r.vlan, r.network_name, r.resource_name, r.cidr) for r in net.sriov.rails))
    return AddonsPlan(
        enabled=a.enabled_map(),
        openshift=lab.openshift,
        nfd=a.nfd.enabled,
        nfd_source=nfd_source(lab),
        mpi_operator=a.mpi_operator.enabled,
        gpu_operator=GpuOperatorPlan(
            enabled=gpu.enabled, vgpu=vgpu,
            licensing=Licensing(gpu.licensing.mode, gpu.licensing.server_address, gpu.licensing.server_port),
            gpudirect_rdma=gpu.gpudirect_rdma),
        network=network,
        jobs=JobsPlan(
            namespace=jobs.namespace, nodes=tuple(worker_nodes(lab)), gpus_per_worker=jobs.gpus_per_worker,
            nvidia_smi=jobs.nvidia_smi, ib_write_bw=jobs.ib_write_bw, nccl_rdma=jobs.nccl_rdma,
            nccl_tcp=jobs.nccl_tcp, horovod_rdma=jobs.horovod_rdma, horovod_tcp=jobs.horovod_tcp,
            ib_write_bw_addresses=tuple(ib_write_bw_addresses(lab)), horovod_batches=jobs.horovod_batches,
            images=JobImages(image(jobs.images.cuda), image(jobs.images.nccl_tests), image(jobs.images.perftest),
                             image(jobs.images.horovod))),
        bitfusion=BitfusionPlan(bf.enabled, client_image, bf.gpus, bf.fraction, bf.health_check, bf.benchmark),
        rdma=rdma_plan(network) if network.enabled else None,
        mirror=mirror,
    )
