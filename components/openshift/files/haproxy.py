"""The helper's load balancer: haproxy.cfg, and the frontends and backends the component declares."""

from __future__ import annotations

from components.openshift.plan import ClusterNode, ClusterPlan
from labrules.openshift import API_PORT, HTTP_PORT, HTTPS_PORT, LOAD_BALANCER_PORTS, MACHINE_CONFIG_PORT

MCS_PORT = MACHINE_CONFIG_PORT
FRONTENDS = LOAD_BALANCER_PORTS


def backends(plan: ClusterPlan) -> dict[int, list[ClusterNode]]:
    """Frontend port -> the nodes behind it."""
    control = plan.of_role("control-plane")
    bootstrap = plan.of_role("bootstrap")
    return {
        API_PORT: bootstrap + control,
        MCS_PORT: bootstrap + control,
        HTTP_PORT: plan.ingress,
        HTTPS_PORT: plan.ingress,
    }


def load_balancer_intent(plan: ClusterPlan) -> dict:
    """The contract's `loadBalancer` property: {frontends: [port], backends: {port: [names]}}."""
    return {
        "frontends": list(FRONTENDS),
        "backends": {str(port): [n.name for n in nodes] for port, nodes in backends(plan).items()},
    }


_LISTENS = (
    # name, port, extra lines, server check options
    ("api-server", API_PORT,
     ("option httpchk", "http-check send meth GET uri /readyz", "http-check expect status 200"),
     "check check-ssl verify none"),
    ("machine-config-server", MCS_PORT, (), "check"),
    ("ingress-http", HTTP_PORT, (), "check"),
    ("ingress-https", HTTPS_PORT, (), "check"),
)


def render_haproxy_cfg(plan: ClusterPlan) -> str:
    """haproxy.cfg: TCP pass-through to addresses (no DNS needed to start or to check it)."""
    lb = plan.lb_address
    members = backends(plan)
    out = [
        f"# HAProxy for OpenShift cluster {plan.domain} (rendered by gpu-lab; edits on the host are overwritten)",
        "global",
        "    log /dev/log local0 info",
        "    maxconn 4000",
        "    user haproxy",
        "    group haproxy",
        "",
        "defaults",
        "    mode tcp",
        "    log global",
        "    option tcplog",
        "    option dontlognull",
        "    retries 3",
        "    timeout connect 10s",
        # API watches are long-lived; clients reconnect after this.
        "    timeout client 1h",
        "    timeout server 1h",
        "    timeout check 5s",
        "    default-server inter 2s fall 2 rise 2",
    ]
    for name, port, extra, check in _LISTENS:
        out += ["", f"listen {name}", f"    bind {lb}:{port}", "    mode tcp", "    balance roundrobin"]
        out += [f"    {line}" for line in extra]
        nodes = members[port]
        if not nodes:
            out.append("    # no node in this role yet")
        out += [f"    server {n.name} {n.address}:{port} {check}" for n in nodes]
    return "\n".join(out) + "\n"
