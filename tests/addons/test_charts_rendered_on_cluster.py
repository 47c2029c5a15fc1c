"""The pinned charts (tests/charts/) rendered by Helm's own engine (build/bin/chart-render) with the values the
program gives each release, for the lab stack on plain Kubernetes, applied to a cluster that acts
(tests/kube_cluster.py). Per release, as Helm installs it: the CRDs of the charts' crds/ directories first
(established before anything else), then every other object in the release namespace, server-side.

- Every object, hooks included, passes a server-side dry run (`kubectl apply --server-side
  --dry-run=server`): schema, defaulting and admission of the real kube-apiserver, for the objects the chart
  sends as Helm would send them.
- The non-hook objects are then applied for real, and the scheduler, the controllers and kwok act: each
  DaemonSet of the render has a Running pod on exactly the nodes it selects (nodeSelector, required node
  affinity, tolerations against the nodes' taints) and on no other, and each Deployment's pods run on nodes
  it may use.

What kwok cannot do, and so is not tested here: no container runs (kwok marks pods Running without pulling
an image or starting a process), so the operators never reconcile their custom resources: the ClusterPolicy
the GPU operator chart renders is stored but no operand DaemonSet (driver, toolkit, device plugin, ...) is
ever created, and the network operator deploys nothing. The operands' placement is therefore not checked,
only that the custom resources are accepted by their CRDs. The hooks are only dry-run: Helm runs them in
its own order around the install (pre-install, pre-upgrade, post-delete), which this test does not play.
OpenShift: the stack's own OpenShift render (SecurityContextConstraints, security.openshift.io) needs
OpenShift's API, which this cluster does not serve, so the plain-Kubernetes render of the same lab is applied.
"""

from __future__ import annotations

import json
import re
from typing import Any

import builders
import pytest
from kube_cluster import ROOT, KubeNode, running_kube_cluster, wait_for
from required_tools import require_chart_render

from components.config import gpu_lab_sections
from tools.mirror_list import releases, render, source_plan

PLAIN_WORKER = "infra01"  # a worker with no GPU


def _cluster_kubernetes_version() -> str:
    """The Kubernetes release the test cluster runs (kubecluster/go.mod), given to Helm as .Capabilities."""
    return re.search(r"k8s\.io/kubernetes (v\S+)", (ROOT / "kubecluster" / "go.mod").read_text())[1]


@pytest.fixture(scope="module")
def rendered() -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """Release name -> (namespace, rendered objects) for the lab stack on plain Kubernetes."""
    binary = require_chart_render()
    config = {k: v for k, v in builders.lab_stack().items() if k != "gpu-lab:openshift"}
    plan = source_plan(gpu_lab_sections(config))
    assert not plan.openshift
    kube = _cluster_kubernetes_version()
    out = {r.name: (r.namespace, render(r, plan.openshift, kube_version=kube, binary=binary)) for r in releases(plan)}
    assert set(out) == {"nfd", "gpu-operator", "network-operator"}
    return out


def _is_crd(item: dict[str, Any]) -> bool:
    return item["object"]["kind"] == "CustomResourceDefinition"


def _list(objects: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})


