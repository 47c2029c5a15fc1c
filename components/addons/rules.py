"""The `addons` section's rules: what the add-ons need of each other and of the rest of the lab."""

from __future__ import annotations

import ipaddress

from components.addons.plan import AddonsLab, ib_write_bw_addresses, network_mode, pod_pool, rdma_cidr, worker_nodes
from components.model import Problem, dockerconfigjson_problems, duplicates
from labrules.kubernetes import GPU_RESOURCE

MIN_NODES = 2
"""Two-node jobs (ib_write_bw, NCCL across workers) need two different workers."""


def _lab_rdma_addresses(lab: AddonsLab) -> dict[str, str]:
    """Addresses already taken on the RDMA network: vmk ports and worker VM NICs."""
    return lab.vsphere.rdma_addresses_taken() if lab.vsphere else {}


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
    p += _pool_capacity_problems(lab, "addons.network.podPool", pool, nodes)
    return p


def pool_blocks(pool: ipaddress.IPv4Network, block: int) -> int:
    """How many nodes nv-ipam can give a block of `block` addresses out of `pool` (network and broadcast
    addresses aside)."""
    return (pool.num_addresses - 2) // block


def _pool_capacity_problems(lab: AddonsLab, key: str, pool: ipaddress.IPv4Network, nodes: list[str]) -> list[Problem]:
    block = lab.addons.network.pod_addresses_per_node
    if not nodes or pool_blocks(pool, block) >= len(nodes):
        return []
    return [Problem("addons.network.podAddressesPerNode",
                    f"{block} addresses for each of {len(nodes)} nodes do not fit {key} {pool} "
                    f"({pool.num_addresses - 2} addresses, {pool_blocks(pool, block)} blocks): give a larger pool, "
                    f"or a smaller block before any RDMA pod runs")]


def _sriov_problems(lab: AddonsLab) -> list[Problem]:
    p: list[Problem] = []
    rails = lab.addons.network.sriov.rails
    for key, attr in (("vlan", "vlan"), ("networkName", "network_name"), ("resourceName", "resource_name"),
                      ("pfName", "pf_name")):
        for value in duplicates([getattr(r, attr) for r in rails]):
            p.append(Problem("addons.network.sriov.rails", f"{key} {value!r} is used by more than one rail; "
                                                           "each rail needs its own (one NIC per subnet)"))
    nets = [ipaddress.IPv4Network(r.cidr) for r in rails]
    for i, net in enumerate(nets):
        p += _pool_capacity_problems(lab, f"addons.network.sriov.rails[{i}].cidr", net, worker_nodes(lab))
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
