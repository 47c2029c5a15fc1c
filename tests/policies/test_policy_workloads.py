"""Kubernetes, secrets and remote-command rules on the compliant lab and one-property mutations."""

import copy

import pytest
from policy_helpers import find, props, violations

import labrules.commands
from rules import commands, kubernetes, secrets

WORKER_PATH = "spec.mpiReplicaSpecs.Worker.template.spec.containers[0]"


def _worker(stack):
    return props(stack, "addons-mpijob-nccl-allreduce-rdma")["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]


def _smi(stack):
    return props(stack, "addons-job-nvidia-smi-w01")["spec"]["template"]["spec"]["containers"][0]


def test_compliant_lab_passes_workload_secret_and_command_rules(lab):
    for policy in kubernetes.POLICIES + secrets.POLICIES + commands.POLICIES:
        assert violations(policy, lab) == [], policy.name


# ---------------------------------------------------------------- RDMA pods


def test_rdma_container_without_ipc_lock_is_refused(lab):
    del _worker(lab)["securityContext"]
    assert violations(kubernetes.rdma_pods, lab) == [(
        "addons-mpijob-nccl-allreduce-rdma",
        f"container 'worker' ({WORKER_PATH}) requests rdma/pvrdma but does not add the IPC_LOCK "
        "capability; RDMA needs it to pin memory: add securityContext.capabilities.add: [IPC_LOCK]")]


def test_privileged_rdma_container_is_refused(lab):
    _worker(lab)["securityContext"]["privileged"] = True
    assert violations(kubernetes.rdma_pods, lab) == [(
        "addons-mpijob-nccl-allreduce-rdma",
        f"container 'worker' ({WORKER_PATH}) requests rdma/pvrdma and runs privileged; IPC_LOCK is "
        "all RDMA needs: drop privileged")]


@pytest.mark.parametrize("resource_name", ["intel.com/sriov_111", "openshift.io/mlx_sriov", "rdma/hca_shared"])
def test_sriov_and_other_rdma_resources_count(lab, resource_name):
    pod = {"type": "kubernetes:core/v1:Pod", "name": "roce-pod", "parent": "addons", "properties": {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "roce"},
        "spec": {"initContainers": [{"name": "init", "image": "busybox",
                                     "resources": {"requests": {resource_name: 1}}}],
                 "containers": [{"name": "app", "image": "busybox"}]}}}
    lab["resources"].append(pod)
    [(name, message)] = violations(kubernetes.rdma_pods, lab)
    assert name == "roce-pod"
    assert message.startswith(f"container 'init' (spec.initContainers[0]) requests {resource_name} but does not add")


def test_rdma_patterns_come_from_config(lab):
    del _worker(lab)["securityContext"]
    assert violations(kubernetes.rdma_pods, lab, {"rdmaResourcePatterns": ["infiniband"]}) == []


def test_ipc_lock_in_a_daemonset_template_passes(lab):
    ds = {"type": "kubernetes:apps/v1:DaemonSet", "name": "rdma-ds", "parent": "addons", "properties": {
        "spec": {"template": {"spec": {"containers": [{
            "name": "c", "image": "x", "resources": {"limits": {"rdma/rdma_shared_device_a": 1}},
            "securityContext": {"capabilities": {"add": ["NET_RAW", "IPC_LOCK"]}}}]}}}}}
    lab["resources"].append(ds)
    assert violations(kubernetes.rdma_pods, lab) == []


# ---------------------------------------------------------------- GPU limits


def test_gpu_request_without_limit_is_refused(lab):
    _smi(lab)["resources"] = {"requests": {"nvidia.com/gpu": 1}}
    assert violations(kubernetes.gpu_limits, lab) == [(
        "addons-job-nvidia-smi-w01",
        "container 'nvidia-smi' (spec.template.spec.containers[0]) requests 1 nvidia.com/gpu without a limit; GPUs "
        "are set in resources.limits (add limits: {nvidia.com/gpu: 1})")]


