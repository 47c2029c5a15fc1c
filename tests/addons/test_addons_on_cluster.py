"""The rendered add-ons applied to a cluster that acts (tests/kube_cluster.py): what `make render` writes
under kubernetes/ for a lab on plain Kubernetes, applied server-side, as pulumi-kubernetes applies it, after
the operators' CRDs it uses (tests/upstream, the shipped MPI operator manifest). Nodes are named and
labelled as the lab's: control-plane nodes m01..m03 (tainted), GPU workers w01..w04 with the labels NFD
(with the rendered NodeFeatureRules) and the GPU operator give them, and a worker without a PVRDMA
function. The scheduler, the controllers and kwok act: the device plugin's DaemonSet lands on the nodes
it selects and nowhere else, and each node's pinned nvidia-smi Job runs on its node and completes. The Helm releases are not here (no chart is rendered offline).
"""

from __future__ import annotations

import json
from pathlib import Path

import builders
import pytest
import upstream_schemas as upstream
import yaml
from kube_cluster import KubeNode, running_kube_cluster, wait_for

from tools import render

CORE_GROUPS = ("v1", "apps/v1", "batch/v1", "rbac.authorization.k8s.io/v1", "policy/v1")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> list[dict]:
    directory = tmp_path_factory.mktemp("render-kubernetes")
    config = {k: v for k, v in builders.lab_stack().items() if k != "gpu-lab:openshift"}
    stack_file = builders.write_stack_file(directory, config, "kubernetes")
    out = directory / "out"
    assert render.main(["--stack", "kubernetes", "--stack-file", str(stack_file), "--out", str(out)]) == 0
    return [yaml.safe_load(path.read_text()) for path in sorted(Path(out, "kubernetes").glob("*.yaml"))]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, rendered):
    nodes = [KubeNode(m, control_plane=True) for m in builders.CONTROL_PLANE] + [
        KubeNode(w, gpu=True, labels=nfd_rule_labels(rendered)) for w in builders.WORKERS] + [KubeNode(PLAIN_WORKER)]
    with running_kube_cluster(tmp_path_factory, nodes=nodes, cluster_operators=False) as kube:
        crds = _crds_for(rendered)
        kube.must("apply", "--server-side", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                         "items": crds}))
        for crd in crds:
            kube.must("wait", "--for=condition=Established", f"crd/{crd['metadata']['name']}", "--timeout=60s")
        yield kube


PLAIN_WORKER = "infra01"  # a worker with no PVRDMA function: no rule labels it


def nfd_rule_labels(manifests: list[dict]) -> dict[str, str]:
    """The labels NFD gives a PVRDMA worker by the rendered NodeFeatureRules, namespaced as NFD publishes
    them (no nfd-master runs here)."""
    rules = [rule for m in manifests if m["kind"] == "NodeFeatureRule" for rule in m["spec"]["rules"]]
    assert rules
    return {f"feature.node.kubernetes.io/{k}": v for rule in rules for k, v in rule["labels"].items()}


def _crds_for(manifests: list[dict]) -> list[dict]:
    """The CRDs that define the rendered custom resources, from the upstream files that ship them."""
    wanted = {(m["apiVersion"].rpartition("/")[0], m["kind"]) for m in manifests
              if m["apiVersion"] not in CORE_GROUPS}
    found: dict[str, dict] = {}
    for group, kind in sorted(wanted):
        (version, *_) = [c for c in upstream.crd_versions() if (c.group, c.kind) == (group, kind)]
        for doc in yaml.safe_load_all(version.source.file.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition" and (
                    doc["spec"]["group"], doc["spec"]["names"]["kind"]) == (group, kind):
                found[doc["metadata"]["name"]] = doc
    assert {(c["spec"]["group"], c["spec"]["names"]["kind"]) for c in found.values()} == wanted
    return list(found.values())


def test_every_rendered_manifest_is_accepted_server_side(cluster, rendered):
    namespaces = [m for m in rendered if m["kind"] == "Namespace"]
    cluster.must("apply", "--server-side", "--field-manager=gpu-lab-test", "-f", "-",
                 input=json.dumps({"apiVersion": "v1", "kind": "List", "items": namespaces}))
    others = [m for m in rendered if m["kind"] != "Namespace"]
    done = cluster.kubectl("apply", "--server-side", "--field-manager=gpu-lab-test", "-f", "-",
                           input=json.dumps({"apiVersion": "v1", "kind": "List", "items": others}), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("serverside-applied") == len(others)


def test_the_device_plugin_lands_on_the_workers_it_selects_and_nowhere_else(cluster, rendered):
    (daemonset,) = [m for m in rendered if m["kind"] == "DaemonSet"]
    namespace, name = daemonset["metadata"]["namespace"], daemonset["metadata"]["name"]
    selector = ",".join(f"{k}={v}" for k, v in daemonset["spec"]["selector"]["matchLabels"].items())

    def placed() -> list[str]:
        pods = cluster.get("pods", "-n", namespace, "-l", selector)["items"]
        return sorted(p["spec"].get("nodeName") for p in pods if p["status"].get("phase") == "Running")

    wait_for(lambda: placed() == sorted(builders.WORKERS), 90, f"{name} on every worker")
    status = cluster.get("daemonset", "-n", namespace, name)["status"]
    assert status["desiredNumberScheduled"] == len(builders.WORKERS) == status["numberReady"]


def test_each_nodes_pinned_job_runs_there_and_completes(cluster, rendered):
    jobs = [m for m in rendered if m["kind"] == "Job" and "nvidia-smi" in m["metadata"]["name"]]
    assert len(jobs) == len(builders.WORKERS)
    for job in jobs:
        namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
        wait_for(lambda ns=namespace, n=name: cluster.get("job", "-n", ns, n).get("status", {}).get("succeeded") == 1,
                 90, f"{name} completed")
        (pod,) = cluster.get("pods", "-n", namespace, "-l", f"job-name={name}")["items"]
        assert name.endswith(pod["spec"]["nodeName"])  # nvidia-smi-<node> ran on <node>
