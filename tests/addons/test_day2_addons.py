"""docs/day2.md, the add-on rows: what a change does to a running lab (tools.diff, as the OpenShift rows)."""

from __future__ import annotations

import builders
import pulumi
import pulumi_kubernetes as k8s
import pytest

from components.addons import mpi
from tools.diff import changes
from tools.mockrun import run_program

CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"


@pytest.fixture(scope="module")
def lab():
    config = builders.lab_stack()
    return config, run_program(config)


def test_switching_the_mpi_operator_off_deletes_it_and_keeps_its_crds(lab):
    config, base = lab
    off = builders.with_value(config, "gpu-lab:addons.mpiOperator.enabled", False)
    off = builders.with_value(off, "gpu-lab:addons.jobs.ncclRdma", False)
    off = builders.with_value(off, "gpu-lab:addons.jobs.ncclTcp", False)
    off = builders.with_value(off, "gpu-lab:addons.jobs.horovodRdma", False)
    off = builders.with_value(off, "gpu-lab:addons.jobs.horovodTcp", False)
    found = {c["name"]: c["op"] for c in changes(base, run_program(off))}
    assert found.pop("addons-mpi-operator") == "delete"
    assert {name for name, op in found.items() if op == "delete"} == {
        f"addons-mpijob-{job}" for job in ("horovod-resnet50-rdma", "horovod-resnet50-tcp", "nccl-allreduce-rdma",
                                           "nccl-allreduce-tcp")}
    # The operator's objects are the provider's children of the ConfigFile (invisible under mocks):
    # the transform it is registered with keeps each CRD, and so every user's MPIJob, on delete.
    crd = mpi.retain_crds(pulumi.ResourceTransformArgs(True, CRD, "mpijobs", {}, pulumi.ResourceOptions()))
    assert crd is not None and crd.opts.retain_on_delete is True
    assert mpi.retain_crds(pulumi.ResourceTransformArgs(
        True, "kubernetes:apps/v1:Deployment", "mpi-operator", {}, pulumi.ResourceOptions())) is None


def test_the_operator_is_registered_with_the_transform(monkeypatch):
    registered = {}

    class Recording(k8s.yaml.v2.ConfigFile):
        def __init__(self, name, file, opts):
            registered[name] = opts

    monkeypatch.setattr(k8s.yaml.v2, "ConfigFile", Recording)

    class Kube:
        mirror = None

        def child(self, role):
            return f"addons-{role}"

        def opts(self, **kwargs):
            return pulumi.ResourceOptions(**kwargs)

    mpi.deploy_mpi_operator(Kube())  # type: ignore[arg-type]
    assert registered["addons-mpi-operator"].transforms == [mpi.retain_crds]


def test_an_add_on_change_after_the_install_keeps_the_provider(lab):
    config, base = lab
    edited = builders.with_value(config, "gpu-lab:addons.network.podPool", "192.168.0.192/26")
    found = {c["name"]: c["op"] for c in changes(base, run_program(edited))}
    # the install never runs again, so the kubeconfig is the same: no provider replacement and no
    # replacement of every object; only what reads the pool changes
    assert "addons-k8s" not in found
    assert found == {"addons-ippool-rdma-pool": "update"}


# ---------------------------------------------------------------- restarts on the GPU nodes


def _effects(base, new) -> dict[str, tuple[str, list[str]]]:
    return {c["name"]: (c["op"], c["effects"]) for c in changes(base, new)}


def test_a_gpu_operator_chart_bump_restarts_its_pods_and_stops_the_gate(lab, monkeypatch, tmp_path):
    import dataclasses
    import json

    from components.addons import versions
    from tools import up_gate
    from tools.diff import Engine, snapshot

    config, base = lab
    monkeypatch.setattr(versions, "GPU_OPERATOR", dataclasses.replace(versions.GPU_OPERATOR, version="v26.8.0"))
    new = run_program(config, deployed=base)
    found = _effects(base, new)
    assert found["addons-gpu-operator"] == ("update", ["restart"])
    step = next(s for s in Engine(snapshot(base), snapshot(new)).run() if s.name == "addons-gpu-operator")
    assert step.notes == ["restarts its pods on GPU nodes: w01, w02, w03, w04"]
    path = tmp_path / "diff.json"
    path.write_text(json.dumps({"changes": changes(base, new)}))
    assert up_gate.main(["diff", str(path)]) == 1
    assert up_gate.main(["diff", str(path), "--allow", "restart:addons-gpu-operator"]) == 0


def test_a_gpu_operator_values_change_is_a_restart(lab):
    config, base = lab
    edited = builders.with_value(config, "gpu-lab:addons.gpuOperator.vgpu.version", "550.90.07")
    found = _effects(base, run_program(edited, deployed=base))
    assert found["addons-gpu-operator"] == ("update", ["restart"])


def test_a_new_pod_pool_restarts_nothing_and_moves_the_rdma_pods_addresses(lab):
    # nv-ipam hands every node a range of the new subnet while running pods keep theirs: `network`, gated
    config, base = lab
    edited = builders.with_value(config, "gpu-lab:addons.network.podPool", "192.168.0.192/26")
    found = _effects(base, run_program(edited, deployed=base))
    assert found == {"addons-ippool-rdma-pool": ("update", ["network"])}
    resized = builders.with_value(config, "gpu-lab:addons.network.podAddressesPerNode", 4)
    assert _effects(base, run_program(resized, deployed=base)) == {"addons-ippool-rdma-pool": ("update", ["network"])}
