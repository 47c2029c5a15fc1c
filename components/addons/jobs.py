"""Fabric acceptance jobs: prove the GPUs and the RDMA fabric perform, then hand logs to the report.

- nvidia-smi on every GPU worker (the OpenShift guide's validation pod, as one Job per node);
- ib_write_bw server and client on two different workers over the RDMA network;
- NCCL all_reduce_perf across all workers over RDMA, and the same over TCP;
- the TensorFlow/Horovod ResNet-50 MPIJob over RDMA and over TCP.

No pod here is privileged (the guide's MPIJob was): the RDMA device comes from the device
plugin resource, pinned memory from IPC_LOCK, the network from the Multus annotation.
Only `NCCL_IB_DISABLE` (and, for Horovod, `HOROVOD_MPI_THREADS_DISABLE`) differ between the
RDMA and TCP runs, and both use the RDMA link's interfaces, so the comparison is transport only.
"""

from __future__ import annotations

import shlex
from typing import Any

import pulumi

from components.addons.kube import HOSTNAME, SKIP_AWAIT, Kube, metadata, role_of
from components.addons.mpi import mpijob, mpirun
from components.addons.plan import AddonsPlan, RdmaPlan
from components.addons.rdma import on_nodes
from labrules.kubernetes import GPU_RESOURCE, RDMA_CAPABILITY

LABEL = "gpu-lab.io/acceptance"
SERVICE_ACCOUNT = "gpu-lab-acceptance"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
SCC = "gpu-lab-rdma"

NVIDIA_SMI = "nvidia-smi"
IB_SERVER = "ib-write-bw-server"
IB_CLIENT = "ib-write-bw-client"
NCCL = {"rdma": "nccl-allreduce-rdma", "tcp": "nccl-allreduce-tcp"}
HOROVOD = {"rdma": "horovod-resnet50-rdma", "tcp": "horovod-resnet50-tcp"}
ALL_REDUCE_PERF = "/opt/nccl_tests/build/all_reduce_perf"
TF_CNN_BENCHMARKS = "scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py"


# ---------------------------------------------------------------- shared pieces


def job_labels(job: str) -> dict[str, str]:
    return {LABEL: job}


def rdma_security() -> dict[str, Any]:
    """Pinned memory for RDMA verbs, nothing more."""
    return {"privileged": False, "capabilities": {"add": [RDMA_CAPABILITY]}}


def spread(job: str, nodes: list[str]) -> dict[str, Any]:
    """Only the GPU workers, and at most one pod of `job` per node."""
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": on_nodes(nodes)},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": job_labels(job)}, "topologyKey": HOSTNAME}]},
    }


def acceptance_job(name: str, namespace: str, pod: dict[str, Any], backoff: int = 2,
                   deadline: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"backoffLimit": backoff, "template": pod}
    if deadline:
        spec["activeDeadlineSeconds"] = deadline
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": metadata(name, namespace, labels=job_labels(name), annotations=SKIP_AWAIT), "spec": spec}


# ---------------------------------------------------------------- nvidia-smi


def nvidia_smi_job(node: str, namespace: str, image: str) -> dict[str, Any]:
    name = f"{NVIDIA_SMI}-{node}"
    gpu = {GPU_RESOURCE: 1}
    return acceptance_job(name, namespace, {
        "metadata": {"labels": job_labels(name)},
        "spec": {
            "restartPolicy": "Never",
            "serviceAccountName": SERVICE_ACCOUNT,
            "nodeSelector": {HOSTNAME: node},
            "containers": [{"name": NVIDIA_SMI, "image": image, "command": ["nvidia-smi"],
                            "resources": {"limits": gpu, "requests": gpu}}],
        },
    })


# ---------------------------------------------------------------- ib_write_bw


def ib_write_bw_command(device: str | None, server: str | None = None) -> list[str]:
    """the DeepOps RoCE guide's invocation: rdma_cm connection, results in Gb/s; the client names the server."""
    cmd = ["ib_write_bw", "-R"]
    if device:
        cmd += ["-d", device]
    cmd.append("--report_gbits")
    if server:
        cmd.append(server)
    return cmd


