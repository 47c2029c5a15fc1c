"""Credentials of a running cluster: the `oc patch` a rotated pull secret, SSH key or vCenter
password becomes, and the script that applies them.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from components.openshift.files.common import file_bundle, render_script


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class ClusterPatch:
    """One `oc patch --type=merge` of a running cluster's object."""

    resource: str
    namespace: str | None
    file: str
    body: dict


def pull_secret_patches(pull_secret: str) -> list[ClusterPatch]:
    """The running cluster's global pull secret is the secret openshift-config/pull-secret (Red Hat,
    "Updating the global cluster pull secret"); the machine-config operator rolls it out to every
    node without a reboot since OpenShift 4.8."""
    data = {".dockerconfigjson": base64.b64encode(pull_secret.encode()).decode()}
    return [ClusterPatch("secret/pull-secret", "openshift-config", "pull-secret.json", {"data": data})]


def ssh_key_patches(ssh_keys: str) -> list[ClusterPatch]:
    """openshift-install puts the core user's keys into the MachineConfigs 99-master-ssh and
    99-worker-ssh; the machine-config operator applies a change of sshAuthorizedKeys without a
    reboot (OpenShift docs, "Understanding the Machine Config Operator", node disruption)."""
    keys = [line.strip() for line in ssh_keys.splitlines() if line.strip() and not line.startswith("#")]
    body = {"spec": {"config": {"passwd": {"users": [{"name": "core", "sshAuthorizedKeys": keys}]}}}}
    return [ClusterPatch(f"machineconfig/99-{role}-ssh", None, f"ssh-{role}.json", body)
            for role in ("master", "worker")]


def vcenter_credential_patches(server: str, user: str, password: str) -> list[ClusterPatch]:
    """A cluster on platform vsphere keeps its vCenter login in kube-system/vsphere-creds, one
    `<server>.username`/`<server>.password` pair per vCenter; the kube-controller-manager reads it
    again once redeployed (Red Hat, "How to update the vSphere credentials in OpenShift 4",
    https://access.redhat.com/solutions/4618011). The redeployment reason changes with the
    password (a one-way digest), so the same password never redeploys twice."""
    data = {f"{server}.username": base64.b64encode(user.encode()).decode(),
            f"{server}.password": base64.b64encode(password.encode()).decode()}
    reason = f"gpu-lab-vcenter-credentials-{sha256(password)[:16]}"
    return [
        ClusterPatch("secret/vsphere-creds", "kube-system", "vsphere-creds.json", {"data": data}),
        ClusterPatch("kubecontrollermanager/cluster", None, "kube-controller-manager.json",
                     {"spec": {"forceRedeploymentReason": reason}}),
    ]


def render_patch_script(oc_bin: str, patches: Sequence[ClusterPatch]) -> str:
    """The script that applies `patches` (their bodies and the kubeconfig arrive on stdin: patch_bundle)."""
    return render_script("patch-cluster.sh", {
        "OC": oc_bin,
        "PATCHES": [f"{p.resource} {p.namespace or '-'} {p.file}" for p in patches],
    })


def patch_bundle(kubeconfig: str, patches: Sequence[ClusterPatch]) -> str:
    """stdin of render_patch_script: the kubeconfig and each patch body."""
    return file_bundle({"kubeconfig": kubeconfig,
                        **{p.file: json.dumps(p.body, sort_keys=True) for p in patches}})
