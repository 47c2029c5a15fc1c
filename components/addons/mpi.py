"""The Kubeflow MPI operator (MPIJob kubeflow.org/v2beta1) and the MPIJob shape the jobs share.

The guides used v1alpha2 and a Mellanox fork; v2beta1 is what the operator
serves today. It ships as one manifest per release, applied server-side by the provider (the CRD
is too large for client-side apply) from the copy this program ships (components/addons/shipped.py):
nothing is fetched at preview or up.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.addons import shipped, versions
from components.addons.images import mirror_images
from components.addons.kube import Kube, metadata

API_VERSION = "kubeflow.org/v2beta1"


CRD_TYPE = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"


def retain_crds(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """Keep the operator's CRDs when it is switched off or the stack is destroyed: deleting a CRD
    deletes every object of its kind, the users' MPIJobs among them."""
    if args.type_ != CRD_TYPE:
        return None
    return pulumi.ResourceTransformResult(
        props=args.props, opts=pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(retain_on_delete=True)))


def operator_manifest() -> str:
    """The shipped manifest's path, once its sha256 is the recorded one (else ManifestError)."""
    return shipped.verified(shipped.find(*versions.MPI_OPERATOR_SOURCE))


def deploy_mpi_operator(kube: Kube) -> pulumi.Resource:
    # The manifest's objects are the provider's children of this component: a transform reaches them.
    # Their names are the component's name and each object's namespace/name, not the file's
    # (pulumi-kubernetes, provider/pkg/provider/yaml/v2/configfile.go and yaml.go, `register`).
    # With a mirror, a second transform moves the operator's image there; the objects keep their names.
    transforms = [retain_crds] if kube.mirror is None else [retain_crds, mirror_images(kube.mirror)]
    return k8s.yaml.v2.ConfigFile(kube.child("mpi-operator"), file=operator_manifest(),
                                  opts=kube.opts(transforms=transforms))


def mpijob(name: str, namespace: str, *, workers: int, slots_per_worker: int, launcher: dict[str, Any],
           worker: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """An OpenMPI MPIJob: one launcher running mpirun, `workers` worker pods running sshd."""
    return {
        "apiVersion": API_VERSION,
        "kind": "MPIJob",
        "metadata": metadata(name, namespace, labels=labels),
        "spec": {
            "slotsPerWorker": slots_per_worker,
            "mpiImplementation": "OpenMPI",
            # mpirun fails fast if a worker's sshd is not up yet.
            "launcherCreationPolicy": "WaitForWorkersReady",
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 3},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": launcher},
                "Worker": {"replicas": workers, "template": worker},
            },
        },
    }


def mpirun(processes: int, exported: list[str], program: list[str]) -> list[str]:
    """The guides' mpirun line: no binding, ranks by slot, TCP for MPI's own traffic."""
    cmd = ["mpirun", "--allow-run-as-root", "-np", str(processes), "-bind-to", "none", "-map-by", "slot"]
    for variable in exported:
        cmd += ["-x", variable]
    cmd += ["-mca", "pml", "ob1", "-mca", "btl", "^openib"]
    return cmd + program