def ib_write_bw_jobs(plan: RdmaPlan, nodes: list[str], addresses: list[str], namespace: str,
                     image: str) -> list[dict[str, Any]]:
    """Server on the first worker, client on the second, both with fixed RDMA addresses."""
    server_ip, client_ip = addresses
    # The client starts whenever it is scheduled; retry until the server listens.
    client = ib_write_bw_command(plan.ib_device, server_ip)
    client_script = (f"for attempt in $(seq 1 30); do {shlex.join(client)} && exit 0; sleep 10; done; "
                     "echo 'ib_write_bw: server never answered' >&2; exit 1")
    jobs = []
    for name, node, ip, command, deadline in (
        (IB_SERVER, nodes[0], server_ip, ib_write_bw_command(plan.ib_device), 900),
        (IB_CLIENT, nodes[1], client_ip, ["/bin/sh", "-c", client_script], None),
    ):
        jobs.append(acceptance_job(name, namespace, {
            "metadata": {"labels": job_labels(name),
                         "annotations": {NETWORKS_ANNOTATION: plan.static_annotation(ip)}},
            "spec": {
                "restartPolicy": "Never",
                "serviceAccountName": SERVICE_ACCOUNT,
                "nodeSelector": {HOSTNAME: node},
                "containers": [{"name": "ib-write-bw", "image": image, "command": command,
                                "securityContext": rdma_security(),
                                "resources": {"limits": plan.limits, "requests": plan.limits}}],
            },
        }, deadline=deadline))
    return jobs


# ---------------------------------------------------------------- MPI jobs


def nccl_env(transport: str, plan: RdmaPlan, gpudirect: bool) -> list[dict[str, str]]:
    env = {
        "NCCL_IB_DISABLE": "0" if transport == "rdma" else "1",
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": "INIT,NET",
        # Secondary interfaces (net1, net2, ...) are on the RDMA link: TCP runs use it too.
        "NCCL_SOCKET_IFNAME": "net",
        # GPUDirect RDMA only on ConnectX with the host's peer-memory driver.
        "NCCL_NET_GDR_LEVEL": "2" if gpudirect else "0",
    }
    if plan.ib_device:
        env["NCCL_IB_HCA"] = plan.ib_device
    return [{"name": k, "value": v} for k, v in env.items()]


def _mpi_worker(job: str, plan: RdmaPlan, nodes: list[str], image: str, gpus: int,
                env: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "metadata": {"labels": job_labels(job), "annotations": {NETWORKS_ANNOTATION: plan.annotation()}},
        "spec": {
            "serviceAccountName": SERVICE_ACCOUNT,
            "affinity": spread(job, nodes),
            "containers": [{
                "name": "worker", "image": image, "env": env,
                "securityContext": rdma_security(),
                "resources": {"limits": {GPU_RESOURCE: gpus, **plan.limits}},
            }],
        },
    }


def _mpi_launcher(job: str, image: str, command: list[str]) -> dict[str, Any]:
    return {"metadata": {"labels": {LABEL: f"{job}-launcher"}},
            "spec": {"serviceAccountName": SERVICE_ACCOUNT,
                     "containers": [{"name": "launcher", "image": image, "command": command}]}}


def _exported(env: list[dict[str, str]], extra: tuple[str, ...] = ()) -> list[str]:
    # Ranks start over ssh and do not see the worker container's env: pass it with -x.
    return [f"{e['name']}={e['value']}" for e in env] + list(extra) + ["LD_LIBRARY_PATH", "PATH"]


def nccl_job(transport: str, plan: RdmaPlan, nodes: list[str], gpus: int, namespace: str, image: str,
             gpudirect: bool = False) -> dict[str, Any]:
    name = NCCL[transport]
    # Ring: on two nodes NCCL picks its tree algorithm, whose bus bandwidth can exceed the link, so
    # the figure could not be judged against line rate (nccl-tests doc/PERFORMANCE.md, "Bus bandwidth").
    env = [*nccl_env(transport, plan, gpudirect), {"name": "NCCL_ALGO", "value": "Ring"}]
    # 8 B to 2 GB, doubling, one GPU per rank: the table of the DeepOps RoCE guide.
    program = [ALL_REDUCE_PERF, "-b", "8", "-e", "2G", "-f", "2", "-g", "1"]
    command = mpirun(len(nodes) * gpus, _exported(env), program)
    return mpijob(name, namespace, workers=len(nodes), slots_per_worker=gpus, labels=job_labels(name),
                  launcher=_mpi_launcher(name, image, command),
                  worker=_mpi_worker(name, plan, nodes, image, gpus, env))


def tf_cnn_benchmarks_args(batches: int) -> list[str]:
    """The guide's ResNet-50 run, shortened to `batches` steps."""
    return ["--model=resnet50", "--batch_size=32", "--variable_update=horovod", "--use_fp16", "--xla=True",
            f"--num_batches={batches}"]


