"""Every embedded shell script the program renders, from the tests' own small configurations.

Paths hold blanks, so a script that only works with tame paths fails its checks. The awkward
variant adds a quote and a dollar sign for the quoting round trip; shellcheck would flag those
literal values themselves (SC2016, SC2089), so it reads the plain variant.
"""

from __future__ import annotations

import copy

from components.config import load_lab
from components.openshift.files.cluster_nodes import render_csr_script, render_remove_node_script
from components.openshift.files.helper_steps import render_helper_step, render_ignition_publish
from components.openshift.files.installer import render_ignition_script, render_wait_script
from components.openshift.files.patches import (
    pull_secret_patches,
    render_patch_script,
    ssh_key_patches,
    vcenter_credential_patches,
)
from components.roce.host import render_baremetal_script
from components.ssh.host_key import render_host_key_check
from components.switch.files import render_apply, render_login_check, render_undo, undo_items
from components.switch.model import SwitchConfig
from components.switch.plan import switch_plan

BLANK_DIR = "/var/tmp/gpu lab"
AWKWARD_DIR = "/var/tmp/it's a $dir"

# Bare-metal nodes with one MAC (PXE menus per node), a non-root helper user (sudo), local and
# remote RHCOS images; addresses on loopback, since nothing here is ever contacted.
OPENSHIFT = {
    "clusterName": "scripts", "baseDomain": "example.test", "platform": "none",
    "networks": {"clusterNetwork": {"cidr": "10.128.0.0/14", "hostPrefix": 23},
                 "serviceNetwork": "172.30.0.0/16", "machineNetwork": ["127.0.10.0/24"]},
    "helper": {"address": "127.0.10.2", "user": "core", "loadBalancerAddress": "127.0.10.3",
               "paths": {"staging": BLANK_DIR, "tftpRoot": "/srv/tftp root", "httpRoot": "/srv/www root"}},
    "installer": "/opt/open shift/openshift-install",
    "oc": "/opt/open shift/oc",
    "nodes": [
        {"name": "bootstrap", "role": "bootstrap", "address": "127.0.10.9"},
        {"name": "cp-0", "role": "control-plane", "address": "127.0.10.10"},
        {"name": "cp-1", "role": "control-plane", "address": "127.0.10.11"},
        {"name": "cp-2", "role": "control-plane", "address": "127.0.10.12"},
        {"name": "dgx-0", "role": "worker", "address": "127.0.10.20", "mac": "52:54:00:aa:bb:cc"},
    ],
    "rhcos": {"kernel": "rhcos/kernel-x86_64", "initramfs": "rhcos/initramfs.img",
              "rootfs": "http://127.0.10.2:8080/rhcos/rootfs.img"},
}

CUMULUS = {"name": "cl-scripts", "os": "cumulus", "user": "cumulus", "managementAddress": "127.0.10.30",
           "ports": {"hosts": ["swp10"],
                     "rails": [{"subnet": "10.10.11.0/24", "ports": ["swp1", "swp2"], "hostInterface": "enp5s0"}]}}


def openshift_plan(**changes):
    raw = copy.deepcopy(OPENSHIFT)
    raw.update(changes)
    return load_lab({"openshift": raw}).plan.cluster


def rendered_scripts(awkward: bool = False) -> dict[str, str]:
    """Name -> script text, for every script template and every generated switch script."""
    scripts: dict[str, str] = {}
    directory = AWKWARD_DIR if awkward else BLANK_DIR
    helper = OPENSHIFT["helper"]
    if awkward:
        helper = {**helper, "paths": {"staging": AWKWARD_DIR, "tftpRoot": "/srv/'tftp'", "httpRoot": "/srv/$www"}}
    for label, p in (("sudo", openshift_plan(helper=helper)),
                     ("root", openshift_plan(helper={**helper, "user": "root"}))):
        for action in ("install", "remove"):
            for step in ("dns", "lb", "pxe"):
                scripts[f"helper-{step}-{action}-{label}.sh"] = render_helper_step(p, step, action)
            scripts[f"helper-ignition-{action}-{label}.sh"] = render_ignition_publish(p, "bootstrap.ign", action)
    p = openshift_plan(helper=helper)
    run = p.lifecycle
    scripts["create-ignition.sh"] = render_ignition_script(directory, run.installer)
    scripts["create-ignition-single-node.sh"] = render_ignition_script(directory, run.installer, single_node=True)
    scripts["wait-for.sh"] = render_wait_script(directory, run.installer, "bootstrap-complete")
    scripts["create-ignition-compact.sh"] = render_ignition_script(directory, run.installer,
                                                                   schedulable_control_plane=True)
    scripts["approve-csrs.sh"] = render_csr_script(p, run.oc, ["dgx-0"])
    scripts["remove-node.sh"] = render_remove_node_script(p, run.oc, "dgx-0")
    for role, patches in (("pull-secret", pull_secret_patches("")), ("ssh-key", ssh_key_patches("")),
                          ("vcenter", vcenter_credential_patches("vc.example.test", "", ""))):
        scripts[f"patch-cluster-{role}.sh"] = render_patch_script(run.oc, patches)
    scripts["hosts-baremetal.sh"] = render_baremetal_script(
        3, "dscp", 9000, lossless=True, interfaces=["enp5s0", "enp132s0"], switches=["sw1", "sw2"])
    scripts["hosts-baremetal-no-interfaces.sh"] = render_baremetal_script(
        4, "pcp", 9100, lossless=False, interfaces=[], switches=["sw1"])
    scripts["check-host-key.sh"] = render_host_key_check(
        "127.0.10.2", 2222, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC8wDKIPxTD+BPx9yKrkMAGoDRrmSxLth9xr0wbOTtcO",
        setting="openshift.helper.hostKey's \"$value\"" if awkward else "openshift.helper.hostKey")
    sw = switch_plan(SwitchConfig.model_validate(CUMULUS), None)
    # Cumulus scripts run under the switch user's bash; they carry no shebang of their own.
    scripts["cumulus-apply.bash"] = render_apply(sw)
    scripts["cumulus-login-check.bash"] = render_login_check(sw)
    for item in undo_items(sw):
        scripts[f"cumulus-undo-{item.key}.bash"] = render_undo(sw, item)
    return scripts
