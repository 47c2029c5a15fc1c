"""Helpers of the add-on tests: run ClusterAddons under Pulumi mocks, read back manifests.

`run_addons` builds ClusterAddons directly from an `addons` section (plus the lab's vSphere
section), so these tests do not depend on the other components; `tests/addons/test_addons_stack.py`
runs the whole program once it imports.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import io
import tarfile
from typing import Any

import builders
import pulumi

from components.config import load_lab
from components.secrets import SECRET_KEYS, LabSecrets
from tools.mockrun import PLACEHOLDER, LabMocks, RecordingMonitor, Run, run_under_mocks

LAB = builders.lab_stack()
VSPHERE = LAB["gpu-lab:vsphere"]
LAB_ADDONS = LAB.get("gpu-lab:addons")

ALL_JOBS = {"nvidiaSmi": True, "ibWriteBw": True, "ncclRdma": True, "ncclTcp": True,
            "horovodRdma": True, "horovodTcp": True}


def token_archive(files: dict[str, str] | None = None) -> str:
    """A base64 tokens archive like the one vCenter's Bitfusion plug-in hands out."""
    files = files if files is not None else {"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIB\n",
                                             "client.yaml": "id: client-1\n",
                                             "servers.conf": "servers:\n- addresses: [172.16.31.206:56001]\n"}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"tokens/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(buf.getvalue()).decode()


def full_addons(**overrides: Any) -> dict[str, Any]:
    """Every add-on and job on, vGPU workers licensed through NLS."""
    addons: dict[str, Any] = {
        "nfd": {"enabled": True},
        "gpuOperator": {"enabled": True, "vgpu": {"repository": "registry.lab.local:5000/nvidia"}},
        "network": {"enabled": True},
        "mpiOperator": {"enabled": True},
        "jobs": dict(ALL_JOBS),
        "bitfusion": {"enabled": True, "clientImage": "registry.lab.local:5000/bitfusion/tf-client:2.5.1"},
    }
    for key, value in overrides.items():
        addons[key] = value
    return addons


def default_secrets() -> dict[str, str | None]:
    values: dict[str, str | None] = {attr: PLACEHOLDER for attr, _, _, is_object in SECRET_KEYS if not is_object}
    values["bitfusion_client_token"] = token_archive()
    values["gridd_conf"] = None
    return values


def run_addons(addons: dict[str, Any], *, vsphere: Any = True, openshift: bool = False,
               secrets: dict[str, str | None] | None = None, kubeconfig: str | None = PLACEHOLDER) -> Run:
    """ClusterAddons alone under mocks; returns what it registered."""
    from components.addons.component import ClusterAddons, ClusterAddonsArgs

    sections: dict[str, Any] = {"addons": copy.deepcopy(addons)}
    if vsphere is True:
        sections["vsphere"] = copy.deepcopy(VSPHERE)
    elif vsphere:
        sections["vsphere"] = vsphere
    # The add-ons only ask whether OpenShift is there; its own section is tested elsewhere.
    planned = dataclasses.replace(load_lab(sections).plan.addons, openshift=openshift)
    values = default_secrets() if secrets is None else secrets

    monitor = RecordingMonitor(LabMocks())

    def program() -> None:
        lab_secrets = LabSecrets(**{k: pulumi.Output.secret(v) for k, v in values.items() if v is not None})
        ClusterAddons("addons", ClusterAddonsArgs(
            addons=planned, secrets=lab_secrets,
            kubeconfig=pulumi.Output.secret(kubeconfig) if kubeconfig is not None else None))

    run_under_mocks(program, monitor)
    by_urn = {r.urn: r for r in monitor.recorded}
    for urn, registration in monitor.resources.items():
        if urn in by_urn:
            by_urn[urn].outputs = registration.state
    return Run(resources=monitor.recorded, outputs={}, stack="lab")


def manifest(resource) -> dict[str, Any]:
    """A recorded Kubernetes resource as the manifest the provider sends (secrets unwrapped).

    Numbers cross the Pulumi wire as doubles; whole ones go back to ints as in the YAML.
    """
    def fix(value: Any) -> Any:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, dict):
            return {k: fix(v) for k, v in value.items() if v is not None}
        if isinstance(value, list):
            return [fix(v) for v in value]
        return value
    return fix(resource.plain())


def kube_objects(run: Run, kind: str | None = None) -> list:
    """Recorded Kubernetes objects (not Helm releases, providers or components), optionally one kind."""
    found = [r for r in run.resources if r.type.startswith("kubernetes:") and r.custom
             and not r.type.startswith("kubernetes:helm.sh")]
    if kind is not None:
        found = [r for r in found if r.type.rsplit(":", 1)[-1] == kind]
    return found


def by_name(run: Run, kind: str, name: str) -> dict[str, Any]:
    """The manifest of the one object of `kind` called `name` (metadata.name)."""
    matches = [manifest(r) for r in kube_objects(run, kind) if manifest(r)["metadata"]["name"] == name]
    assert len(matches) == 1, f"{len(matches)} {kind} named {name}"
    return matches[0]
