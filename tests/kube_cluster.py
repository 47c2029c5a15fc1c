"""A Kubernetes cluster that acts, on loopback, for tests that drive nodes with kubectl or oc.

Real control-plane binaries from the modules pinned in kubecluster/ (`make kubecluster` builds them
into build/kubecluster/bin/): etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and
kwok (sigs.k8s.io/kwok) standing in for every node's kubelet. Everything listens on 127.0.0.1 only;
the service and pod ranges are values in objects, nothing is sent there.

What acts: the scheduler binds pods, kwok makes pods on its nodes Running and Ready, completes Job
pods and finishes deletions, the controller manager runs Deployments, ReplicaSets, Jobs, DaemonSets,
PodDisruptionBudget status, node lifecycle taints and garbage collection; `kubectl drain` evicts
through the eviction API, so a PodDisruptionBudget blocks it as on a real cluster.

Nodes and power. Every node is kwok's (annotation KWOK_NODE) and carries two annotations of ours:
POWER ("on"/"off") and BOOT_ID. kwok runs the node stages written here (NODE_STAGES) instead of its
own: while POWER is "on" and the node is not Ready, it posts Ready with `status.nodeInfo.bootID`
taken from BOOT_ID (a booting kubelet); while "off" it posts every condition Unknown, as the node
lifecycle controller does once a kubelet stops posting (the controller then taints the node
unreachable). `KubeCluster.node_power(name, on)` flips the annotation, with a new BOOT_ID on power-on,
and marks the node's pods not Ready while it is off and Ready again after the boot (the lifecycle
controller and the kubelet restarting them). Stages rather than taking the nodes from kwok
(its node selector) and letting the lease expire: kwok re-reads a node on every change, so a flip
shows within a second instead of after the controller's grace period, and kwok keeps handling the
node's pods. `KubeCluster.watch_power(is_powered_on)` follows a VM's power state (lab-vcsim's)
with the same flips. Pods still get deleted on a node that is off: a drain there finishes, where a
real one would wait for the kubelet.

kwok's own pod stages (pod-ready, pod-complete, pod-delete from its "fast" set) are copied from the
module by scripts/install-kubecluster.sh into build/kubecluster/kwok-stages/.

OpenShift bits for the node roll: the ClusterOperator CRD (openshift/api, from tests/upstream), the
`etcd` and `kube-apiserver` ClusterOperators with settable conditions, and an etcd static-pod
stand-in `etcd-<node>` in openshift-etcd per control-plane node. `KubeCluster.oc_bin_dir` holds an
`oc` that is kubectl, with `oc adm cordon|drain|uncordon|taint` spelled kubectl's way.

Missing binaries: a skip with the reason, a failure under CI=true (tests/required_tools.py).
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import shlex
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from loopback import LOOPBACK, free_port, wait_for_port
from procs import stop
from required_tools import missing

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "kubecluster"
BIN_DIR = BUILD / "bin"
KWOK_STAGES_DIR = BUILD / "kwok-stages"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok")
CLUSTER_OPERATOR_CRD = (ROOT / "tests" / "upstream" / "openshift+api" / "release-4.20" / "config" / "v1"
                        / "zz_generated.crd-manifests"
                        / "0000_00_cluster-version-operator_01_clusteroperators.crd.yaml")

KWOK_NODE = "kwok.x-k8s.io/node"
POWER = "gpu-lab.test/power"
BOOT_ID = "gpu-lab.test/boot-id"
SERVICE_CIDR = "10.0.0.0/24"
POD_CIDR = "10.244.0.1/16"
ETCD_NAMESPACE = "openshift-etcd"
HEALTH_OPERATORS = ("etcd", "kube-apiserver")
GPU_LABELS = {
    "nvidia.com/gpu.present": "true",
    "feature.node.kubernetes.io/pci-10de.present": "true",
    "feature.node.kubernetes.io/pci-15b3.present": "true",
}
_START_TIMEOUT_S = 120.0  # a cold kube-apiserver on two busy cores takes 10-30 s


@dataclass(frozen=True)
class KubeNode:
    """A node to create: a plain worker, a GPU worker (GPU_LABELS, one nvidia.com/gpu) or a control-plane node."""
    name: str
    gpu: bool = False
    control_plane: bool = False
    labels: dict[str, str] = field(default_factory=dict)


def binaries_missing() -> list[str]:
    return [b for b in BINARIES if not (BIN_DIR / b).is_file()] + (
        [] if (KWOK_STAGES_DIR / "pod-ready.yaml").is_file() else ["kwok-stages"])


def require_binaries() -> None:
    """Skip (fail under CI=true) when `make kubecluster` has not built the cluster."""
    absent = binaries_missing()
    if absent:
        missing(f"the test cluster is not built ({', '.join(absent)} missing in {BUILD}): run make kubecluster")


# kwok node stages: a node powered on boots (Ready, a bootID from BOOT_ID); one powered off is Unknown.
_NODE_BOOT = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: gpu-lab-node-boot
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - {key: '.metadata.annotations["%(power)s"]', operator: In, values: ["on"]}
    - {key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: NotIn, values: ["True"]}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
      addresses:
      - {address: "127.0.0.1", type: InternalIP}
      - {address: {{ .metadata.name | Quote }}, type: Hostname}
      allocatable:
      {{ with .status.allocatable }}{{ YAML . 1 }}{{ else }}  {cpu: "32", memory: 256Gi, pods: "110"}{{ end }}
      capacity:
      {{ with .status.capacity }}{{ YAML . 1 }}{{ else }}  {cpu: "32", memory: 256Gi, pods: "110"}{{ end }}
      nodeInfo:
        architecture: amd64
        bootID: {{ index .metadata.annotations "%(boot_id)s" | Quote }}
        containerRuntimeVersion: "cri-o://kwok"
        kernelVersion: "kwok"
        kubeProxyVersion: ""
        kubeletVersion: "%(kubelet_version)s"
        machineID: ""
        operatingSystem: linux
        osImage: "kwok"
        systemUUID: ""
      phase: Running
"""
_NODE_POWER_OFF = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: gpu-lab-node-power-off
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - {key: '.metadata.annotations["%(power)s"]', operator: In, values: ["off"]}
    - {key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: NotIn, values: ["Unknown"]}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
        message: "Kubelet stopped posting node status."
        reason: NodeStatusUnknown
        status: "Unknown"
        type: {{ .type | Quote }}
      {{ end }}
