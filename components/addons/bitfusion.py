"""vSphere Bitfusion: network-attached full or fractional GPUs for the cluster.

The client tokens archive (ca.crt, client.yaml, servers.conf, downloaded from vCenter) becomes
the `bitfusion-secret`; the Bitfusion device plugin advertises `bitfusion.io/gpu` and its
webhook injects the client into pods of namespaces that opt in. The guide's own checks run as
Jobs on an image with the client installed: `bitfusion health`, and the tf_cnn_benchmarks job
wrapped in `bitfusion run -n N -p FRACTION --`.
"""

from __future__ import annotations

import base64
import binascii
import io
import posixpath
import tarfile
from typing import Any

import pulumi
import yaml

from components.addons import versions
from components.addons.jobs import SERVICE_ACCOUNT, acceptance_job, job_labels
from components.addons.kube import Kube, metadata, role_of
from components.addons.plan import BitfusionPlan
from components.addons.rdma import privileged_scc_binding
from components.mirror import MirrorPlan
from components.secrets import LabSecrets

SECRET = "bitfusion-secret"
TOKEN_FILES = ("ca.crt", "client.yaml", "servers.conf")
WEBHOOK_NAMESPACE = "bwki"
WEBHOOK_SERVICE = "bwki-webhook-svc"
WEBHOOK_CERTS = "bwki-webhook-certs"
INJECTION_LABEL = {"bitfusion.io/injection": "enabled"}
RESOURCE = "bitfusion.io/gpu"  # 100 = one whole GPU
TOTAL_GPU_MEMORY_MB = 16000  # per GPU of the Bitfusion servers (V100 16 GB), for the webhook's quota maths
HEALTH_JOB = "bitfusion-health"
BENCHMARK_JOB = "bitfusion-tf-cnn"
# Client builds the webhook can inject (paths inside the bitfusion-client image).
CLIENT_BUILDS = {
    "ubuntu18": "bitfusion-client-ubuntu1804_2.5.1-13",
    "ubuntu20": "bitfusion-client-ubuntu2004_2.5.1-13",
    "centos7": "bitfusion-client-centos7-2.5.0-10",
    "centos8": "bitfusion-client-centos8-2.5.1-13",
}


def bitfusion_wrap(command: list[str], gpus: int, fraction: float) -> list[str]:
    """Run `command` on `gpus` network-attached GPUs, `fraction` of each (the Bitfusion guide, step 5)."""
    if not command:
        raise ValueError("bitfusion_wrap needs a command to run")
    if gpus < 1:
        raise ValueError(f"gpus must be 1 or more, got {gpus}")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    return ["bitfusion", "run", "-n", str(gpus), "-p", f"{fraction:g}", "--", *command]


def _member_text(tar: tarfile.TarFile, member: tarfile.TarInfo) -> str:
    """A regular file's text from the archive (extractfile gives None only for non-files, filtered out before)."""
    stream = tar.extractfile(member)
    if stream is None:
        raise ValueError(f"the archive's {member.name} is not a regular file")
    return stream.read().decode()


def unpack_tokens(archive_b64: str) -> dict[str, str]:
    """The three client files out of the base64 tokens archive vCenter hands out."""
    try:
        return _token_files(archive_b64)
    except ValueError as err:
        raise ValueError(
            f"gpu-lab:bitfusionClientToken: {err}; set it to `base64 -w0 <token>.tar` of the archive "
            f"downloaded from vCenter (Bitfusion plug-in, Tokens), which holds {', '.join(TOKEN_FILES)}"
        ) from None


def _token_files(archive_b64: str) -> dict[str, str]:
    try:
        raw = base64.b64decode(archive_b64, validate=True)
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            files = {posixpath.basename(m.name): m for m in tar.getmembers() if m.isfile()}
            missing = [f for f in TOKEN_FILES if f not in files]
            if missing:
                raise ValueError(f"the archive lacks {', '.join(missing)}")
            return {f: _member_text(tar, files[f]) for f in TOKEN_FILES}
    except (binascii.Error, tarfile.TarError, UnicodeDecodeError) as err:
        raise ValueError(f"not a base64 tar archive ({err.__class__.__name__})") from None


def token_secret(namespace: str, token: pulumi.Input[str]) -> dict[str, Any]:
    files = pulumi.Output.secret(token).apply(unpack_tokens)
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata(SECRET, namespace), "type": "Opaque",
            "stringData": pulumi.Output.secret(files)}


