"""What a node boots from: the pointer ignition that merges the full file from the helper, and a
vSphere VM's guestinfo (ignition and static network kernel arguments).
"""

from __future__ import annotations

import base64
import ipaddress
import json

from components.openshift.plan import ClusterNode, ClusterPlan

IGNITION_SPEC = "3.2.0"


def render_pointer_ignition(plan: ClusterPlan, role: str) -> str:
    """A small ignition config that merges the full one from the helper's HTTP server."""
    doc = {"ignition": {"version": IGNITION_SPEC, "config": {"merge": [{"source": plan.ignition_url(role)}]}}}
    return json.dumps(doc, indent=2) + "\n"


def network_kargs(plan: ClusterPlan, node: ClusterNode) -> str:
    """Static dracut ip= arguments for a vSphere node (management, and RDMA when it has one)."""
    net = plan.machine_network_of(node.planned_address)
    netmask = net.netmask if net else "255.255.255.0"
    gateway = plan.gateway or ""
    args = [f"ip={node.address}::{gateway}:{netmask}:{node.name}.{plan.domain}:{plan.interfaces.management}:none"]
    if node.rdma_address and plan.rdma_cidr:
        rdma = ipaddress.IPv4Network(plan.rdma_cidr)
        mtu = f":{plan.rdma_mtu}" if plan.rdma_mtu else ""
        args.append(f"ip={node.rdma_address}:::{rdma.netmask}::{plan.interfaces.rdma}:none{mtu}")
    args.append(f"nameserver={plan.helper.address}")
    return " ".join(args)


def vm_extra_config(ignition: str, kargs: str) -> dict[str, str]:
    """The VM advanced settings RHCOS reads on vSphere (afterburn and ignition guestinfo)."""
    return {
        "guestinfo.ignition.config.data": base64.b64encode(ignition.encode()).decode(),
        "guestinfo.ignition.config.data.encoding": "base64",
        "guestinfo.afterburn.initrd.network-kargs": kargs,
    }
