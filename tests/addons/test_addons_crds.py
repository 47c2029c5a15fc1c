"""Custom resources and Helm values: field by field, and against the operators' own CRDs and charts.

The upstream files (CRDs, values.yaml, values.schema.json at the pinned tags) are read through
upstream_schemas (GPU_LAB_SCHEMAS); kubernetes-validate ships no schema for these kinds.
"""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest
import upstream_schemas as upstream
from addons_harness import ALL_JOBS, by_name, full_addons, kube_objects, manifest, run_addons

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
        ("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule"),
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
    workers = ["w01", "w02", "w03", "w04"]
    assert pool["spec"] == {
        "subnet": "192.168.0.128/25", "perNodeBlockSize": 8, "defaultGateway": False,
        # blocks for the GPU workers only, of the fixed size (addons.network.podAddressesPerNode)
        "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": workers}]}]},
        "exclusions": [{"startIP": "192.168.0.253", "endIP": "192.168.0.253"},
                       {"startIP": "192.168.0.254", "endIP": "192.168.0.254"}]}


def test_pvrdma_device_plugin_runs_where_nfd_finds_the_pvrdma_function(full_run):
    ds = by_name(full_run, "DaemonSet", "rdma-shared-dp-pvrdma")["spec"]["template"]["spec"]
    # no node names in the template: a new worker gets a plugin pod, the running ones keep theirs
    assert "affinity" not in ds
    (rule,) = by_name(full_run, "NodeFeatureRule", "gpu-lab-pvrdma")["spec"]["rules"]
    ((label, value),) = rule["labels"].items()
    # NFD publishes a label without a namespace under feature.node.kubernetes.io/ (NFD's customization
    # guide: https://kubernetes-sigs.github.io/node-feature-discovery/v0.19/usage/customization-guide.html)
    assert ds["nodeSelector"] == {f"feature.node.kubernetes.io/{label}": value}
    (match,) = rule["matchFeatures"]
    assert match["feature"] == "pci.device"
    assert match["matchExpressions"] == {"vendor": {"op": "In", "value": ["15ad"]},
                                         "device": {"op": "In", "value": ["0820"]}}
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
    assert pool["spec"]["subnet"] == "10.10.11.0/24" and pool["spec"]["perNodeBlockSize"] == 8


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
    # The SCC CRD (openshift/api, security/v1) requires priority and defaultAddCapabilities; null is
    # allowed, absent is not. Pulumi drops a top-level None, so their equivalents: 0 and no capability.
    assert scc["priority"] == 0 and scc["defaultAddCapabilities"] == []
    role = by_name(openshift_run, "ClusterRole", "use-gpu-lab-rdma")
    assert role["rules"] == [{"apiGroups": ["security.openshift.io"], "resources": ["securitycontextconstraints"],
                              "resourceNames": ["gpu-lab-rdma"], "verbs": ["use"]}]


def test_webhook_certificate_from_cert_manager(full_run):
    cert = by_name(full_run, "Certificate", "bitfusion-webhook-cert")
    assert cert["spec"]["secretName"] == "bwki-webhook-certs"
    assert "bwki-webhook-svc.bwki.svc" in cert["spec"]["dnsNames"]
    assert cert["spec"]["issuerRef"] == {"name": "bitfusion-webhook-issuer", "kind": "Issuer"}
    assert by_name(full_run, "Issuer", "bitfusion-webhook-issuer")["spec"] == {"selfSigned": {}}


# ---------------------------------------------------------------- against the upstream CRDs

RUNS = ["full_run", "openshift_run", "baremetal_run", "stack_run"]


def custom_resources(run) -> list[dict]:
    return [manifest(r) for r in kube_objects(run) if manifest(r)["apiVersion"] not in CORE]


@pytest.mark.parametrize("fixture", RUNS)
def test_every_custom_resource_is_valid_against_its_served_crd(fixture, request):
    # The API server validates a custom resource against the structural schema of its served CRD
    # version and prunes unknown fields silently: both are errors here.
    problems = [p for m in custom_resources(request.getfixturevalue(fixture)) for p in upstream.crd_problems(m)]
    assert problems == []


def test_every_kind_we_create_has_an_upstream_crd(full_run, openshift_run, baremetal_run):
    kinds = {(m["apiVersion"], m["kind"]) for run in (full_run, openshift_run, baremetal_run)
             for m in custom_resources(run)}
    assert all(upstream.crds_for(*k) for k in kinds), [k for k in kinds if not upstream.crds_for(*k)]


def _first(run, kind):
    return copy.deepcopy(next(m for m in custom_resources(run) if m["kind"] == kind))


def test_the_crd_check_catches_a_field_the_server_would_prune(full_run):
    policy = _first(full_run, "NicClusterPolicy")
    policy["spec"]["nvIpam"]["enableWebHook"] = False  # the CRD spells it enableWebhook
    [problem] = upstream.crd_problems(policy)
    assert "spec.nvIpam" in problem and "'enableWebHook' was unexpected" in problem