def _client_mounts() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Where the Bitfusion client looks for its tokens."""
    mounts = [
        {"name": "bitfusion-tokens", "mountPath": "/root/.bitfusion/client.yaml", "subPath": "client.yaml"},
        {"name": "bitfusion-tokens", "mountPath": "/root/.bitfusion/servers.conf", "subPath": "servers.conf"},
        {"name": "bitfusion-tokens", "mountPath": "/etc/bitfusion/tls/ca.crt", "subPath": "ca.crt"},
    ]
    volumes = [{"name": "bitfusion-tokens", "secret": {"secretName": SECRET, "defaultMode": 0o600}}]
    return mounts, volumes


def _client_job(name: str, namespace: str, image: str, command: list[str],
                limits: dict[str, int] | None = None) -> dict[str, Any]:
    mounts, volumes = _client_mounts()
    container: dict[str, Any] = {"name": name, "image": image, "command": command, "volumeMounts": mounts}
    if limits:
        container["resources"] = {"limits": limits, "requests": limits}
    return acceptance_job(name, namespace, {
        # These jobs carry their own client; the webhook must leave them as they are.
        "metadata": {"labels": job_labels(name), "annotations": {"auto-management/bitfusion": "none"}},
        "spec": {"restartPolicy": "Never", "serviceAccountName": SERVICE_ACCOUNT,
                 "containers": [container], "volumes": volumes},
    })


def health_job(namespace: str, image: str) -> dict[str, Any]:
    return _client_job(HEALTH_JOB, namespace, image, ["/bin/bash", "-c", "bitfusion health"])


def benchmark_command(gpus: int) -> list[str]:
    """the Bitfusion guide's tf_cnn_benchmarks example."""
    return ["python", "benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py",
            "--local_parameter_device=gpu", "--variable_update=replicated", "--model=inception3",
            "--batch_size=32", f"--num_gpus={gpus}", "--use_nccl=false"]


def benchmark_job(namespace: str, image: str, gpus: int, fraction: float) -> dict[str, Any]:
    command = bitfusion_wrap(benchmark_command(gpus), gpus, fraction)
    share = max(1, round(gpus * fraction * 100))
    return _client_job(BENCHMARK_JOB, namespace, image, command, limits={RESOURCE: share})


def image_repository(mirror: MirrorPlan | None) -> str:
    """Where the Bitfusion platform images come from."""
    return mirror.repository(versions.BITFUSION_IMAGE_REPO) if mirror is not None else versions.BITFUSION_IMAGE_REPO


def device_plugin(mirror: MirrorPlan | None = None) -> list[dict[str, Any]]:
    name = "bitfusion-device-plugin"
    labels = {"app": name}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(name, "kube-system")},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": metadata(name, "kube-system", labels=labels),
         "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
             "serviceAccountName": name,
             "hostNetwork": True,
             "containers": [{
                 "name": name,
                 "image": f"{image_repository(mirror)}/bitfusion-device-plugin:{versions.BITFUSION_K8S}",
                 # Registers with kubelet through its socket directory (infrastructure, not a job).
                 "securityContext": {"privileged": True},
                 "env": [{"name": "SOCKET_NAME", "value": "bitfusion.io"},
                         {"name": "INTERVAL", "value": "10"},
                         {"name": "RESOURCE_NAME", "value": RESOURCE},
                         {"name": "RESOURCE_NUMS", "value": "1000"}],
                 "volumeMounts": [{"name": "kubelet", "mountPath": "/var/lib/kubelet"}],
             }],
             "volumes": [{"name": "kubelet", "hostPath": {"path": "/var/lib/kubelet"}}],
         }}}},
    ]


