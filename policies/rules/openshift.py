"""OpenShift UPI rules: control-plane count and the API / ingress load balancer."""

from __future__ import annotations

from pulumi_policy import PolicyConfigSchema

from labrules.openshift import (
    API_PORT,
    CONTROL_PLANE_NODES,
    HTTP_PORT,
    HTTPS_PORT,
    LOAD_BALANCER_PORTS,
    MACHINE_CONFIG_PORT,
)

from .declare import ADVISORY, MANDATORY, resource_policy, stack_policy
from .props import (
    OPENSHIFT,
    UNKNOWN,
    as_dict,
    as_int,
    as_list,
    dig,
    known,
    lab_vm_entries,
    name_of,
    of_type,
    props_of,
    reveal,
    settings,
    stack_resources,
    truthy,
)

# ---------------------------------------------------------------- three control-plane nodes

CONTROL_PLANE_SCHEMA = PolicyConfigSchema(properties={
    "controlPlaneCount": {
        "type": "integer", "minimum": 1, "default": CONTROL_PLANE_NODES,
        "description": "control-plane nodes an OpenShift cluster must have (single-node clusters are exempt)",
    },
})


def check_three_control_plane(args, report_violation) -> None:
    """An OpenShift cluster has three control-plane nodes unless it is a single-node cluster. NVIDIA/Red Hat
    OpenShift GPU guide: the minimal cluster has three masters, which keeps etcd highly
    available (no split brain) and lets masters upgrade one at a time."""
    if args.resource_type != OPENSHIFT:
        return
    p = props_of(args)
    if truthy(p.get("singleNode")):
        return
    want = int(settings(args, CONTROL_PLANE_SCHEMA)["controlPlaneCount"])
    have = as_int(p.get("controlPlaneCount"))
    if have is UNKNOWN or have is None:
        return
    if have != want:
        report_violation(
            f"cluster {name_of(p, args.name, 'clusterName')!r} has {have} control-plane node(s); "
            f"OpenShift needs {want} for etcd quorum and uninterrupted upgrades (or singleNode: true)"
        )


three_control_plane = resource_policy("openshift-three-control-plane-nodes", MANDATORY,
                                      check_three_control_plane, CONTROL_PLANE_SCHEMA, types=(OPENSHIFT,))


# ---------------------------------------------------------------- load balancer ports

LB_SCHEMA = PolicyConfigSchema(properties={
    "requiredPorts": {
        "type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 65535},
        "default": list(LOAD_BALANCER_PORTS),
        "description": "ports the load balancer must serve: API, machine config, HTTP and HTTPS ingress",
    },
})


def check_lb_ports(args, report_violation) -> None:
    """The cluster load balancer serves {api} (API), {mcs} (machine config), {http} and {https} (ingress), each with
    backend nodes. NVIDIA/Red Hat OpenShift GPU guide: its HAProxy fronts these four ports;
    without any one of them nodes cannot join or applications cannot be reached."""
    if args.resource_type != OPENSHIFT:
        return
    p = props_of(args)
    lb = reveal(p.get("loadBalancer"))
    if lb is UNKNOWN:
        return
    frontends = reveal(dig(lb, "frontends"))
    backends = reveal(dig(lb, "backends"))
    required = [int(x) for x in settings(args, LB_SCHEMA)["requiredPorts"]]
    if isinstance(frontends, list) and all(known(f) for f in frontends):
        have = {as_int(f) for f in frontends}
        missing = [port for port in required if port not in have]
        if missing:
            report_violation(
                f"the load balancer does not serve port(s) {missing}; it must serve {required} "
                f"(API {API_PORT}, machine config {MACHINE_CONFIG_PORT}, ingress {HTTP_PORT}/{HTTPS_PORT})"
            )
    if isinstance(backends, dict):
        for port in required:
            pool = reveal(backends.get(str(port)))
            if pool is UNKNOWN or (isinstance(pool, list) and any(not known(n) for n in pool)):
                continue
            if port in _as_ports(frontends) and not pool:
                report_violation(f"the load balancer serves port {port} but has no backend nodes for it")


def _as_ports(frontends) -> set:
    return {as_int(f) for f in as_list(frontends)}


# The description names labrules' ports: a docstring cannot be an f-string (under -OO, no docstring stays
# none, and declare refuses the rule as before).
check_lb_ports.__doc__ = (check_lb_ports.__doc__ or "").format(
    api=API_PORT, mcs=MACHINE_CONFIG_PORT, http=HTTP_PORT, https=HTTPS_PORT) or None
lb_ports = resource_policy("openshift-lb-required-ports", MANDATORY, check_lb_ports, LB_SCHEMA, types=(OPENSHIFT,))


# ---------------------------------------------------------------- bootstrap out of the pools


def check_lb_no_bootstrap(args, report_violation) -> None:
    """Once the cluster is installed (bootstrap off), the bootstrap node is no longer a load-balancer backend.
    NVIDIA/Red Hat OpenShift GPU guide: the bootstrap node is removed when bootstrapping
    completes; a stale backend sends API and ignition requests to a dead node."""
    resources = stack_resources(args)
    bootstrap_names = {"bootstrap"}
    for _, vm in lab_vm_entries(resources):
        if dig(vm, "role") == "bootstrap" and known(dig(vm, "name")):
            bootstrap_names.add(dig(vm, "name"))
    for cluster in of_type(resources, OPENSHIFT):
        bootstrap = cluster.get("bootstrap")
        if not known(bootstrap) or truthy(bootstrap):
            continue
        names = set(bootstrap_names)
        if known(cluster.get("bootstrapNode")) and cluster.get("bootstrapNode"):
            names.add(cluster.get("bootstrapNode"))
        for port, pool in sorted(as_dict(cluster.get("loadBalancer.backends")).items()):
            for node in as_list(pool):
                if known(node) and (node in names or str(node).split(".")[0] in names):
                    report_violation(
                        f"bootstrap is off but node {node!r} is still a backend of port {port}; remove it from "
                        "the load balancer",
                        cluster.urn,
                    )


lb_no_bootstrap = stack_policy("openshift-lb-no-bootstrap-after-install", ADVISORY, check_lb_no_bootstrap)


POLICIES = [three_control_plane, lb_ports, lb_no_bootstrap]