def test_the_crd_check_catches_a_missing_required_field(openshift_run):
    scc = _first(openshift_run, "SecurityContextConstraints")
    del scc["priority"]
    [problem] = upstream.crd_problems(scc)
    assert "'priority' is a required property" in problem


def test_the_crd_check_catches_a_wrong_type_and_an_unserved_version(full_run):
    pool = _first(full_run, "IPPool")
    pool["spec"]["perNodeBlockSize"] = "31"
    assert any("perNodeBlockSize" in p and "not of type 'integer'" in p for p in upstream.crd_problems(pool))
    job = _first(full_run, "MPIJob")
    job["apiVersion"] = "kubeflow.org/v1alpha2"
    assert upstream.crd_problems(job) == ["MPIJob kubeflow.org/v1alpha2: no upstream CRD in the schemas directory "
                                          "defines it"]


def test_preserve_unknown_fields_keeps_a_subtree_open():
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "closed": {"type": "object", "properties": {"a": {"type": "string"}}},
            "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "port": {"x-kubernetes-int-or-string": True},
            "maybe": {"type": "string", "nullable": True}}}}}
    validator = jsonschema.Draft7Validator(upstream.structural(schema, root=True))
    ok = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "x"},
          "spec": {"closed": {"a": "1"}, "open": {"anything": {"goes": 1}}, "port": "http", "maybe": None}}
    assert list(validator.iter_errors(ok)) == []
    ok["spec"]["closed"]["b"] = 1
    assert [e.message for e in validator.iter_errors(ok)] == ["Additional properties are not allowed ('b' was unexpected)"]


def test_rdma_device_plugin_config_matches_the_operator_schema(full_run):
    # Mellanox/network-operator webhook-schemas/rdma_shared_device_plugin.json: the schema the network
    # operator checks the RDMA shared device plugin's config against.
    source = next(s for s in upstream.manifest() if s.path.endswith("rdma_shared_device_plugin.json"))
    schema = json.loads(source.file.read_text())
    config = json.loads(by_name(full_run, "ConfigMap", "rdma-devices-pvrdma")["data"]["config.json"])
    assert list(jsonschema.Draft7Validator(schema).iter_errors(config)) == []


# ---------------------------------------------------------------- against the charts' values


def releases(run) -> list[dict]:
    return [r.plain() for r in run.of_type("kubernetes:helm.sh/v3:Release")]


@pytest.mark.parametrize("fixture", RUNS)
def test_every_helm_value_the_program_sets_is_one_the_chart_reads(fixture, request):
    # Helm ignores a values key no template reads, silently; values.schema.json refuses bad merged values.
    found = releases(request.getfixturevalue(fixture))
    assert {"gpu-operator", "network-operator"} <= {r["chart"] for r in found}
    problems = [p for r in found for p in upstream.values_problems(upstream.chart(r["chart"], r["version"]),
                                                                    r.get("values") or {})]
    assert problems == []


def test_the_values_check_catches_a_misspelt_path_and_a_schema_violation(full_run):
    gpu = next(r for r in releases(full_run) if r["chart"] == "gpu-operator")
    chart = upstream.chart(gpu["chart"], gpu["version"])
    values = copy.deepcopy(gpu["values"])
    values["driver"]["licenseConfig"] = {"secretName": "x"}  # the chart reads driver.licensingConfig
    assert upstream.values_problems(chart, values) == [
        f"{chart.where}: driver.licenseConfig.secretName: the chart has no 'driver.licenseConfig'"]
    nfd = next(r for r in releases(full_run) if r["chart"] == "node-feature-discovery")
    nfd_chart = upstream.chart(nfd["chart"], nfd["version"])
    assert any("not of type" in p for p in upstream.values_problems(nfd_chart, {"master": {"replicaCount": "two"}}))


def test_pinned_charts_are_the_ones_in_the_schemas_directory():
    for pinned in (versions.NFD, versions.GPU_OPERATOR, versions.NETWORK_OPERATOR):
        assert upstream.chart(pinned.chart, pinned.version).values is not None, pinned


# ---------------------------------------------------------------- one NFD per cluster


def nfd_deployments(run) -> list[str]:
    """Releases that deploy Node Feature Discovery: ours, or an operator chart's NFD subchart
    (gpu-operator and network-operator values.yaml: nfd.enabled, true by default)."""
    found = []
    for r in releases(run):
        if r["chart"] == "node-feature-discovery":
            found.append("nfd")
        elif r["chart"] in ("gpu-operator", "network-operator"):
            chart = upstream.chart(r["chart"], r["version"])
            default = chart.values["nfd"]["enabled"]
            if (r.get("values") or {}).get("nfd", {}).get("enabled", default):
                found.append(r["chart"])
    return found