def sidecar_config(mirror: MirrorPlan | None = None) -> str:
    """What the webhook adds to pods it manages: the client files and the tokens."""
    client_image = f"{image_repository(mirror)}/bitfusion-client:{versions.BITFUSION_K8S}"
    secret_item = lambda key, path, mode: {"secret": {"secretName": SECRET,  # noqa: E731
                                                      "items": [{"key": key, "path": path, "mode": mode}]}}
    config = {
        "initContainers": [{
            "name": "populate", "image": client_image,
            "command": ["/bin/bash", "-c", "cp -ra /bitfusion/* /bitfusion-distro/ && "
                                           "cp /root/.bitfusion/client.yaml /client && "
                                           "cp -r BITFUSION_CLIENT_OPT_PATH /workload-container-opt"],
            "volumeMounts": [{"name": "bitfusion-distro", "mountPath": "/bitfusion-distro"},
                             {"name": "client-dir", "mountPath": "/client"},
                             {"name": "client-from-secret", "mountPath": "/root/.bitfusion/client.yaml",
                              "subPath": "client.yaml"},
                             {"name": "bitfusion-opt", "mountPath": "/workload-container-opt"}],
        }],
        "containers": [{
            "name": "sidecar-container", "image": "container",
            "env": [{"name": "LD_LIBRARY_PATH", "value": "$LD_LIBRARY_PATH"}],
            "volumeMounts": [{"name": "ca", "mountPath": "/etc/bitfusion"},
                             {"name": "client-dir", "mountPath": "/root/.bitfusion/client.yaml",
                              "subPath": "client.yaml"},
                             {"name": "servers-from-secret", "mountPath": "/root/.bitfusion/servers.conf",
                              "subPath": "servers.conf"},
                             {"name": "bitfusion-distro", "mountPath": "/bitfusion"},
                             {"name": "bitfusion-opt", "mountPath": "/opt/bitfusion"}],
        }],
        "volumes": [{"name": "bitfusion-distro", "emptyDir": {}}, {"name": "bitfusion-opt", "emptyDir": {}},
                    {"name": "client-dir", "emptyDir": {}},
                    {"name": "ca", **secret_item("ca.crt", "tls/ca.crt", 0o444)},
                    {"name": "client-from-secret", **secret_item("client.yaml", "client.yaml", 0o600)},
                    {"name": "servers-from-secret", **secret_item("servers.conf", "servers.conf", 0o644)}],
    }
    return yaml.safe_dump(config, sort_keys=False)


def client_config() -> str:
    """The client builds the webhook may inject, keyed by the pod's bitfusion-client/os annotation."""
    clients = []
    for os_name, build in CLIENT_BUILDS.items():
        lib = f"/bitfusion/{build}/opt/bitfusion/lib/x86_64-linux-gnu/lib/"
        clients.append({"BitfusionVersion": "250", "OSVersion": os_name,
                        "BinaryPath": f"/bitfusion/{build}/usr/bin/bitfusion",
                        "EnvVariable": f"{lib}:$LD_LIBRARY_PATH"})
    return yaml.safe_dump({"BitfusionClients": clients}, sort_keys=False)