def test_gpu_request_above_its_limit_is_refused(lab):
    _worker(lab)["resources"]["requests"] = {"nvidia.com/gpu": 2}
    [(name, message)] = violations(kubernetes.gpu_limits, lab)
    assert message.endswith("requests 2 nvidia.com/gpu but limits it to 1; they must be equal")


def test_gpu_quantities_in_text_compare_as_numbers(lab):
    _worker(lab)["resources"]["requests"] = {"nvidia.com/gpu": "1"}
    assert violations(kubernetes.gpu_limits, lab) == []


# ---------------------------------------------------------------- credentials


@pytest.mark.parametrize("resource, drop_secret, path", [
    # the program marks a command's whole connection secret
    ("sw01-config", "connection", "connection.password"),
    ("openshift-lb", "connection", "connection.privateKey"),
    # the vCenter login, held by the host settings' provider
    ("pyvmomi", "vcenter:password", "vcenter:password"),
])
def test_plain_text_credentials_are_refused(lab, resource, drop_secret, path):
    r = find(lab, resource)
    r["secretPaths"] = [p for p in r["secretPaths"] if p != drop_secret]
    [(name, message)] = violations(secrets.credentials_secret, lab)
    assert name == resource
    assert message.startswith(f"{path} reaches the resource as plain text; pass it as a Pulumi secret")
    value = r["properties"]
    for key in path.split("."):
        value = value[key]
    assert value not in message, "the message must never carry the value"


def test_any_credential_looking_property_is_checked(lab):
    ocp = find(lab, "openshift")
    ocp["properties"]["installConfig"] = {"pullSecret": '{"auths": {}}', "sshKey": "ssh-ed25519 AAAA"}
    [(name, message)] = violations(secrets.credentials_secret, lab)
    assert (name, message.split(";")[0]) == ("openshift", "installConfig.pullSecret reaches the resource as plain text")
    ocp["secretPaths"] = ["installConfig.pullSecret"]
    assert violations(secrets.credentials_secret, lab) == []


def test_plain_credential_environment_variables_are_refused(lab):
    _smi(lab)["env"] = [{"name": "GRID_LICENSE_TOKEN", "value": "abc"},
                        {"name": "NGC_API_KEY", "valueFrom": {"secretKeyRef": {"name": "ngc", "key": "key"}}},
                        {"name": "NCCL_IB_DISABLE", "value": "0"}]
    assert [m.split(";")[0] for _, m in violations(secrets.credentials_secret, lab)] == [
        "spec.template.spec.containers[0].env[0].value (environment variable GRID_LICENSE_TOKEN) reaches the "
        "resource as plain text"]


def test_booleans_and_empty_values_are_not_credentials(lab):
    _smi(lab)["automountServiceAccountToken"] = False
    props(lab, "sw01-config")["connection"]["privateKey"] = ""
    assert violations(secrets.credentials_secret, lab) == []


def test_plain_kubernetes_secret_data_is_refused(lab):
    del find(lab, "addons-licensing-secret")["secretPaths"]
    assert violations(secrets.k8s_secret_data, lab) == [(
        "addons-licensing-secret", "Secret 'addons-licensing-secret' stringData keys ['client_configuration_token.tok', "
                            "'gridd.conf'] are plain text; build them from Pulumi secrets (pulumi.Output.secret) "
                            "so the values stay encrypted in state")]
    # the Secret's own keys are this rule's business, not the generic credential rule's
    assert violations(secrets.credentials_secret, lab) == []


def test_kubernetes_secret_with_each_value_secret_passes(lab):
    r = find(lab, "addons-licensing-secret")
    r["properties"]["data"] = {"password": "cGFzcw==", "token": "dG9r"}
    r["secretPaths"] = ["stringData", "data.password", "data.token"]
    assert violations(secrets.k8s_secret_data, lab) == []
    r["secretPaths"] = ["stringData", "data.password"]
    [(_, message)] = violations(secrets.k8s_secret_data, lab)
    assert message.startswith("Secret 'addons-licensing-secret' data keys ['token'] are plain text")