@pytest.fixture(scope="module")
def nodes() -> list[KubeNode]:
    return [KubeNode(m, control_plane=True) for m in builders.CONTROL_PLANE] + [
        KubeNode(w, gpu=True) for w in builders.WORKERS] + [KubeNode(PLAIN_WORKER)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, rendered, nodes):
    with running_kube_cluster(tmp_path_factory, nodes=nodes, cluster_operators=False) as kube:
        crds = {r["object"]["metadata"]["name"]: r["object"] for _, objs in rendered.values() for r in objs
                if _is_crd(r)}
        # the GPU operator chart carries NFD's CRDs in its NFD subchart too: the same names, applied once
        kube.must("apply", "--server-side", "--field-manager=helm", "-f", "-", input=_list(list(crds.values())),
                  timeout=120)
        for name in crds:
            kube.must("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
        for namespace, _ in rendered.values():
            kube.must("create", "namespace", namespace)
        yield kube


def test_every_rendered_object_hooks_included_passes_a_server_side_dry_run(cluster, rendered):
    for release, (namespace, objs) in rendered.items():
        items = [r["object"] for r in objs if not _is_crd(r)]
        done = cluster.kubectl("apply", "--server-side", "--dry-run=server", "--field-manager=helm", "-n", namespace,
                               "-f", "-", input=_list(items), timeout=120)
        assert done.returncode == 0, f"{release}: {done.stderr}"
        assert done.stdout.count("serverside-applied (server dry run)") == len(items), (release, done.stdout)
    hooks = {r["object"]["metadata"]["name"] for _, objs in rendered.values() for r in objs
             if r["hook"] and r["object"]["kind"] == "Job"}
    assert {"network-operator-keep-ncp", "network-operator-upgrade-crd", "gpu-operator-upgrade-crd"} <= hooks


def _matches(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    return {"In": lambda: labels.get(key) in values, "NotIn": lambda: labels.get(key) not in values,
            "Exists": lambda: key in labels, "DoesNotExist": lambda: key not in labels}[op]()


def _tolerated(taint: dict[str, Any], tolerations: list[dict[str, Any]]) -> bool:
    def one(t: dict[str, Any]) -> bool:
        if t.get("effect") and t["effect"] != taint["effect"]:
            return False
        if not t.get("key"):
            return t.get("operator") == "Exists"
        return t["key"] == taint["key"] and (t.get("operator") == "Exists" or t.get("value", "") == taint.get("value", ""))
    return any(one(t) for t in tolerations)


def eligible(pod_spec: dict[str, Any], nodes: list[dict[str, Any]]) -> set[str]:
    """The nodes a pod may be scheduled on: its nodeSelector, its required node affinity and its tolerations
    against each node's NoSchedule/NoExecute taints."""
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    out = set()
    for node in nodes:
        labels = node["metadata"].get("labels") or {}
        if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
            continue
        if required and not any(all(_matches(e, labels) for e in term.get("matchExpressions") or [])
                                for term in required):
            continue
        taints = [t for t in node["spec"].get("taints") or [] if t["effect"] in ("NoSchedule", "NoExecute")]
        if all(_tolerated(t, pod_spec.get("tolerations") or []) for t in taints):
            out.add(node["metadata"]["name"])
    return out


def test_the_charts_workloads_land_only_on_the_nodes_they_select(cluster, rendered):
    for release, (namespace, objs) in rendered.items():
        items = [r["object"] for r in objs if not _is_crd(r) and not r["hook"]]
        done = cluster.kubectl("apply", "--server-side", "--field-manager=helm", "-n", namespace, "-f", "-",
                               input=_list(items), timeout=120)
        assert done.returncode == 0, f"{release}: {done.stderr}"
    nodes = cluster.get("nodes")["items"]
    workloads = [(namespace, r["object"]) for namespace, objs in rendered.values() for r in objs
                 if not r["hook"] and r["object"]["kind"] in ("DaemonSet", "Deployment")]
    (nfd_worker,) = [w for _, w in workloads if w["kind"] == "DaemonSet"]  # the operators' operands come later
    # NFD's worker tolerates nothing: every worker, none of the tainted control-plane nodes
    assert eligible(nfd_worker["spec"]["template"]["spec"], nodes) == {*builders.WORKERS, PLAIN_WORKER}

    def running(namespace: str, workload: dict[str, Any]) -> list[str]:
        selector = ",".join(f"{k}={v}" for k, v in workload["spec"]["selector"]["matchLabels"].items())
        pods = cluster.get("pods", "-n", namespace, "-l", selector)["items"]
        return sorted(p["spec"].get("nodeName") for p in pods if p["status"].get("phase") == "Running")

    for namespace, w in workloads:
        may = eligible(w["spec"]["template"]["spec"], nodes)
        name = f"{w['kind']} {namespace}/{w['metadata']['name']}"
        assert may, f"{name} selects no node of the lab"
        if w["kind"] == "DaemonSet":
            wait_for(lambda ns=namespace, w=w, may=may: running(ns, w) == sorted(may), 120, f"{name} on {sorted(may)}")
        else:
            replicas = w["spec"].get("replicas", 1)
            wait_for(lambda ns=namespace, w=w, n=replicas: len(running(ns, w)) == n, 120, f"{name}: {replicas} running")
            assert set(running(namespace, w)) <= may, name
