"""The whole program on the test lab (tests/builders.py): its add-ons block, wired by __main__.py."""

from __future__ import annotations

import json

import builders
import pytest
from addons_harness import by_name, kube_objects, manifest

import tools.mockrun as mockrun
from tools.mockrun import placeholder_secrets, run_program

WORKERS = builders.WORKERS


def test_the_lab_installs_its_addons_once(stack_run):
    (comp,) = stack_run.of_type("gpu-lab:addons:ClusterAddons")
    enabled = comp.plain()["enabled"]
    assert enabled.pop("bitfusion") is False and all(enabled.values())
    assert not [r for r in kube_objects(stack_run) if "bitfusion" in json.dumps(manifest(r))]


def test_the_lab_jobs_use_its_workers_and_addresses(stack_run):
    for w in WORKERS:
        by_name(stack_run, "Job", f"nvidia-smi-{w}")
    server = by_name(stack_run, "Job", "ib-write-bw-server")["spec"]["template"]
    assert json.loads(server["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]) == [
        {"name": "rdma-static", "ips": ["192.168.0.201/24"]}]
    pool = by_name(stack_run, "IPPool", "rdma-pool")["spec"]
    assert pool["subnet"] == "192.168.0.128/26" and "exclusions" not in pool
    nccl = by_name(stack_run, "MPIJob", "nccl-allreduce-rdma")["spec"]["mpiReplicaSpecs"]["Worker"]
    assert nccl["replicas"] == 4


def test_the_lab_is_openshift(stack_run):
    assert "secondaryNetwork" not in by_name(stack_run, "NicClusterPolicy", "nic-cluster-policy")["spec"]
    by_name(stack_run, "SecurityContextConstraints", "gpu-lab-rdma")
    by_name(stack_run, "RoleBinding", "rdma-shared-dp-privileged")


def test_addons_wait_for_the_vms_through_their_provider_and_their_node(monkeypatch):
    # The SDK sends depends_on on a component as the URNs of that component's resources. The add-ons'
    # Kubernetes provider carries them; the engine orders a resource after its provider and,
    # on delete, treats the provider reference as a dependency (pulumi/pulumi
    # pkg/resource/graph/dependency_graph.go, DependingOn: a candidate whose Provider is in the set
    # depends on it), so every add-on is created after every VM and node and deleted before them.
    dependencies: dict[str, list[str]] = {}
    providers: dict[str, str] = {}

    class KeepingDependencies(mockrun.RecordingMonitor):
        def RegisterResource(self, request):
            dependencies[f"{request.type}::{request.name}"] = list(request.dependencies)
            providers[f"{request.type}::{request.name}"] = request.provider
            return super().RegisterResource(request)

    monkeypatch.setattr(mockrun, "RecordingMonitor", KeepingDependencies)
    run = run_program(builders.lab_stack())
    (addons,) = run.of_type("gpu-lab:addons:ClusterAddons")
    vms = run.of_type("vsphere:index/virtualMachine:VirtualMachine")
    nodes = run.children_of("openshift-nodes")
    assert sorted(vm.name for vm in vms) == sorted(f"vms-{n}" for n in
                                                   [*builders.CONTROL_PLANE, *builders.WORKERS, builders.BOOTSTRAP])
    assert nodes, "the cluster's nodes are resources the add-ons wait for"
    (provider,) = [r for r in run.of_type("pulumi:providers:kubernetes") if r.name == "addons-k8s"]
    assert {r.urn for r in [*vms, *nodes]} <= set(dependencies[f"{provider.type}::{provider.name}"])
    node_and_vm_urns = {r.urn for r in run.resources if r.urn.split("::")[-1].startswith(("vms-", "openshift-nodes-"))}
    children = [c for c in run.children_of(addons.name) if c.urn != provider.urn]
    assert children, "the add-ons' resources are the component's children"
    node_urns = {n.name.removeprefix("openshift-nodes-"): n.urn for n in nodes}
    pinned = 0
    for child in children:
        key = f"{child.type}::{child.name}"
        assert providers[key].startswith(provider.urn + "::"), child.name
        # Only an object pinned to one node lists that node (it must go before the node when the node
        # is removed, tests/engine/test_provider_orders_deletes.py); none lists every node and VM,
        # which made the edges grow with the square.
        node = (child.inputs.get("spec", {}).get("template", {}).get("spec", {}).get("nodeSelector") or {}).get(
            "kubernetes.io/hostname")
        assert node_and_vm_urns & set(dependencies[key]) == ({node_urns[node]} if node else set()), child.name
        pinned += bool(node)
    assert pinned >= len(builders.WORKERS)  # one nvidia-smi Job per worker, at least
    # the kubeconfig comes from the OpenShift install, as a secret
    assert provider.secret_paths() == ["kubeconfig"]


def test_without_openshift_the_kubeconfig_secret_is_required():
    config = builders.lab_stack()
    del config["gpu-lab:openshift"]
    secrets = placeholder_secrets(config)
    secrets["gpu-lab:kubeconfig"] = None
    with pytest.raises(Exception, match="gpu-lab:kubeconfig"):
        run_program(config, secrets=secrets)