@pytest.mark.parametrize("nfd,gpu,network,expected", [
    (True, True, True, ["nfd"]),
    (False, True, True, ["gpu-operator"]),
    (False, False, True, ["network-operator"]),
    (False, True, False, ["gpu-operator"]),
    (True, False, True, ["nfd"]),
])
def test_exactly_one_nfd_deployment(nfd, gpu, network, expected):
    addons = full_addons(nfd={"enabled": nfd}, network={"enabled": network}, bitfusion={"enabled": False},
                         jobs={k: False for k in ALL_JOBS})
    addons["gpuOperator"]["enabled"] = gpu
    assert nfd_deployments(run_addons(addons)) == expected


def test_the_network_operator_waits_for_the_release_that_brings_nfd(monkeypatch):
    # The network operator chart deploys NodeFeatureRules (values.yaml nfd.deployNodeFeatureRules), whose
    # CRD comes with NFD: with the add-on off, that is the GPU operator's release.
    import addons_harness

    dependencies: dict[str, list[str]] = {}

    class DependencyMonitor(addons_harness.RecordingMonitor):
        def RegisterResource(self, request):
            response = super().RegisterResource(request)
            dependencies[request.name] = list(request.dependencies)
            return response

    monkeypatch.setattr(addons_harness, "RecordingMonitor", DependencyMonitor)
    run = run_addons(full_addons(nfd={"enabled": False}, bitfusion={"enabled": False}))
    by_chart = {r.plain()["chart"]: r for r in run.of_type("kubernetes:helm.sh/v3:Release")}
    assert "node-feature-discovery" not in by_chart
    assert by_chart["gpu-operator"].urn in dependencies[by_chart["network-operator"].name]


# ---------------------------------------------------------------- images the network operator release ships


def network_operator_release_images() -> set[tuple[str, str, str]]:
    """(repository, image, version) of every component of the pinned network operator release
    (Mellanox/network-operator hack/release.yaml at the pinned tag)."""
    tag = f"v{versions.NETWORK_OPERATOR.version}"
    source = next(s for s in upstream.manifest()
                  if s.repository == "Mellanox/network-operator" and s.tag == tag and s.path == "hack/release.yaml")
    import yaml

    release = yaml.safe_load(source.file.read_text())
    return {(c["repository"], c["image"], c["version"]) for c in release.values()}


def test_network_components_are_images_of_the_pinned_release(full_run, baremetal_run):
    shipped = network_operator_release_images()
    found = set()
    for run in (full_run, baremetal_run):
        for m in custom_resources(run):
            if m["kind"] == "NicClusterPolicy":
                for part in [m["spec"]["nvIpam"], *m["spec"].get("secondaryNetwork", {}).values()]:
                    found.add((part["repository"], part["image"], part["version"]))
        for r in kube_objects(run, "DaemonSet"):
            for c in manifest(r)["spec"]["template"]["spec"]["containers"]:
                if "k8s-rdma-shared-dev-plugin" in c["image"]:
                    repo_image, version = c["image"].rsplit(":", 1)
                    repository, image = repo_image.rsplit("/", 1)
                    found.add((repository, image, version))
    assert len(found) >= 4
    assert found <= shipped, found - shipped


def test_the_pools_wait_until_the_operator_reports_the_policy_ready(full_run, baremetal_run):
    # nv-ipam's IPPool CRD comes from the network operator as it deploys nv-ipam, not from its chart;
    # pulumi-kubernetes 4.34.2 retries a kind it cannot map for about 63 s only, whatever the timeouts
    # (pkg/await/await.go: 5 retries, backoff 1-32 s), so the pools follow the policy, whose create
    # waits for the operator's status through the provider's `pulumi.com/waitFor` annotation
    # (pkg/metadata/annotations.go; `jsonpath={<path>}=<value>`, pkg/jsonpath/jsonpath.go).
    for run in (full_run, baremetal_run):
        (policy,) = [r for r in kube_objects(run) if manifest(r)["kind"] == "NicClusterPolicy"]
        annotations = manifest(policy)["metadata"]["annotations"]
        assert annotations["pulumi.com/waitFor"] == "jsonpath={.status.state}=ready"
        assert int(annotations["pulumi.com/timeoutSeconds"]) >= 600  # the provider's own default
        pools = [r for r in kube_objects(run) if manifest(r)["kind"] == "IPPool"]
        assert pools and all(policy.urn in r.dependencies for r in pools)
    # "ready" is a state the operator writes (mellanox.com_nicclusterpolicies.yaml: status.state's enum)
    (crd,) = [c for c in upstream.crds_for("mellanox.com/v1alpha1", "NicClusterPolicy")]
    assert "ready" in crd.schema["properties"]["status"]["properties"]["state"]["enum"]
