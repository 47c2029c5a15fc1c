"""The helper node's steps: install or remove its DNS, load balancer and PXE files, the httpd access
rule, and publish or withdraw each ignition file; the files come on stdin (file_bundle).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from components import shell_templates
from components.openshift.files.common import render_script
from components.openshift.files.dnsmasq import render_dnsmasq_conf, render_hosts
from components.openshift.files.haproxy import render_haproxy_cfg
from components.openshift.files.pxe import (
    pxe_nodes,
    pxelinux_mac_name,
    render_grub_cfg,
    render_pxelinux_default,
    render_pxelinux_node,
)
from components.openshift.plan import ClusterPlan

# What the PXE menus point UEFI and BIOS clients to; they must be in the TFTP root.
BOOT_LOADERS = ("pxelinux.0", "grubx64.efi")
# Every rendered haproxy.cfg says so on its first line; the lb step keeps a distribution's file aside.
RENDERED_MARKER = "rendered by gpu-lab"
HELPER_ACTIONS = ("install", "remove")


def _helper_script(plan: ClusterPlan, name: str, action: str, values: dict[str, shell_templates.Value]) -> str:
    """A script that runs on the helper node, through sudo unless it logs in as root."""
    if action not in HELPER_ACTIONS:
        raise ValueError(f"action {action!r}: one of {HELPER_ACTIONS}")
    helper = plan.helper
    return render_script(name, {
        "ACTION": action,
        "USE_SUDO": "no" if helper.user == "root" else "yes",
        "STAGING_DIR": helper.paths.staging,
        **values,
    })


def helper_files(plan: ClusterPlan) -> dict[str, dict[str, str]]:
    """Step -> {path: text} of the plain (non-secret) files each helper step installs."""
    steps = {
        "dns": {"dnsmasq.conf": render_dnsmasq_conf(plan), "hosts.dnsmasq": render_hosts(plan)},
        "lb": {"haproxy.cfg": render_haproxy_cfg(plan)},
    }
    if plan.pxe_wanted:
        pxe = {"pxelinux.cfg/default": render_pxelinux_default(plan), "grub.cfg": render_grub_cfg(plan)}
        for node in pxe_nodes(plan):
            pxe[f"pxelinux.cfg/{pxelinux_mac_name(node.planned_mac)}"] = render_pxelinux_node(plan, node)
        steps["pxe"] = pxe
    return steps


def render_helper_step(plan: ClusterPlan, step: str, action: str) -> str:
    """The install (files on stdin: file_bundle) or remove script of one helper step."""
    paths = plan.helper.paths
    if step == "dns":
        return _helper_script(plan, "helper-dns.sh", action, {
            "HOSTS_FILE": paths.hosts_file, "DNSMASQ_CONF": paths.dnsmasq_conf})
    if step == "lb":
        return _helper_script(plan, "helper-lb.sh", action, {
            "HAPROXY_CFG": paths.haproxy_cfg, "MARKER": RENDERED_MARKER})
    if step == "pxe":
        rhcos = plan.rhcos
        local_images = [loc for loc in (rhcos.kernel, rhcos.initramfs, rhcos.rootfs)
                        if not urlsplit(loc).scheme]
        installing = action == "install"
        return _helper_script(plan, "helper-pxe.sh", action, {
            "TFTP_ROOT": paths.tftp_root,
            # remove reads the list the last install left, so its text does not change with the nodes
            "REQUIRED_FILES": [f"{paths.tftp_root}/{loader}" for loader in BOOT_LOADERS]
                              + [f"{paths.http_root}/{image}" for image in local_images] if installing else [],
            "MENU_FILES": list(helper_files(plan)["pxe"]) if installing else [],
        })
    raise ValueError(f"no helper step {step!r}; steps: dns, lb, pxe")


def render_httpd_access_step(plan: ClusterPlan, action: str) -> str:
    """Install (the drop-in on stdin: file_bundle) or remove the httpd rule that serves each ignition
    file only to its role's nodes (components/openshift/files/httpd.py)."""
    return _helper_script(plan, "helper-httpd.sh", action, {"DROP_IN": plan.helper.paths.httpd_drop_in})


def ignition_files(plan: ClusterPlan) -> dict[str, str]:
    """Installer output key -> file name on the helper's HTTP server (bootstrap.ign only while bootstrapping)."""
    files = {"master": "master.ign", "worker": "worker.ign"}
    if plan.bootstrap_node is not None:
        files = {"bootstrap": "bootstrap.ign", **files}
    return files


def render_ignition_publish(plan: ClusterPlan, file_name: str, action: str) -> str:
    """Publish (the file on stdin) or withdraw one ignition file on the helper's HTTP server."""
    helper = plan.helper
    return _helper_script(plan, "helper-ignition.sh", action, {
        "HTTP_ROOT": helper.paths.http_root,
        "FILE_NAME": file_name,
        "WEB_GROUP": helper.http_group,
    })
