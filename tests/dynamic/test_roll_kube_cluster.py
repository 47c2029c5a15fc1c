"""The node roll against a cluster that acts (tests/kube_cluster.py): a real kube-apiserver, scheduler and
controller manager, kwok nodes whose Ready condition and boot id follow lab-vcsim's VM power, and `oc` as
kubectl. The drain is the real one (the eviction API, PodDisruptionBudgets), the Ready wait reads what the
cluster reports after lab-vcsim powers the VM on, and a rejected kubeconfig is a real 401.

The cases of the fault matrix (tests/dynamic/test_node_roll.py) that depend on the cluster's own answers:
the whole roll, a rejected token, a PodDisruptionBudget that blocks the drain, a run killed after the
power-off, a control-plane node whose etcd operator is Progressing; and a node's removal
(components/openshift/scripts/remove-node.sh) with a rejected token, a blocking budget, and for real.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pulumi
import pytest
from kube_cluster import KubeNode, node_name, running_kube_cluster, wait_for
from lab_vcsim import configured_with, provider_config, running_lab_vcsim, vm_named
from test_node_roll import KILLABLE

from components.dynamic import hostops
from components.dynamic import roll as r
from components.openshift.files.common import render_script

WORKERS = ["DC0_C0_RP0_VM0", "DC0_C0_RP0_VM1", "DC0_H0_VM0"]  # lab-vcsim has four VMs
CONTROL_PLANE = "DC0_H0_VM1"
NEW = {"cpus": 2, "memoryMb": 64}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory):
    with running_lab_vcsim(tmp_path_factory, "vcsim-kube", "-method-delay",
                           "PowerOnVM_Task:150,PowerOffVM_Task:150,ReconfigVM_Task:100") as vcsim:
        yield vcsim


@pytest.fixture(scope="module")
def vms(sim):
    """The VMs by node name, in a session of their own (the power watch reads them from another thread)."""
    with hostops.session(sim.server, sim.user, sim.password, port=sim.port, insecure=True) as si:
        yield {node_name(name): vm_named(si, name) for name in (*WORKERS, CONTROL_PLANE)}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, sim, vms):
    nodes = [KubeNode(node_name(n), gpu=True) for n in WORKERS] + [KubeNode(node_name(CONTROL_PLANE),
                                                                           control_plane=True)]
    with running_kube_cluster(tmp_path_factory, nodes=nodes) as kube:
        with hostops.session(sim.server, sim.user, sim.password, port=sim.port, insecure=True) as watcher:
            watched = {name: vm_named(watcher, vm.name) for name, vm in vms.items()}
            with kube.watch_power(lambda node: hostops.is_powered_on(watched[node]), interval_s=0.2):
                yield kube


@pytest.fixture
def lab(cluster, vms, monkeypatch):
    """Every VM on, with day 1's settings; every node Ready, schedulable and unmarked; the roll's waits short."""
    for vm in vms.values():
        if hostops.is_powered_on(vm):
            hostops.power_off(vm)
        hostops.reconfigure_for_roll(vm, {"cpus": 1, "memoryMb": 32})
        hostops.power_on(vm)
    for node in vms:
        cluster.wait_node_ready(node, "True")
        cluster.must("uncordon", node)
        cluster.must("annotate", f"node/{node}", f"{r.ROLL_MARK}-", f"{r.ROLL_PHASE}-")
    cluster.kubectl("delete", "namespace", "ml", "--wait=true", timeout=120)
    for operator in ("etcd", "kube-apiserver"):
        cluster.set_cluster_operator(operator)
    monkeypatch.setattr(r, "_POLL_S", 0.2)
    monkeypatch.setattr(r, "HEALTH_DWELL_S", 1.0)
    monkeypatch.setattr(r, "_FAILED_IN_THIS_RUN", [])
    monkeypatch.setattr(pulumi.log, "info", lambda *a, **k: None)
    monkeypatch.setattr(pulumi.log, "warn", lambda *a, **k: None)
    return cluster


def props(vm, *, role="worker", **settings) -> dict:
    """A NodeRoll's inputs: the connection, the kubeconfig and oc are its provider's (`roll_provider`)."""
    return {"kind": r.KIND, "vmId": vm._moId, "vmName": vm.name, "nodeName": node_name(vm.name), "role": role,
            "cpus": 1, "memoryMb": 32, "memoryReservationMb": None, "hardwareVersion": None, "vgpuProfile": "",
            "poweredOn": True, "drainTimeoutS": 60, **settings}


def cluster_config(sim, cluster, kubeconfig: str | None = None) -> dict:
    """The rolls' provider's configuration: lab-vcsim, and the cluster's kubeconfig (or ``kubeconfig``) and oc."""
    return provider_config(sim.connection(), kubeconfig=kubeconfig if kubeconfig is not None else cluster.kubeconfig,
                           oc=str(cluster.oc_path))


