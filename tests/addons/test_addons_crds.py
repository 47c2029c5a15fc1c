"""Custom resources, checked field by field (no schema of theirs ships with kubernetes-validate)."""

from __future__ import annotations

import json

from addons_harness import by_name, kube_objects, manifest
from components.addons import versions

COMPONENT = {"repository": versions.NETWORK_OPERATOR_REPOSITORY, "version": versions.NETWORK_OPERATOR_COMPONENTS}
CORE = ("v1", "apps/v1", "batch/v1", "rbac.authorization.k8s.io/v1", "admissionregistration.k8s.io/v1")


def test_only_known_custom_resources(full_run, openshift_run, baremetal_run):
    found = {(manifest(r)["apiVersion"], manifest(r)["kind"])
             for run in (full_run, openshift_run, baremetal_run) for r in kube_objects(run)
             if manifest(r)["apiVersion"] not in CORE}
    assert found == {
        ("mellanox.com/v1alpha1", "NicClusterPolicy"), ("nv-ipam.nvidia.com/v1alpha1", "IPPool"),
        ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition"),
        ("sriovnetwork.openshift.io/v1", "SriovNetworkNodePolicy"), ("sriovnetwork.openshift.io/v1", "SriovNetwork"),
        ("kubeflow.org/v2beta1", "MPIJob"), ("security.openshift.io/v1", "SecurityContextConstraints"),
        ("cert-manager.io/v1", "Issuer"), ("cert-manager.io/v1", "Certificate"),
    }
    # CRD objects go out as custom resources: the type token is just apiVersion and kind.
    for run in (full_run, openshift_run, baremetal_run):
        for r in kube_objects(run):
            m = manifest(r)
            if m["apiVersion"] not in CORE:
                assert r.type == f"kubernetes:{m['apiVersion']}:{m['kind']}"


def test_nic_cluster_policy(full_run):
    ncp = by_name(full_run, "NicClusterPolicy", "nic-cluster-policy")
    assert ncp["spec"] == {
        "nvIpam": {"image": "nvidia-k8s-ipam", **COMPONENT, "enableWebhook": False},
        "secondaryNetwork": {"cniPlugins": {"image": "plugins", **COMPONENT},
                             "multus": {"image": "multus-cni", **COMPONENT}},
    }
    assert "metadata" in ncp and "namespace" not in ncp["metadata"]  # cluster-scoped


def test_ip_pool_hands_out_the_pod_range(full_run):
    pool = by_name(full_run, "IPPool", "rdma-pool")
    assert pool["metadata"]["namespace"] == "nvidia-network-operator"
    workers = ["sckubw01", "sckubw02", "sckubw03", "sckubw04"]
    assert pool["spec"] == {
        "subnet": "192.168.0.128/25", "perNodeBlockSize": 31, "defaultGateway": False,
        # blocks for the GPU workers only: 4 x 31 fits the 126 usable addresses
        "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": workers}]}]},
        "exclusions": [{"startIP": "192.168.0.253", "endIP": "192.168.0.253"},
                       {"startIP": "192.168.0.254", "endIP": "192.168.0.254"}]}