def webhook(openshift: bool, mirror: MirrorPlan | None = None) -> list[dict[str, Any]]:
    """The injector: Deployment, Service, its configuration and the webhook registrations.

    Its serving certificate comes from OpenShift's service CA, elsewhere from cert-manager.
    """
    ns, name = WEBHOOK_NAMESPACE, "bitfusion-webhook"
    labels = {"app": name}
    if openshift:
        service_tls = {"service.beta.openshift.io/serving-cert-secret-name": WEBHOOK_CERTS}
        ca_injection = {"service.beta.openshift.io/inject-cabundle": "true"}
    else:
        service_tls = {}
        ca_injection = {"cert-manager.io/inject-ca-from": f"{ns}/{name}-cert"}
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(name, ns)},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata("bwki-webhook-configmap", ns),
         "data": {"sidecarconfig.yaml": sidecar_config(mirror)}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata("bwki-bitfusion-client-configmap", ns),
         "data": {"bitfusion-client-config.yaml": client_config()}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata(name, ns, labels=labels),
         "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
             "metadata": {"labels": labels},
             "spec": {
                 "serviceAccountName": name,
                 "containers": [{
                     "name": "webhook",
                     "image": f"{image_repository(mirror)}/bitfusion-webhook:{versions.BITFUSION_K8S}",
                     "args": ["-sidecarCfgFile=/etc/webhook/config/sidecarconfig.yaml",
                              "-bitfusionClientConfig=/etc/webhook/bitfusion-client-config/"
                              "bitfusion-client-config.yaml",
                              "-tlsCertFile=/etc/webhook/certs/cert.pem", "-tlsKeyFile=/etc/webhook/certs/key.pem",
                              "-alsologtostderr", "-v=4"],
                     "env": [{"name": "TOTAL_GPU_MEMORY", "value": str(TOTAL_GPU_MEMORY_MB)}],
                     "ports": [{"containerPort": 8443, "name": "https"}],
                     "securityContext": {"privileged": False, "allowPrivilegeEscalation": False},
                     "volumeMounts": [
                         {"name": "certs", "mountPath": "/etc/webhook/certs", "readOnly": True},
                         {"name": "config", "mountPath": "/etc/webhook/config"},
                         {"name": "client-config", "mountPath": "/etc/webhook/bitfusion-client-config"}],
                 }],
                 "volumes": [
                     {"name": "certs", "secret": {"secretName": WEBHOOK_CERTS, "items": [
                         {"key": "tls.crt", "path": "cert.pem"}, {"key": "tls.key", "path": "key.pem"}]}},
                     {"name": "config", "configMap": {"name": "bwki-webhook-configmap"}},
                     {"name": "client-config", "configMap": {"name": "bwki-bitfusion-client-configmap"}}],
             }}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": metadata(WEBHOOK_SERVICE, ns, labels=labels,
                                                                     annotations=service_tls),
         "spec": {"selector": labels, "ports": [{"port": 443, "targetPort": 8443, "name": "https"}]}},
    ]
    for kind, webhook_name, path in (("MutatingWebhookConfiguration", "bwkimua.bitfusion.io", "/mutate"),
                                     ("ValidatingWebhookConfiguration", "bwkiva.bitfusion.io", "/validate")):
        objects.append({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": metadata(f"{name}-{path.strip('/')}", annotations=ca_injection),
            "webhooks": [{
                "name": webhook_name,
                "clientConfig": {"service": {"name": WEBHOOK_SERVICE, "namespace": ns, "path": path, "port": 443}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["pods"]}],
                # Only namespaces that ask for Bitfusion; a down webhook must not block pods.
                "namespaceSelector": {"matchLabels": INJECTION_LABEL},
                "failurePolicy": "Ignore",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1beta1"],
                "timeoutSeconds": 10,
            }],
        })
    if not openshift:
        objects += [
            {"apiVersion": "cert-manager.io/v1", "kind": "Issuer", "metadata": metadata(f"{name}-issuer", ns),
             "spec": {"selfSigned": {}}},
            {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": metadata(f"{name}-cert", ns),
             "spec": {"secretName": WEBHOOK_CERTS,
                      "dnsNames": [f"{WEBHOOK_SERVICE}.{ns}.svc", f"{WEBHOOK_SERVICE}.{ns}.svc.cluster.local"],
                      "issuerRef": {"name": f"{name}-issuer", "kind": "Issuer"}}},
        ]
    return objects


def deploy_bitfusion(kube: Kube, bf: BitfusionPlan, secrets: LabSecrets, workload_namespace: str,
                     after: list[pulumi.Resource | None]) -> list[str]:
    """Platform pieces always; the guide's jobs when switched on. Returns the job names."""
    token = secrets.require("bitfusion_client_token", "Bitfusion clients authenticate with the tokens archive")
    system_secret = kube.register("bitfusion-secret-kube-system", token_secret("kube-system", token))
    job_secret = kube.register("bitfusion-secret-workloads", token_secret(workload_namespace, token), after)
    plugin = [kube.register(role_of(m), m, [system_secret]) for m in device_plugin(kube.mirror)]
    if kube.openshift:
        kube.register("bitfusion-device-plugin-privileged",
                      privileged_scc_binding("bitfusion-device-plugin-privileged", "kube-system",
                                             "bitfusion-device-plugin"))
    ns = kube.namespace("bitfusion-namespace", WEBHOOK_NAMESPACE, privileged=False)
    for m in webhook(kube.openshift, kube.mirror):
        kube.register(role_of(m), m, [ns, system_secret])
    names = []
    jobs = []
    image = bf.client_image or ""  # check() requires it whenever Bitfusion is enabled
    if bf.health_check:
        jobs.append(health_job(workload_namespace, image))
    if bf.benchmark:
        jobs.append(benchmark_job(workload_namespace, image, bf.gpus, bf.fraction))
    for m in jobs:
        kube.register(role_of(m), m, [job_secret, *plugin, *after],
                      delete_before_replace=True, replace_on_changes=["spec"])
        names.append(m["metadata"]["name"])
    return names
