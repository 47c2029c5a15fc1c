"""Files of the openshift section for review (`make render`): secrets shown as <redacted>."""

from __future__ import annotations

from pathlib import PurePosixPath

from components.openshift.files.dnsmasq import render_dnsmasq_conf, render_hosts
from components.openshift.files.haproxy import render_haproxy_cfg
from components.openshift.files.httpd import render_ignition_access
from components.openshift.files.ignition import render_pointer_ignition
from components.openshift.files.install_config import REDACTED, render_install_config
from components.openshift.files.pxe import (
    pxe_nodes,
    pxelinux_mac_name,
    render_grub_cfg,
    render_pxelinux_default,
    render_pxelinux_node,
)
from components.openshift.plan import IGNITION_NAME, ROLES, ClusterPlan


def render_files(p: ClusterPlan) -> dict[str, str]:
    """Paths under the render directory -> contents."""
    files = {
        "openshift/install-config.yaml": render_install_config(p, REDACTED, REDACTED, REDACTED),
        "openshift/dnsmasq.conf": render_dnsmasq_conf(p),
        "openshift/hosts.dnsmasq": render_hosts(p),
        "openshift/haproxy.cfg": render_haproxy_cfg(p),
        f"openshift/httpd/{PurePosixPath(p.helper.paths.httpd_drop_in).name}": render_ignition_access(p),
        "openshift/pxe/pxelinux.cfg/default": render_pxelinux_default(p),
        "openshift/pxe/grub.cfg": render_grub_cfg(p),
    }
    for node in pxe_nodes(p):
        files[f"openshift/pxe/pxelinux.cfg/{pxelinux_mac_name(node.planned_mac)}"] = render_pxelinux_node(p, node)
    for role in ROLES:
        files[f"openshift/ignition/{IGNITION_NAME[role]}.ign"] = render_pointer_ignition(p, role)
    return files