def roll_provider(sim, cluster, kubeconfig: str | None = None) -> r.NodeRollProvider:
    """The rolls' provider as the engine's provider process has it: configured with vCenter and the cluster."""
    return configured_with(r.NodeRollProvider(), cluster_config(sim, cluster, kubeconfig))


def workload(cluster, replicas: int, *, min_available: int | None = None, max_unavailable: int | None = None):
    """A Deployment spread over the workers and its PodDisruptionBudget, Ready."""
    budget = {"minAvailable": min_available} if min_available is not None else {"maxUnavailable": max_unavailable}
    cluster.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "train", "namespace": "ml"},
         "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "train"}},
                  "template": {"metadata": {"labels": {"app": "train"}}, "spec": {
                      "nodeSelector": {"nvidia.com/gpu.present": "true"},
                      "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
                      "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                                     "whenUnsatisfiable": "ScheduleAnyway",
                                                     "labelSelector": {"matchLabels": {"app": "train"}}}],
                      "containers": [{"name": "train", "image": "registry.invalid/train:1"}]}}}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "train", "namespace": "ml"},
         "spec": {**budget, "selector": {"matchLabels": {"app": "train"}}}},
    )
    wait_for(lambda: cluster.get("deployment", "-n", "ml", "train").get("status", {}).get("readyReplicas") == replicas,
             90, "the workload Ready")
    wait_for(lambda: cluster.get("pdb", "-n", "ml", "train").get("status", {}).get("observedGeneration") == 1, 60,
             "the PodDisruptionBudget observed")


def schedulable(cluster, node: str) -> bool:
    return not cluster.get("node", node).get("spec", {}).get("unschedulable", False)


def mark(cluster, node: str) -> str | None:
    return cluster.get("node", node)["metadata"].get("annotations", {}).get(r.ROLL_MARK)


class NotReadyWatch:
    """Samples the workers' Ready conditions while the roll runs: the most that were not Ready at once."""

    def __init__(self, cluster, nodes):
        self.cluster, self.nodes, self.most, self.stop = cluster, nodes, 0, threading.Event()

    def __enter__(self):
        def sample():
            while not self.stop.is_set():
                items = self.cluster.get("nodes").get("items", [])
                down = [i for i in items if i["metadata"]["name"] in self.nodes and next(
                    (c["status"] for c in i["status"].get("conditions", []) if c["type"] == "Ready"), "") != "True"]
                self.most = max(self.most, len(down))
                self.stop.wait(0.1)
        self.thread = threading.Thread(target=sample, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)


def roll(sim, vms, cluster, nodes, **changes) -> None:
    provider = roll_provider(sim, cluster)
    r._FAILED_IN_THIS_RUN.clear()
    for node in nodes:
        vm = vms[node]
        provider.update("id", props(vm), props(vm, **changes))


WORKER_NODES = [node_name(n) for n in WORKERS]


def test_three_workers_roll_through_the_real_drain_one_at_a_time(sim, vms, lab):
    workload(lab, 3, max_unavailable=1)
    with NotReadyWatch(lab, WORKER_NODES) as watch:
        roll(sim, vms, lab, WORKER_NODES, **NEW)
    assert watch.most == 1  # each went down once, never two at once
    for node in WORKER_NODES:
        settings = hostops.get_roll_settings(vms[node])
        assert (settings["cpus"], settings["memoryMb"]) == (2, 64)
        assert schedulable(lab, node) and mark(lab, node) is None and lab.node_ready(node) == "True"
    wait_for(lambda: lab.get("deployment", "-n", "ml", "train").get("status", {}).get("readyReplicas") == 3, 60,
             "the workload back")


def test_a_rejected_token_stops_the_roll_before_any_power_off(sim, vms, lab):
    token = lab.kubeconfig.split("token: ", 1)[1].split()[0]
    rejected = lab.kubeconfig.replace(token, "not-the-token")
    node = WORKER_NODES[0]
    boot = lab.boot_id(node)
    provider = roll_provider(sim, lab, kubeconfig=rejected)
    with pytest.raises(r.RollStepError) as failed:
        provider.update("id", props(vms[node]), props(vms[node], **NEW))
    assert failed.value.step == "ask the cluster" and "Unauthorized" in failed.value.reason
    assert hostops.get_roll_settings(vms[node])["cpus"] == 1 and hostops.is_powered_on(vms[node])
    assert lab.boot_id(node) == boot and schedulable(lab, node)


def test_a_pdb_that_blocks_the_drain_stops_with_the_node_uncordoned(sim, vms, lab):
    workload(lab, 2, min_available=2)
    node = next(n for n in WORKER_NODES if lab.get("pods", "-n", "ml", "--field-selector", f"spec.nodeName={n}")
                .get("items"))
    with pytest.raises(r.RollStepError) as failed:
        roll(sim, vms, lab, [node], drainTimeoutS=10, **NEW)
    assert failed.value.step == "drain" and "disruption budget" in failed.value.reason
    assert schedulable(lab, node) and mark(lab, node) is None
    assert hostops.get_roll_settings(vms[node])["cpus"] == 1 and hostops.is_powered_on(vms[node])