def test_pvrdma_device_plugin_runs_on_the_workers(full_run):
    ds = by_name(full_run, "DaemonSet", "rdma-shared-dp-pvrdma")["spec"]["template"]["spec"]
    terms = ds["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["sckubw01", "sckubw02", "sckubw03", "sckubw04"]
    config = json.loads(by_name(full_run, "ConfigMap", "rdma-devices-pvrdma")["data"]["config.json"])
    assert config["configList"][0]["selectors"] == {"vendors": ["15ad"], "deviceIDs": ["0820"]}


def test_network_attachments_for_pods_on_the_rdma_subnet(full_run):
    for name, ipam in (("rdma-net", {"type": "nv-ipam", "poolName": "rdma-pool"}), ("rdma-static", {"type": "static"})):
        nad = by_name(full_run, "NetworkAttachmentDefinition", name)
        assert nad["metadata"]["namespace"] == "gpu-lab-acceptance"
        config = json.loads(nad["spec"]["config"])
        assert (config["name"], config["type"], config["master"], config["mtu"]) == (name, "macvlan", "ens224", 9000)
        assert config["ipam"] == ipam


def test_sriov_node_policies_make_eight_rdma_vfs_per_rail(baremetal_run):
    for pf, rail in (("enp5s0", "111"), ("enp132s0", "112")):
        policy = by_name(baremetal_run, "SriovNetworkNodePolicy", f"policy-sriov{rail}")
        assert policy["metadata"]["namespace"] == "nvidia-network-operator"
        assert policy["spec"] == {
            "resourceName": f"sriov_{rail}",
            "nodeSelector": {"feature.node.kubernetes.io/network-sriov.capable": "true"},
            "numVfs": 8,
            "nicSelector": {"vendor": "15b3", "deviceID": "1017", "pfNames": [pf]},
            "deviceType": "netdevice",
            "isRdma": True,
        }


def test_sriov_networks_one_per_rail_vlan(baremetal_run):
    for rail in (111, 112):
        net = by_name(baremetal_run, "SriovNetwork", f"sriov{rail}")
        assert net["spec"]["vlan"] == rail and net["spec"]["resourceName"] == f"sriov_{rail}"
        assert net["spec"]["networkNamespace"] == "gpu-lab-acceptance"
        assert json.loads(net["spec"]["ipam"]) == {"type": "nv-ipam", "poolName": f"sriov{rail}-pool"}
    static = by_name(baremetal_run, "SriovNetwork", "sriov111-static")
    assert json.loads(static["spec"]["capabilities"]) == {"ips": True}
    assert json.loads(static["spec"]["ipam"]) == {"type": "static"} and static["spec"]["vlan"] == 111
    pool = by_name(baremetal_run, "IPPool", "sriov111-pool")
    assert pool["spec"]["subnet"] == "10.10.11.0/24" and pool["spec"]["perNodeBlockSize"] == 127


def test_mpijob_shape(full_run):
    job = by_name(full_run, "MPIJob", "nccl-allreduce-rdma")
    assert job["apiVersion"] == "kubeflow.org/v2beta1"
    spec = job["spec"]
    assert set(spec) == {"slotsPerWorker", "mpiImplementation", "launcherCreationPolicy", "runPolicy",
                         "mpiReplicaSpecs"}
    assert spec["mpiImplementation"] == "OpenMPI" and spec["launcherCreationPolicy"] == "WaitForWorkersReady"
    assert spec["runPolicy"] == {"cleanPodPolicy": "Running", "backoffLimit": 3}
    assert set(spec["mpiReplicaSpecs"]) == {"Launcher", "Worker"}
    assert spec["mpiReplicaSpecs"]["Launcher"]["replicas"] == 1
    for replica in spec["mpiReplicaSpecs"].values():
        assert replica["template"]["spec"]["serviceAccountName"] == "gpu-lab-acceptance"


def test_openshift_scc_grants_ipc_lock_only(openshift_run):
    scc = by_name(openshift_run, "SecurityContextConstraints", "gpu-lab-rdma")
    assert scc["allowPrivilegedContainer"] is False
    assert scc["allowedCapabilities"] == ["IPC_LOCK"]
    assert not any(scc[k] for k in ("allowHostDirVolumePlugin", "allowHostIPC", "allowHostNetwork", "allowHostPID",
                                    "allowHostPorts"))
    assert "hostPath" not in scc["volumes"]
    role = by_name(openshift_run, "ClusterRole", "use-gpu-lab-rdma")
    assert role["rules"] == [{"apiGroups": ["security.openshift.io"], "resources": ["securitycontextconstraints"],
                              "resourceNames": ["gpu-lab-rdma"], "verbs": ["use"]}]


def test_webhook_certificate_from_cert_manager(full_run):
    cert = by_name(full_run, "Certificate", "bitfusion-webhook-cert")
    assert cert["spec"]["secretName"] == "bwki-webhook-certs"
    assert "bwki-webhook-svc.bwki.svc" in cert["spec"]["dnsNames"]
    assert cert["spec"]["issuerRef"] == {"name": "bitfusion-webhook-issuer", "kind": "Issuer"}
    assert by_name(full_run, "Issuer", "bitfusion-webhook-issuer")["spec"] == {"selfSigned": {}}
