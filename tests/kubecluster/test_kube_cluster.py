"""The test cluster (tests/kube_cluster.py) acts: controllers, scheduler, kwok's nodes, eviction, power.

One cluster for the module (about 20-40 s to start); each test uses its own namespace and nodes.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from kube_cluster import KubeCluster, KubeNode, _node_object, node_name, running_kube_cluster, wait_for

NODES = [
    KubeNode("ctl-0", control_plane=True),
    KubeNode("gpu-0", gpu=True),
    KubeNode("gpu-1", gpu=True),
    KubeNode("drain-a", labels={"pool": "drain"}),
    KubeNode("drain-b", labels={"pool": "drain"}),
    KubeNode("power-0", gpu=True),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_kube_cluster(tmp_path_factory, nodes=NODES) as running:
        yield running


def namespace(cluster: KubeCluster, name: str) -> str:
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    # pods need the namespace's default service account, which the controller manager makes
    wait_for(lambda: cluster.kubectl("get", "serviceaccount", "default", "-n", name).returncode == 0, 30,
             f"serviceaccount {name}/default")
    return name


def deployment(name: str, ns: str, replicas: int, node_selector: dict[str, str]) -> dict:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"nodeSelector": node_selector,
                                       "containers": [{"name": "main", "image": "registry.invalid/app:1"}]}}},
    }


def pods(cluster: KubeCluster, ns: str, selector: str) -> list[dict]:
    return cluster.get("pods", "-n", ns, "-l", selector)["items"]


def ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", []))


def test_the_server_reports_the_stamped_version(cluster):
    assert json.loads(cluster.request("/version"))["gitVersion"] == "v1.35.4"
    assert cluster.request("/readyz") == "ok"


def test_nodes_are_ready_and_labelled_as_gpu_workers(cluster):
    node = cluster.get("node", "gpu-0")
    assert node["metadata"]["labels"]["nvidia.com/gpu.present"] == "true"
    assert node["metadata"]["labels"]["feature.node.kubernetes.io/pci-15b3.present"] == "true"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "1"
    assert {n: cluster.node_ready(n) for n in cluster.nodes} == {n.name: "True" for n in NODES}
    assert cluster.boot_id("gpu-0") and cluster.boot_id("gpu-0") != cluster.boot_id("gpu-1")


def test_a_deployment_runs_ready_pods_on_the_gpu_nodes(cluster):
    ns = namespace(cluster, "deploy")
    cluster.apply(deployment("cuda", ns, 4, {"nvidia.com/gpu.present": "true"}))
    cluster.must("rollout", "status", "-n", ns, "deployment/cuda", "--timeout=60s", timeout=90)
    running = pods(cluster, ns, "app=cuda")
    assert len(running) == 4 and all(ready(p) and p["status"]["phase"] == "Running" for p in running)
    assert {p["spec"]["nodeName"] for p in running} <= {"gpu-0", "gpu-1", "power-0"}


def test_a_job_completes(cluster):
    ns = namespace(cluster, "jobs")
    cluster.apply({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "smi", "namespace": ns},
        "spec": {"completions": 2, "parallelism": 2, "backoffLimit": 0,
                 "template": {"spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "smi", "image": "registry.invalid/smi:1"}]}}},
    })
    cluster.must("wait", "-n", ns, "--for=condition=Complete", "job/smi", "--timeout=60s", timeout=90)
    assert cluster.get("job", "-n", ns, "smi")["status"]["succeeded"] == 2


def test_drain_evicts_and_a_disruption_budget_blocks_it(cluster):
    ns = namespace(cluster, "drain")
    cluster.apply(deployment("web", ns, 2, {"kubernetes.io/hostname": "drain-a"}))
    cluster.must("rollout", "status", "-n", ns, "deployment/web", "--timeout=60s", timeout=90)

    # evicted; the ReplicaSet recreates the pods, which wait (Pending) for their cordoned node
    drained = cluster.kubectl("drain", "drain-a", "--ignore-daemonsets", "--delete-emptydir-data",
                              "--timeout=60s", timeout=90)
    assert drained.returncode == 0, drained.stderr
    assert "evicting pod drain/web-" in drained.stdout + drained.stderr
    wait_for(lambda: [(p["spec"].get("nodeName"), p["status"]["phase"]) for p in pods(cluster, ns, "app=web")]
             == [(None, "Pending")] * 2, 30, "the replacements Pending")
    cluster.must("uncordon", "drain-a")
    cluster.must("rollout", "status", "-n", ns, "deployment/web", "--timeout=60s", timeout=90)

    cluster.apply(deployment("db", ns, 2, {"kubernetes.io/hostname": "drain-b"}), {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db", "namespace": ns},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}},
    })
    cluster.must("rollout", "status", "-n", ns, "deployment/db", "--timeout=60s", timeout=90)

    def budget_counted() -> bool:
        status = cluster.get("pdb", "-n", ns, "db").get("status", {})
        return status.get("observedGeneration") == 1 and status.get("currentHealthy") == 2
    wait_for(budget_counted, 30, "the disruption controller counting the budget")
    blocked = cluster.kubectl("drain", "drain-b", "--ignore-daemonsets", "--timeout=5s", timeout=60)
    said = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget" in said
    assert len([p for p in pods(cluster, ns, "app=db") if ready(p)]) == 2
    cluster.must("uncordon", "drain-b")


def test_power_off_makes_the_node_unknown_and_power_on_boots_it_anew(cluster):
    powered = {"power-0": True}
    before = cluster.boot_id("power-0")
    with cluster.watch_power(lambda name: powered[name], nodes=["power-0"]):
        powered["power-0"] = False
        wait_for(lambda: cluster.node_ready("power-0") == "Unknown", 30, "power-0 Unknown")
        assert cluster.boot_id("power-0") == before
        # the node lifecycle controller takes it as unreachable, as a node whose kubelet stopped
        wait_for(lambda: any(t["key"] == "node.kubernetes.io/unreachable"
                             for t in cluster.get("node", "power-0")["spec"].get("taints", [])),
                 30, "the unreachable taint on power-0")
        powered["power-0"] = True
        wait_for(lambda: cluster.node_ready("power-0") == "True", 30, "power-0 Ready again")
    after = cluster.boot_id("power-0")
    assert after and after != before
    wait_for(lambda: not any(t["key"].startswith("node.kubernetes.io/")
                             for t in cluster.get("node", "power-0")["spec"].get("taints", [])),
             30, "the lifecycle taints off power-0")


def test_oc_stand_in_and_the_control_plane_health_the_roll_reads(cluster):
    def oc(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["oc", *args], env=cluster.env(), capture_output=True, text=True, timeout=60)

    assert oc("get", "--raw", "/readyz").stdout.strip() == "ok"
    assert oc("adm", "cordon", "gpu-1").returncode == 0
    assert cluster.get("node", "gpu-1")["spec"].get("unschedulable") is True
    assert oc("adm", "uncordon", "gpu-1").returncode == 0
    assert not cluster.get("node", "gpu-1")["spec"].get("unschedulable")
    assert "no kubectl equivalent" in oc("adm", "upgrade").stderr

    operators = json.loads(oc("get", "clusteroperator", "etcd", "kube-apiserver", "-o", "json").stdout)
    assert {o["metadata"]["name"]: {c["type"]: c["status"] for c in o["status"]["conditions"]}
            for o in operators["items"]} == {n: {"Available": "True", "Progressing": "False", "Degraded": "False"}
                                             for n in ("etcd", "kube-apiserver")}
    cluster.set_cluster_operator("etcd", progressing=True)
    etcd = json.loads(oc("get", "clusteroperator", "etcd", "-o", "json").stdout)
    assert {c["type"]: c["status"] for c in etcd["status"]["conditions"]}["Progressing"] == "True"
    cluster.set_cluster_operator("etcd")

    members = json.loads(oc("get", "pods", "-n", "openshift-etcd", "-l", "app=etcd", "-o", "json").stdout)["items"]
    assert [(p["metadata"]["name"], p["spec"]["nodeName"], ready(p)) for p in members] == [
        ("etcd-ctl-0", "ctl-0", True)]


def test_vm_names_become_node_names():
    assert node_name("DC0_C0_RP0_VM0") == "dc0-c0-rp0-vm0"
    with pytest.raises(ValueError, match="node_name\\(\\) gives 'dc0-c0-rp0-vm0'"):
        _node_object(KubeNode("DC0_C0_RP0_VM0"))


def test_an_unbuilt_cluster_says_how_to_build_it(monkeypatch, tmp_path):
    import kube_cluster

    monkeypatch.setattr(kube_cluster, "BIN_DIR", tmp_path)
    monkeypatch.setattr(kube_cluster, "missing", lambda reason: pytest.skip(reason))
    with pytest.raises(pytest.skip.Exception, match="kube-apiserver, .* missing .*: run make kubecluster"):
        with running_kube_cluster(tmp_path):
            pass


def test_the_etcd_member_goes_down_and_up_with_its_control_plane_node(cluster):
    def member_ready() -> bool:
        return ready(cluster.get("pod", "-n", "openshift-etcd", "etcd-ctl-0"))

    cluster.node_power("ctl-0", False)
    assert cluster.node_ready("ctl-0") == "Unknown" and not member_ready()
    cluster.node_power("ctl-0", True)
    assert cluster.node_ready("ctl-0") == "True" and member_ready()