def test_a_run_killed_after_the_power_off_is_finished_by_the_next_up(sim, vms, lab, tmp_path):
    workload(lab, 3, max_unavailable=1)
    node = WORKER_NODES[1]
    vm = vms[node]
    log = tmp_path / "run.log"
    log.touch()
    env = {**os.environ, "FAKE_OC_LOG": str(log), "PAUSE_AFTER": "power-off"}
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE, json.dumps(props(vm)), json.dumps(props(vm, **NEW)),
                             json.dumps(cluster_config(sim, lab))], env=env, cwd=ROOT)
    try:
        wait_for(lambda: "paused" in log.read_text().splitlines(), 120, "the run paused after the power-off")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert not hostops.is_powered_on(vm) and not schedulable(lab, node) and mark(lab, node)
    lab.wait_node_ready(node, "Unknown")
    # another node cannot go down while this one is out
    with pytest.raises(r.RollStepError, match=f"another node is out of service: {node}"):
        roll(sim, vms, lab, [WORKER_NODES[0]], **NEW)
    roll(sim, vms, lab, [node], **NEW)  # the next up: this node first
    assert hostops.get_roll_settings(vm)["cpus"] == 2 and hostops.is_powered_on(vm)
    assert lab.node_ready(node) == "True" and schedulable(lab, node) and mark(lab, node) is None


def test_a_control_plane_node_waits_for_the_etcd_operator(sim, vms, lab):
    node = node_name(CONTROL_PLANE)
    vm = vms[node]
    lab.set_cluster_operator("etcd", progressing=True, message="NodeInstallerProgressing: 1 node is at revision 7")
    provider = roll_provider(sim, lab)
    r.HEALTH_TIMEOUT_S, timeout = 3, r.HEALTH_TIMEOUT_S
    try:
        with pytest.raises(r.RollStepError, match="ClusterOperator etcd Available=True Progressing=True"):
            provider.update("id", props(vm, role="control-plane"), props(vm, role="control-plane", **NEW))
    finally:
        r.HEALTH_TIMEOUT_S = timeout
    assert hostops.get_roll_settings(vm)["cpus"] == 1 and schedulable(lab, node)
    lab.set_cluster_operator("etcd")
    r._FAILED_IN_THIS_RUN.clear()
    provider.update("id", props(vm, role="control-plane"), props(vm, role="control-plane", **NEW))
    assert hostops.get_roll_settings(vm)["cpus"] == 2
    assert schedulable(lab, node) and mark(lab, node) is None
    etcd = lab.get("pod", "-n", "openshift-etcd", f"etcd-{node}")
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in etcd["status"]["conditions"])


# ---------------------------------------------------------------- a node that leaves


def remove_node(cluster, node: str, kubeconfig: str | None = None, **env: str) -> subprocess.CompletedProcess:
    """components/openshift/scripts/remove-node.sh as the node's Command deletes it: the kubeconfig on stdin."""
    script = render_script("remove-node.sh", {"OC": str(cluster.oc_path), "NODE_NAMES": node, "DRAIN_TIMEOUT_S": 10})
    return subprocess.run(["sh", "-c", script], input=kubeconfig or cluster.kubeconfig, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **env})


def test_a_leaving_node_is_not_let_go_by_a_cluster_that_rejects_the_kubeconfig(lab):
    token = lab.kubeconfig.split("token: ", 1)[1].split()[0]
    node = WORKER_NODES[2]
    stopped = remove_node(lab, node, lab.kubeconfig.replace(token, "not-the-token"))
    assert stopped.returncode == 1 and "does not answer" in stopped.stderr and "Unauthorized" in stopped.stderr
    assert node in lab.nodes and schedulable(lab, node)


def test_a_leaving_node_whose_drain_a_pdb_blocks_stays_in_the_cluster(lab):
    workload(lab, 2, min_available=2)
    node = next(n for n in WORKER_NODES if lab.get("pods", "-n", "ml", "--field-selector", f"spec.nodeName={n}")
                .get("items"))
    stopped = remove_node(lab, node)
    assert stopped.returncode == 1 and "could not be drained" in stopped.stderr
    assert lab.get("node", node)["metadata"]["name"] == node  # still in the cluster, cordoned


def test_a_leaving_node_is_drained_and_deleted_through_the_real_eviction(lab):
    workload(lab, 3, max_unavailable=1)
    node = WORKER_NODES[2]
    done = remove_node(lab, node)
    assert done.returncode == 0, done.stderr
    assert f"node {node} drained and deleted" in done.stdout
    assert lab.kubectl("get", "node", node).returncode != 0
    wait_for(lambda: lab.get("deployment", "-n", "ml", "train").get("status", {}).get("readyReplicas") == 3, 60,
             "the workload rescheduled on the other nodes")
    again = remove_node(lab, node)  # an answering cluster that no longer lists it: nothing to take out
    assert again.returncode == 0 and "nothing to drain" in again.stderr
    lab.add_nodes(KubeNode(node, gpu=True))  # for the tests after this one
