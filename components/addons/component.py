"""ClusterAddons: everything installed on the cluster once it runs.

Order on the cluster: namespaces and secrets, then NFD, the GPU and network operators (Helm
releases the provider installs), the MPI operator manifest, the RDMA networks, and last the
acceptance jobs, each waiting for what it uses. Every child goes through one Kubernetes
provider built from the kubeconfig (the OpenShift install's, or `gpu-lab:kubeconfig`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.addons import versions
from components.addons.bitfusion import deploy_bitfusion
from components.addons.gpu import deploy_gpu_operator, deploy_nfd
from components.addons.jobs import acceptance_access, deploy_jobs
from components.addons.kube import Kube, role_of
from components.addons.mpi import deploy_mpi_operator
from components.addons.plan import AddonsPlan
from components.addons.rdma import deploy_network
from components.secrets import LabSecrets
from labrules.types import CLUSTER_ADDONS


@dataclass(frozen=True)
class ClusterAddonsArgs:
    addons: AddonsPlan
    """What to install, and the lab facts it reads (worker nodes, RDMA network)."""
    secrets: LabSecrets
    """registry_auth, nvidia_license_token, gridd_conf, bitfusion_client_token as needed."""
    kubeconfig: pulumi.Input[str] | None
    """Secret kubeconfig of the cluster; None is an error naming gpu-lab:kubeconfig."""
    after: Sequence[pulumi.Resource] = ()
    """What the add-ons run on (the nodes, the VMs). Only the add-ons' Kubernetes provider depends on it;
    every child uses that provider, and the engine orders a resource after its provider and deletes it
    before its provider, so the add-ons are created after the nodes and VMs and deleted before them
    through one resource's edges instead of every child's."""
    nodes: Mapping[str, Sequence[pulumi.Resource]] = field(default_factory=dict)
    """Node name -> the resources that stand for it (its cluster membership, else its VM). An add-on
    object bound to one node (a Job pinned by hostname) also depends on these: when that node is
    removed, the engine deletes the object first. The provider cannot order that: it stays, and its
    new dependencies no longer name the removed node."""


class MissingKubeconfigError(pulumi.RunError):
    pass




class ClusterAddons(pulumi.ComponentResource):
    """NFD, GPU operator, RDMA networking, MPI operator, acceptance jobs and Bitfusion."""

    job_names: pulumi.Output[list[str]]
    """Names of the acceptance Jobs and MPIJobs (their logs feed `make report`)."""
    namespace: pulumi.Output[str]
    """Namespace of the acceptance jobs and the RDMA network attachments."""

    def __init__(self, name: str, args: ClusterAddonsArgs, opts: pulumi.ResourceOptions | None = None):
        addons = args.addons
        if args.kubeconfig is None:
            raise MissingKubeconfigError(
                "gpu-lab:kubeconfig is not set but add-ons are enabled and no OpenShift install in this stack "
                "provides a kubeconfig; set it with: "
                "pulumi config set --secret gpu-lab:kubeconfig \"$(cat kubeconfig)\"")
        props: dict[str, object] = {"enabled": addons.enabled, "versions": versions.summary()}
        if addons.mirror is not None:
            # the policy pack holds every add-on to it (policies/rules/mirror.py)
            props["mirror"] = {"registry": addons.mirror.registry, "charts": addons.mirror.charts}
        super().__init__(CLUSTER_ADDONS, name, props, opts)
        mirror = addons.mirror
        if mirror is not None and mirror.ca_bundle is not None and mirror.chart_ca_file is None:
            pulumi.log.warn(f"gpu-lab:mirror.caBundle does not reach Helm for the oci:// charts at {mirror.charts}: "
                            "pulumi-kubernetes' registry client takes no CA, so the machine that runs pulumi "
                            "must trust the mirror's CA (its system trust store)", self)

        # The one edge set to the nodes and VMs (see ClusterAddonsArgs.after): it grows with the lab
        # once, not once per add-on object.
        provider = k8s.Provider(f"{name}-k8s", kubeconfig=pulumi.Output.secret(args.kubeconfig),
                                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)))
        kube = Kube(name, self, provider, openshift=addons.openshift, nodes=args.nodes, mirror=addons.mirror)
        workload_ns = addons.jobs.namespace

        nfd = deploy_nfd(kube) if addons.nfd else None
        gpu = deploy_gpu_operator(kube, addons, args.secrets, [nfd]) if addons.gpu_operator.enabled else None
        mpi = deploy_mpi_operator(kube) if addons.mpi_operator else None

        workloads = None
        if addons.network.enabled or addons.jobs.any_enabled or addons.bitfusion.enabled:
            # IPC_LOCK is outside the "baseline" Pod Security level, so the namespace is privileged;
            # the pods in it are not (see jobs.py).
            workloads = kube.namespace("workload-namespace", workload_ns)
            for m in acceptance_access(workload_ns, kube.openshift):
                kube.register(role_of(m), m, [workloads])

        plan = None
        network: list[pulumi.Resource] = []
        if addons.network.enabled:
            plan = addons.rdma
            # The network operator's NodeFeatureRules need the NFD CRDs of whichever release brings NFD.
            labels = gpu if addons.nfd_source == "gpuOperator" else nfd
            network = deploy_network(kube, addons, workload_ns, [labels, workloads])

        jobs = deploy_jobs(kube, addons, plan, [workloads, gpu, mpi, *network])
        if addons.bitfusion.enabled:
            jobs += deploy_bitfusion(kube, addons.bitfusion, args.secrets, workload_ns, [workloads])

        self.job_names = pulumi.Output.from_input(jobs)
        self.namespace = pulumi.Output.from_input(workload_ns)
        self.register_outputs({"jobNames": self.job_names, "namespace": self.namespace,
                               "rdmaMode": plan.mode if plan else "off"})
