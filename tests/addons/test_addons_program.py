"""ClusterAddons under Pulumi mocks: which objects each switch creates and their key fields."""

from __future__ import annotations

import pytest
from addons_harness import (
    ALL_JOBS,
    PLACEHOLDER,
    by_name,
    default_secrets,
    kube_objects,
    manifest,
    run_addons,
)

from components.addons import shipped, versions
from components.addons.component import MissingKubeconfigError
from components.secrets import MissingSecretError

ACCEPTANCE_NS = "gpu-lab-acceptance"
WORKERS = ["w01", "w02", "w03", "w04"]
VGPU = {"enabled": True, "vgpu": {"repository": "registry.lab.local:5000/nvidia"}}


def kinds(run) -> dict[str, list[str]]:
    """kind -> metadata names (Helm releases and the MPI operator manifest by their roles)."""
    found: dict[str, list[str]] = {}
    for r in run.resources:
        kind = r.type.rsplit(":", 1)[-1]
        if r.type == "kubernetes:helm.sh/v3:Release":
            found.setdefault("Release", []).append(r.plain()["chart"])
        elif r.type == "kubernetes:yaml/v2:ConfigFile":
            found.setdefault("ConfigFile", []).append(r.plain()["file"])
        elif r.type.startswith("kubernetes:"):
            found.setdefault(kind, []).append(manifest(r)["metadata"]["name"])
    return {k: sorted(v) for k, v in found.items()}


def release(run, chart: str) -> dict:
    (found,) = [r.plain() for r in run.of_type("kubernetes:helm.sh/v3:Release") if r.plain()["chart"] == chart]
    return found


def containers_of(m: dict):
    """Every container of a Job's or MPIJob's pod templates."""
    spec = m["spec"]
    templates = [spec["template"]] if "template" in spec else [
        r["template"] for r in spec["mpiReplicaSpecs"].values()]
    for t in templates:
        yield from t["spec"].get("initContainers", [])
        yield from t["spec"]["containers"]


# ---------------------------------------------------------------- the component itself


def test_component_registers_the_contract_inputs(full_run):
    comp = full_run.named("addons")
    assert comp.type == "gpu-lab:addons:ClusterAddons"
    inputs = comp.plain()
    assert inputs["enabled"] == {"nfd": True, "gpuOperator": True, "network": True, "mpiOperator": True,
                                 **ALL_JOBS, "bitfusion": True}
    assert inputs["versions"] == versions.summary()
    assert inputs["versions"]["gpuOperator"] == versions.GPU_OPERATOR.version


def test_every_child_hangs_under_the_component_through_one_provider(full_run):
    comp = full_run.named("addons")
    (provider,) = full_run.of_type("pulumi:providers:kubernetes")
    assert provider.parent_urn == comp.urn
    assert provider.secret_paths() == ["kubeconfig"]
    children = [r for r in full_run.resources if r is not comp]
    assert all(r.parent_urn == comp.urn for r in children)
    assert all(r.name.startswith("addons-") for r in children)


def test_no_kubeconfig_is_a_clear_error():
    with pytest.raises(MissingKubeconfigError) as err:
        run_addons({"nfd": {"enabled": True}}, kubeconfig=None)
    assert "gpu-lab:kubeconfig" in str(err.value) and "pulumi config set --secret" in str(err.value)


def test_missing_licence_token_names_its_key():
    secrets = default_secrets()
    secrets["nvidia_license_token"] = None
    with pytest.raises(MissingSecretError, match="gpu-lab:nvidiaLicenseToken"):
        run_addons({"gpuOperator": VGPU}, secrets=secrets)


# ---------------------------------------------------------------- what each switch creates