"""


def node_stages(kubelet_version: str) -> str:
    values = {"power": POWER, "boot_id": BOOT_ID, "kubelet_version": kubelet_version}
    return "---".join(s % values for s in (_NODE_BOOT, _NODE_POWER_OFF))


OC_WRAPPER = """#!/bin/sh
# oc for tests: kubectl, with oc's `adm cordon|drain|uncordon|taint` spelled kubectl's way.
# The cluster's own discovery cache: ports change from run to run.
if [ "$1" = adm ]; then
    case "$2" in
        cordon|drain|uncordon|taint) shift; exec %(kubectl)s --cache-dir=%(cache)s "$@" ;;
        *) echo "oc stand-in: 'oc adm $2' has no kubectl equivalent" >&2; exit 2 ;;
    esac
fi
exec %(kubectl)s --cache-dir=%(cache)s "$@"
"""


class KubeCluster:
    """The running cluster: kubectl, nodes and their power, ClusterOperators, the etcd members."""

    def __init__(self, workdir: Path, kubeconfig_path: Path, kubeconfig: str, server: str, ca: Path,
                 token: str, oc_bin_dir: Path) -> None:
        self.workdir = workdir
        self.kubeconfig_path = kubeconfig_path
        self.kubeconfig = kubeconfig
        self.server = server
        self.oc_bin_dir = oc_bin_dir
        self._ca = ca
        self._token = token
        self._nodes: dict[str, KubeNode] = {}
        self._lock = threading.Lock()

    # -- the client ------------------------------------------------------------------------------
    def kubectl(self, *args: str, check: bool = False, input: str | None = None,
                timeout: float = 60) -> subprocess.CompletedProcess:
        """kubectl (built beside the server) with the admin kubeconfig; text output."""
        return subprocess.run([str(BIN_DIR / "kubectl"), "--kubeconfig", str(self.kubeconfig_path),
                               f"--cache-dir={self.workdir / 'kube-cache'}", *args],
                              input=input, capture_output=True, text=True, timeout=timeout, check=check)

    @property
    def oc_path(self) -> Path:
        return self.oc_bin_dir / "oc"

    def env(self) -> dict[str, str]:
        """The environment for a process that runs `oc` or kubectl against this cluster."""
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig_path),
                "PATH": f"{self.oc_bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}

    def must(self, *args: str, input: str | None = None, timeout: float = 60) -> str:
        """kubectl's stdout; raises with its stderr when it fails."""
        done = self.kubectl(*args, input=input, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"kubectl {shlex.join(args)} exited {done.returncode}: {done.stderr.strip()}")
        return done.stdout

    def get(self, *args: str) -> dict[str, Any]:
        return dict(json.loads(self.must("get", *args, "-o", "json")))

    def apply(self, *objects: dict[str, Any]) -> None:
        self.must("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))

    def request(self, path: str) -> str:
        """GET `path` from the API server with the admin token (no kubectl process)."""
        context = ssl.create_default_context(cafile=str(self._ca))
        req = urllib.request.Request(self.server + path, headers={"Authorization": f"Bearer {self._token}"})
        with urllib.request.urlopen(req, context=context, timeout=10) as answer:
            return answer.read().decode()

    # -- nodes -----------------------------------------------------------------------------------
    def add_nodes(self, *nodes: KubeNode | str, wait: bool = True) -> None:
        """Create kwok nodes, powered on, each with its first boot id; by default until all are Ready."""
        specs = [n if isinstance(n, KubeNode) else KubeNode(n) for n in nodes]
        self.apply(*(_node_object(n) for n in specs))
        with self._lock:
            self._nodes.update({n.name: n for n in specs})
        if wait:
            for n in specs:
                self.wait_node_ready(n.name)

    @property
    def nodes(self) -> list[str]:
        return list(self._nodes)

    def node_ready(self, name: str) -> str | None:
        """The node's Ready condition status ("True", "False", "Unknown"), None before any."""
        node = self.get("node", name)
        return next((c["status"] for c in node.get("status", {}).get("conditions", []) if c["type"] == "Ready"), None)

    def boot_id(self, name: str) -> str:
        return str(self.get("node", name).get("status", {}).get("nodeInfo", {}).get("bootID", ""))

    def wait_node_ready(self, name: str, status: str = "True", timeout: float = 60) -> None:
        wait_for(lambda: self.node_ready(name) == status, timeout, f"node {name} Ready={status}")

    def powered(self, name: str) -> bool:
        """Whether the node's VM counts as on (node_power's last word; nodes start on)."""
        return bool(self.get("node", name)["metadata"].get("annotations", {}).get(POWER) == "on")

    def node_power(self, name: str, on: bool) -> None:
        """As if the node's VM were powered on or off: see the module's docstring."""
        if on:
            self.must("annotate", "--overwrite", f"node/{name}", f"{POWER}=on", f"{BOOT_ID}={uuid.uuid4()}")
            self.wait_node_ready(name, "True")
            self._set_pods_ready(name, True)
        else:
            self.must("annotate", "--overwrite", f"node/{name}", f"{POWER}=off")
            self.wait_node_ready(name, "Unknown")
            self._set_pods_ready(name, False)

    def _set_pods_ready(self, node: str, ready: bool) -> None:
        pods = self.get("pods", "-A", "--field-selector", f"spec.nodeName={node}")
        status = "True" if ready else "False"
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for pod in pods.get("items", []):
            meta = pod["metadata"]
            if meta.get("deletionTimestamp") or pod.get("status", {}).get("phase") != "Running":
                continue
            patch = {"status": {"conditions": [{"type": t, "status": status, "lastTransitionTime": now}
                                               for t in ("Ready", "ContainersReady")]}}
            self.kubectl("patch", "pod", meta["name"], "-n", meta["namespace"], "--subresource=status",
                         "--type=strategic", "-p", json.dumps(patch))

    @contextmanager
    def watch_power(self, is_powered_on: Callable[[str], bool], interval_s: float = 0.5,
                    nodes: Iterable[str] | None = None) -> Iterator[None]:
        """Follow `is_powered_on(node)` (a VM's power state) for `nodes` (default: all) in a thread:
        each change is a node_power flip. Errors in the thread are raised on leaving the block."""
        names = list(nodes) if nodes is not None else self.nodes
        stopping = threading.Event()
        errors: list[BaseException] = []

        def follow() -> None:
            seen = {name: self.powered(name) for name in names}
            while not stopping.is_set():
                try:
                    for name in names:
                        on = bool(is_powered_on(name))
                        if on != seen[name]:
                            self.node_power(name, on)
                            seen[name] = on
                except BaseException as e:  # noqa: BLE001 - handed to the test on exit
                    errors.append(e)
                    return
                stopping.wait(interval_s)

        thread = threading.Thread(target=follow, name="kube-cluster-power", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stopping.set()
            thread.join(timeout=30)
        if errors:
            raise errors[0]

    # -- OpenShift stand-ins ---------------------------------------------------------------------
    def install_cluster_operators(self) -> None:
        """The ClusterOperator CRD and the `etcd`, `kube-apiserver` operators, all healthy."""
        self.must("apply", "--server-side", "-f", str(CLUSTER_OPERATOR_CRD))
        self.must("wait", "--for=condition=Established", "crd/clusteroperators.config.openshift.io", "--timeout=60s")
        self.apply(*({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator", "metadata": {"name": n},
                      "spec": {}}
                     for n in HEALTH_OPERATORS))
        for name in HEALTH_OPERATORS:
            self.set_cluster_operator(name)

    def set_cluster_operator(self, name: str, available: bool = True, progressing: bool = False,
                             degraded: bool = False, message: str = "") -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        conditions = [{"type": t, "status": "True" if v else "False", "lastTransitionTime": now,
                       "reason": "AsExpected" if t != "Degraded" or not v else "TestSet", "message": message}
                      for t, v in (("Available", available), ("Progressing", progressing), ("Degraded", degraded))]
        self.must("patch", "clusteroperator", name, "--subresource=status", "--type=merge",
                  "-p", json.dumps({"status": {"conditions": conditions}}))

    def add_etcd_member(self, node: str) -> None:
        """The etcd static pod's stand-in on a control-plane node: `etcd-<node>` in openshift-etcd."""
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ETCD_NAMESPACE}})
        self.apply({
            "apiVersion": "v1", "kind": "Pod",
            # A static pod's mirror, as the kubelet posts it (kubernetes.io/config.mirror): drain leaves it.
            "metadata": {"name": f"etcd-{node}", "namespace": ETCD_NAMESPACE, "labels": {"app": "etcd", "etcd": "true"},
                         "annotations": {"kubernetes.io/config.mirror": f"etcd-{node}-stand-in"}},
            "spec": {"nodeName": node, "priorityClassName": "system-node-critical",
                     "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "etcd", "image": "quay.io/openshift/etcd:stand-in"}]},
        })
        wait_for(lambda: _pod_ready(self.get("pod", "-n", ETCD_NAMESPACE, f"etcd-{node}")), 60,
                 f"etcd-{node} Ready")


def _pod_ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))


_NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def node_name(vm_name: str) -> str:
    """A Node name for a VM: lab-vcsim's DC0_C0_RP0_VM0 is dc0-c0-rp0-vm0 (Node names are DNS names)."""
    return vm_name.lower().replace("_", "-")


def _node_object(node: KubeNode) -> dict[str, Any]:
    if not _NODE_NAME.fullmatch(node.name) or len(node.name) > 253:
        raise ValueError(f"{node.name!r} is no Node name (lowercase DNS name); node_name() gives {node_name(node.name)!r}")
    labels = {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "type": "kwok"}
    taints = []
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    if node.control_plane:
        labels.update({"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": ""})
        taints.append({"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"})
    else:
        labels["node-role.kubernetes.io/worker"] = ""
    if node.gpu:
        labels.update(GPU_LABELS)
        resources["nvidia.com/gpu"] = "1"
    labels.update(node.labels)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "labels": labels,
                     "annotations": {KWOK_NODE: "fake", POWER: "on", BOOT_ID: str(uuid.uuid4())}},
        "spec": {"taints": taints},
        "status": {"allocatable": resources, "capacity": resources},
    }


def wait_for(check: Callable[[], bool], timeout: float, what: str, interval_s: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(interval_s)


# -- start and stop ------------------------------------------------------------------------------
def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _certificates(pki: Path) -> None:
    """CA, the API server's serving certificate for 127.0.0.1, and the service-account key pair (EC: fast)."""
    pki.mkdir()
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
             "-subj", "/CN=gpu-lab-test-ca", cwd=pki)
    _openssl("req", *key, "-keyout", "apiserver.key", "-out", "apiserver.csr", "-subj", "/CN=kube-apiserver",
             cwd=pki)
    (pki / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                 "extendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n")
    _openssl("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "apiserver.crt", "-days", "2", "-extfile", "san.ext", cwd=pki)
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key", cwd=pki)
    _openssl("ec", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


class _Processes:
    """The cluster's processes, each logging to <workdir>/<name>.log; stopped in reverse order."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.started: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, *args: str) -> subprocess.Popen:
        with open(self.workdir / f"{name}.log", "wb") as log:
            proc = subprocess.Popen([str(BIN_DIR / name), *args], stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=self.workdir, start_new_session=True)
        self.started.append((name, proc))
        return proc

    def check_alive(self) -> None:
        for name, proc in self.started:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}: {self.tail(name)}")

    def tail(self, name: str, lines: int = 15) -> str:
        log = self.workdir / f"{name}.log"
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""

    def stop_all(self) -> None:
        for _, proc in reversed(self.started):
            stop(proc)


def _workdir(where: Any) -> Path:
    """A fresh directory from a pytest TempPathFactory, or under a given directory."""
    if hasattr(where, "mktemp"):
        return Path(where.mktemp("kube-cluster"))
    where = Path(where)
    where.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="kube-cluster-", dir=where))


@contextmanager
def running_kube_cluster(where: Any, nodes: Iterable[KubeNode | str] = (),
                         cluster_operators: bool = True) -> Iterator[KubeCluster]:
    """The cluster on loopback with `nodes` Ready (and, by default, the healthy ClusterOperators and an
    etcd member on each control-plane node); every process stopped on exit, passing or failing.

    `where`: a pytest TempPathFactory or a directory; the logs (<name>.log) and kubeconfig stay there."""
    require_binaries()
    workdir = _workdir(where)
    procs = _Processes(workdir)
    with ExitStack() as cleanup:
        cleanup.callback(procs.stop_all)
        try:
            cluster = _start(workdir, procs)
            specs = [n if isinstance(n, KubeNode) else KubeNode(n) for n in nodes]
            if specs:
                cluster.add_nodes(*specs)
            if cluster_operators:
                cluster.install_cluster_operators()
                for n in specs:
                    if n.control_plane:
                        cluster.add_etcd_member(n.name)
        except Exception as e:
            logs = "\n".join(f"--- {name}.log\n{procs.tail(name)}" for name, _ in procs.started)
            raise RuntimeError(f"the test cluster did not start ({e}); logs in {workdir}:\n{logs}") from e
        yield cluster


def _start(workdir: Path, procs: _Processes) -> KubeCluster:
    pki = workdir / "pki"
    _certificates(pki)
    token = secrets.token_hex(16)
    (workdir / "tokens.csv").write_text(f'{token},admin,admin-uid,"system:masters"\n')

    etcd_client, etcd_peer, api_port = free_port(), free_port(), free_port()
    etcd = procs.start(
        "etcd", "--name=kube-cluster", f"--data-dir={workdir / 'etcd'}",
        f"--listen-client-urls=http://{LOOPBACK}:{etcd_client}",
        f"--advertise-client-urls=http://{LOOPBACK}:{etcd_client}",
        f"--listen-peer-urls=http://{LOOPBACK}:{etcd_peer}",
        f"--initial-advertise-peer-urls=http://{LOOPBACK}:{etcd_peer}",
        f"--initial-cluster=kube-cluster=http://{LOOPBACK}:{etcd_peer}",
        # a throwaway store: no fsync, a small backend
        "--unsafe-no-fsync", "--quota-backend-bytes=1073741824", "--log-level=warn")
    wait_for_port(etcd_client, timeout_s=30, proc=etcd, log=workdir / "etcd.log")

    server = f"https://{LOOPBACK}:{api_port}"
    procs.start(
        "kube-apiserver", f"--etcd-servers=http://{LOOPBACK}:{etcd_client}",
        f"--bind-address={LOOPBACK}", f"--advertise-address={LOOPBACK}", f"--secure-port={api_port}",
        f"--cert-dir={pki}", f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}", f"--client-ca-file={pki / 'ca.crt'}",
        # the front-proxy CA too, which the controller manager and scheduler look up when they serve
        f"--requestheader-client-ca-file={pki / 'ca.crt'}", "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group", "--requestheader-allowed-names=front-proxy-client", "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--token-auth-file={workdir / 'tokens.csv'}", "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-account-key-file={pki / 'sa.pub'}", f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        # no endpoints for the `kubernetes` service: they would be 127.0.0.1, which Endpoints refuse
        "--endpoint-reconciler-type=none",
        "--allow-privileged=true", "--profiling=false", "--enable-priority-and-fairness=false")

    ca_data = base64.b64encode((pki / "ca.crt").read_bytes()).decode()
    kubeconfig = yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "admin",
        "clusters": [{"name": "gpu-lab-test", "cluster": {"server": server, "certificate-authority-data": ca_data}}],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": "admin", "context": {"cluster": "gpu-lab-test", "user": "admin"}}],
    }, sort_keys=False)
    kubeconfig_path = workdir / "kubeconfig"
    kubeconfig_path.write_text(kubeconfig)
    kubeconfig_path.chmod(0o600)

    oc_bin_dir = workdir / "oc-bin"
    oc_bin_dir.mkdir()
    oc = oc_bin_dir / "oc"
    oc.write_text(OC_WRAPPER % {"kubectl": shlex.quote(str(BIN_DIR / "kubectl")),
                                "cache": shlex.quote(str(workdir / "kube-cache"))})
    oc.chmod(0o755)

    cluster = KubeCluster(workdir, kubeconfig_path, kubeconfig, server, pki / "ca.crt", token, oc_bin_dir)

    def ready() -> bool:
        procs.check_alive()
        try:
            return cluster.request("/readyz") == "ok"
        except OSError:
            return False
    wait_for(ready, _START_TIMEOUT_S, "kube-apiserver /readyz", interval_s=0.5)

    common = [f"--kubeconfig={kubeconfig_path}", f"--authentication-kubeconfig={kubeconfig_path}",
              f"--authorization-kubeconfig={kubeconfig_path}", f"--bind-address={LOOPBACK}",
              "--leader-elect=false"]
    procs.start(
        "kube-controller-manager", *common, f"--secure-port={free_port()}",
        # no cloud and no pod network: the controllers that would allocate or route addresses stay off
        "--controllers=*,-node-ipam-controller,-service-lb-controller,-node-route-controller,"
        "-cloud-node-lifecycle-controller",
        f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
        f"--cluster-signing-cert-file={pki / 'ca.crt'}", f"--cluster-signing-key-file={pki / 'ca.key'}",
        "--use-service-account-credentials=false", "--node-monitor-period=2s")
    procs.start("kube-scheduler", *common, f"--secure-port={free_port()}")

    version = json.loads(cluster.request("/version"))["gitVersion"]
    (workdir / "kwok.yaml").write_text(yaml.safe_dump({
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration",
        "options": {"cidr": POD_CIDR, "nodeIP": LOOPBACK, "manageNodesWithAnnotationSelector": f"{KWOK_NODE}=fake",
                    "nodeLeaseDurationSeconds": 40,
                    # kwok's documented defaults, which a configuration file does not get
                    "podPlayStageParallelism": 4, "nodePlayStageParallelism": 4, "nodeLeaseParallelism": 4,
                    "podsOnNodeSyncParallelism": 1, "enablePodsOnNodeSyncListPager": True},
    }) + "---\n" + node_stages(version))
    pod_stages = sorted(KWOK_STAGES_DIR.glob("pod-*.yaml"))
    procs.start("kwok", f"--kubeconfig={kubeconfig_path}", f"--config={workdir / 'kwok.yaml'}",
                *(f"--config={s}" for s in pod_stages))

    # the controller manager is up once it made the default namespace's service account
    def controllers_up() -> bool:
        procs.check_alive()
        return cluster.kubectl("get", "serviceaccount", "default", "-n", "default").returncode == 0
    wait_for(controllers_up, _START_TIMEOUT_S, "kube-controller-manager (serviceaccount default/default)",
             interval_s=0.5)
    return cluster