def horovod_job(transport: str, plan: RdmaPlan, nodes: list[str], gpus: int, namespace: str, image: str,
                batches: int) -> dict[str, Any]:
    name = HOROVOD[transport]
    env = nccl_env(transport, plan, gpudirect=False)
    # the RDG: MPI threads off with RDMA, on with TCP.
    env.append({"name": "HOROVOD_MPI_THREADS_DISABLE", "value": "1" if transport == "rdma" else "0"})
    program = ["python", TF_CNN_BENCHMARKS, *tf_cnn_benchmarks_args(batches)]
    command = mpirun(len(nodes) * gpus, _exported(env), program)
    return mpijob(name, namespace, workers=len(nodes), slots_per_worker=gpus, labels=job_labels(name),
                  launcher=_mpi_launcher(name, image, command),
                  worker=_mpi_worker(name, plan, nodes, image, gpus, env))


# ---------------------------------------------------------------- access


def acceptance_access(namespace: str, openshift: bool) -> list[dict[str, Any]]:
    """The jobs' service account; on OpenShift an SCC that grants IPC_LOCK and nothing privileged."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(SERVICE_ACCOUNT, namespace)}]
    if not openshift:
        return objects
    objects += [
        {"apiVersion": "security.openshift.io/v1", "kind": "SecurityContextConstraints",
         "metadata": {"name": SCC},
         "allowPrivilegedContainer": False,
         "allowPrivilegeEscalation": True,
         "allowedCapabilities": [RDMA_CAPABILITY],
         "requiredDropCapabilities": ["MKNOD"],
         "allowHostDirVolumePlugin": False, "allowHostIPC": False, "allowHostNetwork": False,
         "allowHostPID": False, "allowHostPorts": False, "readOnlyRootFilesystem": False,
         # MPI workers run sshd as root (the MPI operator's images).
         "runAsUser": {"type": "RunAsAny"}, "seLinuxContext": {"type": "MustRunAs"},
         "fsGroup": {"type": "RunAsAny"}, "supplementalGroups": {"type": "RunAsAny"},
         "volumes": ["configMap", "downwardAPI", "emptyDir", "projected", "secret"],
         # Required by the SCC CRD (openshift/api, security/v1 SecurityContextConstraints), null allowed.
         # Pulumi drops a top-level None, so the equivalents: priority 0 is what "unset" means, and no
         # capability is added by default.
         "priority": 0, "defaultAddCapabilities": [],
         "users": [], "groups": []},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": f"use-{SCC}"},
         "rules": [{"apiGroups": ["security.openshift.io"], "resources": ["securitycontextconstraints"],
                    "resourceNames": [SCC], "verbs": ["use"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": metadata(f"use-{SCC}", namespace),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"use-{SCC}"},
         "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}]},
    ]
    return objects


# ---------------------------------------------------------------- assembly


def acceptance_manifests(addons: AddonsPlan, plan: RdmaPlan | None) -> list[dict[str, Any]]:
    """Every enabled job, in the order the config lists them."""
    jobs = addons.jobs
    ns, images, gpus = jobs.namespace, jobs.images, jobs.gpus_per_worker
    nodes = list(jobs.nodes)
    out: list[dict[str, Any]] = []
    if jobs.nvidia_smi:
        out += [nvidia_smi_job(node, ns, images.cuda) for node in nodes]
    if plan is None:
        return out
    if jobs.ib_write_bw:
        out += ib_write_bw_jobs(plan, nodes, list(jobs.ib_write_bw_addresses), ns, images.perftest)
    gpudirect = addons.gpu_operator.gpudirect_rdma
    for transport, on in (("rdma", jobs.nccl_rdma), ("tcp", jobs.nccl_tcp)):
        if on:
            out.append(nccl_job(transport, plan, nodes, gpus, ns, images.nccl_tests, gpudirect))
    for transport, on in (("rdma", jobs.horovod_rdma), ("tcp", jobs.horovod_tcp)):
        if on:
            out.append(horovod_job(transport, plan, nodes, gpus, ns, images.horovod, jobs.horovod_batches))
    return out


def deploy_jobs(kube: Kube, addons: AddonsPlan, plan: RdmaPlan | None,
                after: list[pulumi.Resource | None]) -> list[str]:
    """Register the jobs; returns their names (for the report's log collection)."""
    names = []
    for m in acceptance_manifests(addons, plan):
        # Job templates are immutable and names are fixed: replace by deleting first.
        kube.register(role_of(m), m, after,
                      delete_before_replace=True, replace_on_changes=["spec"])
        names.append(m["metadata"]["name"])
    return names