@pytest.mark.parametrize("addons, expected", [
    ({"nfd": {"enabled": True}},
     {"Namespace": ["node-feature-discovery"], "Release": ["node-feature-discovery"]}),
    ({"gpuOperator": VGPU},
     {"Namespace": ["gpu-operator"], "Release": ["gpu-operator"], "Secret": ["licensing-config", "registry-secret"]}),
    ({"mpiOperator": {"enabled": True}}, {"ConfigFile": [shipped.find(*versions.MPI_OPERATOR_SOURCE).program_path]}),
    ({"network": {"enabled": True}},
     {"Namespace": [ACCEPTANCE_NS, "nvidia-network-operator"], "Release": ["network-operator"],
      "ServiceAccount": ["gpu-lab-acceptance", "rdma-shared-dp-pvrdma"], "ConfigMap": ["rdma-devices-pvrdma"],
      "DaemonSet": ["rdma-shared-dp-pvrdma"], "NicClusterPolicy": ["nic-cluster-policy"], "IPPool": ["rdma-pool"],
      "NetworkAttachmentDefinition": ["rdma-net", "rdma-static"],
      "NodeFeatureRule": ["gpu-lab-pvrdma"]}),
    ({"gpuOperator": VGPU, "jobs": {"nvidiaSmi": True}},
     {"Namespace": [ACCEPTANCE_NS, "gpu-operator"], "Release": ["gpu-operator"],
      "Secret": ["licensing-config", "registry-secret"], "ServiceAccount": ["gpu-lab-acceptance"],
      "Job": [f"nvidia-smi-{w}" for w in WORKERS]}),
])
def test_each_switch_creates_its_objects_and_nothing_else(addons, expected):
    assert kinds(run_addons(addons)) == expected


def test_jobs_switch_one_by_one():
    base = {"nfd": {"enabled": True}, "gpuOperator": VGPU, "network": {"enabled": True},
            "mpiOperator": {"enabled": True}}
    expected = {"ibWriteBw": ("Job", ["ib-write-bw-client", "ib-write-bw-server"]),
                "ncclRdma": ("MPIJob", ["nccl-allreduce-rdma"]), "ncclTcp": ("MPIJob", ["nccl-allreduce-tcp"]),
                "horovodRdma": ("MPIJob", ["horovod-resnet50-rdma"]),
                "horovodTcp": ("MPIJob", ["horovod-resnet50-tcp"])}
    assert "Job" not in kinds(run_addons(base)) and "MPIJob" not in kinds(run_addons(base))
    for switch, (kind, names) in expected.items():
        found = kinds(run_addons({**base, "jobs": {switch: True}}))
        assert found.get(kind) == names, switch
        other = "MPIJob" if kind == "Job" else "Job"
        assert other not in found, switch


def test_everything_on(full_run):
    found = kinds(full_run)
    assert found["Release"] == ["gpu-operator", "network-operator", "node-feature-discovery"]
    assert found["MPIJob"] == ["horovod-resnet50-rdma", "horovod-resnet50-tcp", "nccl-allreduce-rdma",
                               "nccl-allreduce-tcp"]
    assert found["Job"] == ["bitfusion-health", "bitfusion-tf-cnn", "ib-write-bw-client", "ib-write-bw-server",
                            *[f"nvidia-smi-{w}" for w in WORKERS]]
    assert found["DaemonSet"] == ["bitfusion-device-plugin", "rdma-shared-dp-pvrdma"]
    assert "SecurityContextConstraints" not in found  # not on plain Kubernetes


# ---------------------------------------------------------------- Helm releases


def test_helm_releases_are_pinned_and_fetched_by_the_provider(full_run):
    for chart in (versions.NFD, versions.GPU_OPERATOR, versions.NETWORK_OPERATOR):
        r = release(full_run, chart.chart)
        assert (r["version"], r["repositoryOpts"]["repo"]) == (chart.version, chart.repo)


def test_gpu_operator_runs_the_vgpu_guest_driver_with_licensing(full_run):
    values = release(full_run, "gpu-operator")["values"]
    driver = values["driver"]
    assert driver["repository"] == "registry.lab.local:5000/nvidia"
    assert (driver["image"], driver["version"]) == ("driver", versions.VGPU_GUEST_DRIVER)
    assert driver["imagePullSecrets"] == ["registry-secret"]
    assert driver["licensingConfig"] == {"secretName": "licensing-config", "nlsEnabled": True}
    assert values["nfd"] == {"enabled": False}  # the nfd add-on runs NFD once for both operators
    assert "rdma" not in driver


