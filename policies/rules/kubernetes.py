"""Kubernetes workload rules: RDMA pods and GPU limits.

Pod specs are found wherever they sit (Pod, Job, DaemonSet, Deployment, MPIJob replica specs,
CronJob): any object with a ``containers`` list is a pod spec.
"""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import PolicyConfigSchema

from labrules.kubernetes import GPU_RESOURCE, RDMA_CAPABILITY, RDMA_RESOURCE_PATTERNS

from .declare import MANDATORY, resource_policy
from .props import (
    UNKNOWN,
    as_dict,
    as_list,
    dig,
    known,
    number_text,
    props_of,
    reveal,
    same_quantity,
    settings,
    truthy,
)

_NOT_WORKLOADS = ("kubernetes:core/v1:Secret", "kubernetes:core/v1:ConfigMap")
_NOT_WORKLOAD_PREFIXES = ("kubernetes:helm.sh/", "kubernetes:apiextensions.k8s.io/")


def _is_workload(resource_type: str) -> bool:
    return (resource_type.startswith("kubernetes:") and resource_type not in _NOT_WORKLOADS
            and not resource_type.startswith(_NOT_WORKLOAD_PREFIXES))


def containers(props: dict) -> Iterator[tuple[str, dict]]:
    """(path, container) for every container and init container of every pod spec in props."""
    def walk(node, path):
        node = reveal(node)
        if isinstance(node, dict):
            for key in ("initContainers", "containers"):
                if isinstance(reveal(node.get(key)), list):
                    for i, c in enumerate(as_list(node.get(key))):
                        if isinstance(reveal(c), dict):
                            yield f"{path}{key}[{i}]", reveal(c)
            for key, value in node.items():
                if key not in ("containers", "initContainers"):
                    yield from walk(value, f"{path}{key}.")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                yield from walk(value, f"{path.rstrip('.')}[{i}].")
    yield from walk(props, "")


def _resource_names(container: dict) -> list:
    res = as_dict(container.get("resources"))
    return [k for part in ("limits", "requests") for k in as_dict(res.get(part))]


def _label(path: str, container: dict) -> str:
    name = reveal(container.get("name"))
    return f"container {name!r} ({path})" if known(name) else path


# ---------------------------------------------------------------- RDMA pods

RDMA_SCHEMA = PolicyConfigSchema(properties={
    "rdmaResourcePatterns": {
        "type": "array", "items": {"type": "string", "minLength": 1}, "default": list(RDMA_RESOURCE_PATTERNS),
        "description": "a container requests RDMA when a resource name contains one of these (case-insensitive)",
    },
})


def check_rdma_pods(args, report_violation) -> None:
    """Containers that request RDMA resources (a resource name containing 'rdma', or an SR-IOV resource) add
    the IPC_LOCK capability and do not run privileged. DeepOps RoCE guide: its SR-IOV RoCE
    jobs add IPC_LOCK so RDMA can lock memory; privileged mode would grant the whole host for what one
    capability does."""
    if not _is_workload(args.resource_type):
        return
    patterns = [p.lower() for p in settings(args, RDMA_SCHEMA)["rdmaResourcePatterns"]]
    for path, c in containers(props_of(args)):
        wanted = sorted({n for n in _resource_names(c) if any(p in str(n).lower() for p in patterns)})
        if not wanted:
            continue
        sc = reveal(c.get("securityContext"))
        if sc is UNKNOWN:
            continue
        added = dig(sc, "capabilities.add")
        caps = [reveal(cap) for cap in as_list(added)]
        if added is UNKNOWN or any(not known(cap) for cap in caps):
            caps = [RDMA_CAPABILITY]  # cannot tell during preview: assume the best
        if not any(str(cap).upper() in (RDMA_CAPABILITY, f"CAP_{RDMA_CAPABILITY}") for cap in caps):
            report_violation(
                f"{_label(path, c)} requests {', '.join(wanted)} but does not add the IPC_LOCK capability; RDMA "
                "needs it to pin memory: add securityContext.capabilities.add: [IPC_LOCK]"
            )
        if truthy(dig(sc, "privileged")):
            report_violation(
                f"{_label(path, c)} requests {', '.join(wanted)} and runs privileged; IPC_LOCK is all RDMA needs: "
                "drop privileged"
            )


rdma_pods = resource_policy("k8s-rdma-pod-ipc-lock", MANDATORY, check_rdma_pods, RDMA_SCHEMA, types=_is_workload)


# ---------------------------------------------------------------- GPU limits

GPU_SCHEMA = PolicyConfigSchema(properties={
    "gpuResource": {
        "type": "string", "minLength": 1, "default": GPU_RESOURCE,
        "description": "the extended resource name of a GPU",
    },
})


def check_gpu_limits(args, report_violation) -> None:
    """A container that requests nvidia.com/gpu also sets it, equal, in its limits. NVIDIA RDG for vSphere
    PVRDMA and DeepOps size their GPU jobs with nvidia.com/gpu limits;
    Kubernetes rejects extended resources given only as requests."""
    if not _is_workload(args.resource_type):
        return
    gpu = settings(args, GPU_SCHEMA)["gpuResource"]
    for path, c in containers(props_of(args)):
        res = reveal(c.get("resources"))
        if res is UNKNOWN:
            continue
        requests, limits = reveal(dig(res, "requests")), reveal(dig(res, "limits"))
        if requests is UNKNOWN or limits is UNKNOWN or not isinstance(requests, dict) or gpu not in requests:
            continue
        want = reveal(requests[gpu])
        have = reveal(limits.get(gpu)) if isinstance(limits, dict) else None
        if not known(want) or have is UNKNOWN:
            continue
        if have is None:
            report_violation(
                f"{_label(path, c)} requests {number_text(want)} {gpu} without a limit; GPUs are set in "
                f"resources.limits (add limits: {{{gpu}: {number_text(want)}}})"
            )
        elif not same_quantity(have, want):
            report_violation(
                f"{_label(path, c)} requests {number_text(want)} {gpu} but limits it to {number_text(have)}; "
                "they must be equal"
            )


gpu_limits = resource_policy("k8s-gpu-limits", MANDATORY, check_gpu_limits, GPU_SCHEMA, types=_is_workload)


POLICIES = [rdma_pods, gpu_limits]
