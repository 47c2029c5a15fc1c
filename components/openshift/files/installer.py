"""The openshift-install runs: `create ignition-configs` (install-config on stdin, the kept install
assets on stdout) and `wait-for`, and the placeholder output offline runs use.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping

from components.openshift.files.common import file_bundle, render_script
from components.openshift.files.ignition import IGNITION_SPEC
from labrules.openshift import API_PORT

# Files openshift-install leaves in the install dir that the stack keeps, by the key the component
# reads them under: the ignition (the master and worker files are pointers to the machine-config
# server, valid for as long as its CA, so later nodes join with them) and what a running cluster
# needs of the install dir (the admin kubeconfig and password, metadata.json, the installer's
# state, which `openshift-install wait-for` and `gather` read).
INSTALL_ASSETS = {
    "bootstrap": "bootstrap.ign",
    "master": "master.ign",
    "worker": "worker.ign",
    "kubeconfig": "auth/kubeconfig",
    "kubeadminPassword": "auth/kubeadmin-password",
    "metadata": "metadata.json",
    "installState": ".openshift_install_state.json",
}
SINGLE_NODE_IGNITION = "bootstrap-in-place-for-live-iso.ign"


def install_assets(single_node: bool) -> dict[str, str]:
    """Key -> path under the install dir of every file the ignition step returns."""
    if single_node:
        return {**{k: v for k, v in INSTALL_ASSETS.items() if k != "bootstrap"}, "master": SINGLE_NODE_IGNITION}
    return dict(INSTALL_ASSETS)


def render_ignition_script(install_dir: str, installer: str, single_node: bool = False,
                           schedulable_control_plane: bool = False) -> str:
    """Shell run by the local Command: install-config on stdin, JSON of base64 results on stdout."""
    return render_script("create-ignition.sh", {
        "INSTALL_DIR": install_dir,
        "INSTALLER": installer,
        "CREATE_TARGET": "single-node-ignition-config" if single_node else "ignition-configs",
        "MASTERS_SCHEDULABLE": "true" if single_node or schedulable_control_plane else "false",
        "OUTPUTS": [f"{key} {path}" for key, path in install_assets(single_node).items()],
    })


def parse_ignition_stdout(stdout: str | None) -> dict[str, str]:
    """Decode the ignition step's stdout into {key: file text}; empty before it has run.

    Stacks built before the install assets were kept hold the ignition and the kubeconfig only.
    """
    if not stdout:
        return {}
    return {key: base64.b64decode(value).decode() for key, value in json.loads(stdout).items()}


def install_dir_bundle(generated: Mapping[str, str], single_node: bool = False) -> str:
    """The kept install assets, by their path under the install dir, for the scripts that put it back."""
    return file_bundle({path: generated[key] for key, path in install_assets(single_node).items() if key in generated})


def render_wait_script(install_dir: str, installer: str, stage: str) -> str:
    """`openshift-install wait-for <stage>`, the install dir put back from stdin where it is missing."""
    return render_script("wait-for.sh", {"INSTALL_DIR": install_dir, "INSTALLER": installer, "WAIT_STAGE": stage})


PLACEHOLDER_KUBECONFIG = f"""apiVersion: v1
kind: Config
clusters:
- name: placeholder
  cluster: {{server: "https://api.placeholder.invalid:{API_PORT}"}}
contexts:
- name: placeholder
  context: {{cluster: placeholder, user: admin}}
current-context: placeholder
users:
- name: admin
  user: {{token: placeholder}}
"""


def placeholder_ignition_stdout() -> str:
    """Stdout of the ignition step with placeholder files, for offline runs under mocks."""
    files = {key: json.dumps({"ignition": {"version": IGNITION_SPEC}}) for key in ("bootstrap", "master", "worker")}
    files["kubeconfig"] = PLACEHOLDER_KUBECONFIG
    files["kubeadminPassword"] = "placeholder"
    files["metadata"] = json.dumps({"clusterName": "placeholder", "infraID": "placeholder"})
    files["installState"] = json.dumps({})
    return json.dumps({k: base64.b64encode(v.encode()).decode() for k, v in files.items()})