def test_licensing_and_pull_secrets_stay_secret(full_run):
    for r in kube_objects(full_run, "Secret"):
        assert r.secret_paths() == ["stringData"], r.name
    licensing = by_name(full_run, "Secret", "licensing-config")
    assert set(licensing["stringData"]) == {"gridd.conf", "client_configuration_token.tok"}
    assert licensing["metadata"]["namespace"] == "gpu-operator"
    pull = by_name(full_run, "Secret", "registry-secret")
    assert pull["type"] == "kubernetes.io/dockerconfigjson" and pull["stringData"] == {".dockerconfigjson": PLACEHOLDER}


def test_gridd_conf_secret_replaces_the_rendered_one():
    secrets = default_secrets()
    secrets["gridd_conf"] = "ServerAddress=nls.lab.local\nFeatureType=1\n"
    run = run_addons({"gpuOperator": VGPU}, secrets=secrets)
    assert by_name(run, "Secret", "licensing-config")["stringData"]["gridd.conf"] == secrets["gridd_conf"]
    rendered = run_addons({"gpuOperator": VGPU})
    assert "FeatureType=1" in by_name(rendered, "Secret", "licensing-config")["stringData"]["gridd.conf"]


def test_legacy_licence_server_needs_no_token():
    run = run_addons({"gpuOperator": {**VGPU, "licensing": {"mode": "legacy", "serverAddress": "172.16.7.5"}}})
    data = by_name(run, "Secret", "licensing-config")["stringData"]
    assert set(data) == {"gridd.conf"} and "ServerPort=7070" in data["gridd.conf"]
    assert release(run, "gpu-operator")["values"]["driver"]["licensingConfig"]["nlsEnabled"] is False


def test_with_the_addon_off_only_the_gpu_operator_brings_nfd():
    # Both charts default nfd.enabled to true: two NFDs of different versions would fight over labels.
    run = run_addons({"gpuOperator": VGPU, "network": {"enabled": True}})
    assert release(run, "gpu-operator")["values"]["nfd"] == {"enabled": True}
    assert release(run, "network-operator")["values"]["nfd"] == {"enabled": False}


# ---------------------------------------------------------------- acceptance jobs


def test_no_acceptance_container_is_privileged(full_run, openshift_run, baremetal_run):
    for run in (full_run, openshift_run, baremetal_run):
        jobs = [manifest(r) for r in kube_objects(run) if r.type.rsplit(":", 1)[-1] in ("Job", "MPIJob")]
        assert len(jobs) >= 7
        for m in jobs:
            assert m["metadata"]["namespace"] == ACCEPTANCE_NS
            for c in containers_of(m):
                assert c.get("securityContext", {}).get("privileged") in (None, False), m["metadata"]["name"]