# ---------------------------------------------------------------- connect timeout

TIMEOUT, ATTEMPTS = labrules.commands.PER_DIAL_TIMEOUT_SECONDS, labrules.commands.DIAL_ERROR_LIMIT


@pytest.mark.parametrize("mutate, message", [
    (lambda c: c.pop("perDialTimeout"),
     f"connection to 172.16.31.2 does not set perDialTimeout; set it between {TIMEOUT[0]} and {TIMEOUT[1]} s so an "
     "unreachable machine "
     "fails the update instead of stalling it"),
    (lambda c: c.pop("dialErrorLimit"),
     f"connection to 172.16.31.2 does not set dialErrorLimit; set it between {ATTEMPTS[0]} and {ATTEMPTS[1]} so an "
     "unreachable machine "
     "fails the update instead of stalling it"),
    (lambda c: c.update(dialErrorLimit=-1), "connection to 172.16.31.2 sets dialErrorLimit to -1; keep it between "
                                            f"{ATTEMPTS[0]} and {ATTEMPTS[1]}"),
    (lambda c: c.update(perDialTimeout=TIMEOUT[1] + 1),
     f"connection to 172.16.31.2 sets perDialTimeout to {TIMEOUT[1] + 1}; keep it between {TIMEOUT[0]} and {TIMEOUT[1]} s"),
])
def test_unbounded_connection_attempts_are_reported(lab, mutate, message):
    mutate(props(lab, "sw01-config")["connection"])
    assert violations(commands.connect_timeout, lab) == [("sw01-config", message)]


def test_connection_bounds_come_from_config(lab):
    found = violations(commands.connect_timeout, copy.deepcopy(lab), {"maxPerDialTimeout": 5})
    # the switch's 10 s and the helper's 30 s are both above 5 s
    assert {name for name, _ in found} == {r["name"] for r in lab["resources"] if r["type"].startswith("command:remote:")}
    assert {"sw01-config", "openshift-lb"} <= {name for name, _ in found}


# ---------------------------------------------------------------- pinned host keys

HELPER_COMMAND = "openshift-lb"  # one of the helper node's remote Commands


def test_every_remote_command_of_the_lab_pins_its_host_key(lab):
    remote = [r for r in lab["resources"] if r["type"] in commands.REMOTE_TYPES]
    hosts = {r["properties"]["connection"]["host"] for r in remote}
    assert {"172.16.31.2", "172.16.7.5"} <= hosts  # the switch and the helper
    assert violations(commands.host_key_pinned, lab) == []


@pytest.mark.parametrize("name, address, setting", [
    ("sw01-config", "172.16.31.2", "switches[].hostKey of the switch at that address"),
    (HELPER_COMMAND, "172.16.7.5", "openshift.helper.hostKey"),
])
@pytest.mark.parametrize("mutate", [lambda c: c.pop("hostKey"), lambda c: c.update(hostKey="")], ids=["absent", "empty"])
def test_a_connection_without_a_pinned_host_key_is_reported(lab, name, address, setting, mutate):
    mutate(props(lab, name)["connection"])
    assert violations(commands.host_key_pinned, lab) == [(name, (
        f"connection to {address}:22 does not pin the host's SSH key (connection.hostKey), so any key is accepted "
        "and whoever answers at that address receives the credentials and what is sent; run "
        f"`ssh-keyscan -t ed25519 -p 22 {address}` (from a network you trust, or compare with the host's console), "
        f"then set {setting} to the key line it prints after the address"))]


def test_the_port_in_the_message_is_the_connections(lab):
    connection = props(lab, "sw01-config")["connection"]
    del connection["hostKey"]
    connection["port"] = 2222
    [(_, message)] = violations(commands.host_key_pinned, lab)
    assert "connection to 172.16.31.2:2222 " in message and "ssh-keyscan -t ed25519 -p 2222 172.16.31.2" in message