def test_rdma_containers_lock_memory_and_ask_for_the_device(full_run):
    for name in ("ib-write-bw-server", "ib-write-bw-client"):
        (c,) = containers_of(by_name(full_run, "Job", name))
        assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
        assert c["resources"]["limits"] == {"rdma/pvrdma": 1}
    for name in ("nccl-allreduce-rdma", "nccl-allreduce-tcp", "horovod-resnet50-rdma", "horovod-resnet50-tcp"):
        worker = by_name(full_run, "MPIJob", name)["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
        (c,) = worker["spec"]["containers"]
        assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
        assert c["resources"]["limits"] == {"nvidia.com/gpu": 1, "rdma/pvrdma": 1}
        assert worker["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "rdma-net"


def test_ib_write_bw_pair_runs_on_two_workers_with_fixed_addresses(full_run):
    server = by_name(full_run, "Job", "ib-write-bw-server")["spec"]["template"]
    client = by_name(full_run, "Job", "ib-write-bw-client")["spec"]["template"]
    nodes = [t["spec"]["nodeSelector"]["kubernetes.io/hostname"] for t in (server, client)]
    assert nodes == ["w01", "w02"]
    import json
    nets = [json.loads(t["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]) for t in (server, client)]
    assert nets == [[{"name": "rdma-static", "ips": ["192.168.0.253/24"]}],
                    [{"name": "rdma-static", "ips": ["192.168.0.254/24"]}]]
    (s,), (c,) = server["spec"]["containers"], client["spec"]["containers"]
    assert s["command"] == ["ib_write_bw", "-R", "-d", "vmw_pvrdma0", "--report_gbits"]
    assert "ib_write_bw -R -d vmw_pvrdma0 --report_gbits 192.168.0.253" in c["command"][-1]


def env_of(container) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container["env"]}


def test_nccl_runs_differ_only_in_transport(full_run):
    specs = {t: by_name(full_run, "MPIJob", f"nccl-allreduce-{t}")["spec"] for t in ("rdma", "tcp")}
    env = {t: env_of(s["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]) for t, s in specs.items()}
    assert env["rdma"]["NCCL_IB_DISABLE"] == "0" and env["tcp"]["NCCL_IB_DISABLE"] == "1"
    assert {k: v for k, v in env["rdma"].items() if k != "NCCL_IB_DISABLE"} == \
           {k: v for k, v in env["tcp"].items() if k != "NCCL_IB_DISABLE"}
    assert env["rdma"]["NCCL_IB_HCA"] == "vmw_pvrdma0" and env["rdma"]["NCCL_NET_GDR_LEVEL"] == "0"
    for t, spec in specs.items():
        assert spec["slotsPerWorker"] == 1 and spec["mpiReplicaSpecs"]["Worker"]["replicas"] == 4
        command = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
        assert command[command.index("-np") + 1] == "4"
        # ranks start over ssh: the transport switch must ride on mpirun -x
        assert f"NCCL_IB_DISABLE={env[t]['NCCL_IB_DISABLE']}" in command
        # Ring on every rank: tree's bus bandwidth on two nodes can exceed the link (nccl-tests
        # doc/PERFORMANCE.md), and the report judges the figure against line rate.
        assert env[t]["NCCL_ALGO"] == "Ring" and "NCCL_ALGO=Ring" in command
        assert command[-9:] == ["/opt/nccl_tests/build/all_reduce_perf", "-b", "8", "-e", "2G", "-f", "2", "-g", "1"]


def test_mpi_workers_spread_over_the_gpu_workers(full_run):
    worker = by_name(full_run, "MPIJob", "nccl-allreduce-rdma")["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    affinity = worker["spec"]["affinity"]
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == WORKERS
    (anti,) = affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti["topologyKey"] == "kubernetes.io/hostname"
    assert anti["labelSelector"]["matchLabels"] == worker["metadata"]["labels"]


def test_horovod_job_is_the_guides_resnet50(full_run):
    for transport, threads in (("rdma", "1"), ("tcp", "0")):
        spec = by_name(full_run, "MPIJob", f"horovod-resnet50-{transport}")["spec"]
        command = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
        assert "scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py" in command
        assert {"--model=resnet50", "--batch_size=32", "--variable_update=horovod", "--use_fp16",
                "--xla=True", "--num_batches=100"} <= set(command)
        assert f"HOROVOD_MPI_THREADS_DISABLE={threads}" in command
        assert spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["image"] == \
            versions.HOROVOD_IMAGE


def test_nvidia_smi_runs_once_on_every_worker(full_run):
    for worker in WORKERS:
        pod = by_name(full_run, "Job", f"nvidia-smi-{worker}")["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        assert pod["nodeSelector"] == {"kubernetes.io/hostname": worker}
        assert c["command"] == ["nvidia-smi"]
        assert c["resources"]["limits"] == c["resources"]["requests"] == {"nvidia.com/gpu": 1}


def test_jobs_are_replaced_not_patched_and_not_awaited(full_run):
    job = by_name(full_run, "Job", "ib-write-bw-client")
    assert job["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"


# ---------------------------------------------------------------- Bitfusion


def test_bitfusion_jobs_wrap_the_benchmark_and_carry_the_tokens(full_run):
    bench = by_name(full_run, "Job", "bitfusion-tf-cnn")["spec"]["template"]
    (c,) = bench["spec"]["containers"]
    assert c["command"][:7] == ["bitfusion", "run", "-n", "1", "-p", "0.5", "--"]
    assert c["resources"]["limits"] == {"bitfusion.io/gpu": 50}
    assert bench["metadata"]["annotations"] == {"auto-management/bitfusion": "none"}
    mounts = {m["mountPath"]: m["subPath"] for m in c["volumeMounts"]}
    assert mounts == {"/root/.bitfusion/client.yaml": "client.yaml", "/root/.bitfusion/servers.conf": "servers.conf",
                      "/etc/bitfusion/tls/ca.crt": "ca.crt"}
    health = by_name(full_run, "Job", "bitfusion-health")["spec"]["template"]["spec"]["containers"][0]
    assert health["command"] == ["/bin/bash", "-c", "bitfusion health"]


def test_bitfusion_secrets_hold_the_unpacked_tokens(full_run):
    secrets = [manifest(r) for r in kube_objects(full_run, "Secret") if manifest(r)["metadata"]["name"] ==
               "bitfusion-secret"]
    assert sorted(s["metadata"]["namespace"] for s in secrets) == [ACCEPTANCE_NS, "kube-system"]
    assert all(set(s["stringData"]) == {"ca.crt", "client.yaml", "servers.conf"} for s in secrets)


def test_bitfusion_webhook_only_touches_namespaces_that_ask(full_run):
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        (r,) = kube_objects(full_run, kind)
        (hook,) = manifest(r)["webhooks"]
        assert hook["namespaceSelector"] == {"matchLabels": {"bitfusion.io/injection": "enabled"}}
        assert hook["failurePolicy"] == "Ignore"
        assert manifest(r)["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": "bwki/bitfusion-webhook-cert"}


def test_a_bad_bitfusion_token_fails_with_the_key_to_fix():
    secrets = default_secrets()
    secrets["bitfusion_client_token"] = PLACEHOLDER
    with pytest.raises(Exception, match="gpu-lab:bitfusionClientToken"):
        run_addons({"bitfusion": {"enabled": True, "clientImage": "r/bf:1"}, "jobs": {"nodes": ["a"]}},
                   secrets=secrets)


# ---------------------------------------------------------------- platforms


def test_openshift_uses_its_own_multus_and_an_ipc_lock_scc(openshift_run):
    ncp = by_name(openshift_run, "NicClusterPolicy", "nic-cluster-policy")
    assert "secondaryNetwork" not in ncp["spec"] and "nvIpam" in ncp["spec"]
    scc = by_name(openshift_run, "SecurityContextConstraints", "gpu-lab-rdma")
    assert scc["allowedCapabilities"] == ["IPC_LOCK"] and scc["allowPrivilegedContainer"] is False
    binding = by_name(openshift_run, "RoleBinding", "use-gpu-lab-rdma")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "gpu-lab-acceptance",
                                    "namespace": ACCEPTANCE_NS}]
    assert release(openshift_run, "gpu-operator")["values"]["platform"] == {"openshift": True}
    ns = by_name(openshift_run, "Namespace", ACCEPTANCE_NS)
    assert ns["metadata"]["labels"]["security.openshift.io/scc.podSecurityLabelSync"] == "false"
    svc = by_name(openshift_run, "Service", "bwki-webhook-svc")
    assert svc["metadata"]["annotations"] == {"service.beta.openshift.io/serving-cert-secret-name":
                                              "bwki-webhook-certs"}
    assert "Certificate" not in kinds(openshift_run)


def test_bare_metal_uses_the_deepops_sriov_rails(baremetal_run):
    found = kinds(baremetal_run)
    assert found["SriovNetworkNodePolicy"] == ["policy-sriov111", "policy-sriov112"]
    assert found["SriovNetwork"] == ["sriov111", "sriov111-static", "sriov112"]
    assert "rdma-shared-dp-pvrdma" not in found.get("DaemonSet", [])
    assert "NodeFeatureRule" not in found  # the SR-IOV nodes: the network-sriov.capable label NFD gives
    assert release(baremetal_run, "network-operator")["values"]["sriovNetworkOperator"] == {"enabled": True}
    worker = by_name(baremetal_run, "MPIJob", "nccl-allreduce-rdma")["spec"]["mpiReplicaSpecs"]["Worker"]
    (c,) = worker["template"]["spec"]["containers"]
    assert worker["template"]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "sriov111,sriov112"
    assert c["resources"]["limits"] == {"nvidia.com/gpu": 8, "nvidia.com/sriov_111": 1, "nvidia.com/sriov_112": 1}
    assert env_of(c)["NCCL_NET_GDR_LEVEL"] == "2" and "NCCL_IB_HCA" not in env_of(c)
    assert worker["replicas"] == 2
    driver = release(baremetal_run, "gpu-operator")["values"]["driver"]
    assert driver == {"enabled": True, "rdma": {"enabled": True, "useHostMofed": True}}

