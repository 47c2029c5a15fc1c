"""The helper's DNS (and optional DHCP): dnsmasq's configuration and its hosts file."""

from __future__ import annotations

import ipaddress

from components.openshift.plan import ClusterPlan


def _reverse(address: str) -> str:
    return ipaddress.IPv4Address(address).reverse_pointer


def render_hosts(plan: ClusterPlan) -> str:
    """hosts.dnsmasq: each node's own name first (OpenShift reads it), then FQDN and aliases."""
    d = plan.domain
    lines = [f"# hosts of OpenShift cluster {d} (rendered by gpu-lab)", "# nodes: node name first, then its FQDN"]
    etcd = {n.name: i for i, n in enumerate(plan.of_role("control-plane"))}
    for node in plan.nodes:
        names = [node.name, f"{node.name}.{d}"]
        if node.name in etcd:
            names.append(f"etcd-{etcd[node.name]}.{d}")
        lines.append(f"{node.address:<15} {' '.join(names)}")
    lines += ["# load balancer: the API for clients and for the cluster itself",
              f"{plan.lb_address:<15} api.{d} api-int.{d}"]
    return "\n".join(lines) + "\n"


def render_dnsmasq_conf(plan: ClusterPlan) -> str:
    """dnsmasq configuration: cluster records, optional DHCP reservations, PXE boot files."""
    d = plan.domain
    helper = plan.helper
    out = [
        f"# dnsmasq for OpenShift cluster {d} (rendered by gpu-lab; edits on the host are overwritten)",
        "domain-needed",
        "bogus-priv",
    ]
    if helper.dns_upstreams:
        out.append("no-resolv")
        out += [f"server={s}" for s in helper.dns_upstreams]
    out += [
        "",
        "# the cluster's names are answered here only, never forwarded",
        f"local=/{d}/",
        f"addn-hosts={helper.paths.hosts_file}",
        "",
        "# every *.apps name goes to the load balancer (the ingress routers sit behind it)",
        f"address=/apps.{d}/{plan.lb_address}",
        "",
        "# reverse records: RHCOS takes its host name from them",
    ]
    out += [f"ptr-record={_reverse(n.planned_address)},{n.name}.{d}" for n in plan.nodes]
    out += ["", "# etcd SRV records as in the guide (current releases ignore them)"]
    out += [
        f"srv-host=_etcd-server-ssl._tcp.{d},etcd-{i}.{d},2380,0,10"
        for i, _ in enumerate(plan.of_role("control-plane"))
    ]
    if plan.dhcp.enabled:
        out += ["", "# DHCP: reservations only, no dynamic pool"]
        for i, cidr in enumerate(plan.networks.machine_networks):
            net = ipaddress.IPv4Network(cidr)
            out.append(f"dhcp-range=set:machine{i},{net.network_address},static,{net.netmask},{plan.dhcp.lease_time}")
            gateway = plan.gateway
            if gateway and ipaddress.IPv4Address(gateway) in net:
                out.append(f"dhcp-option=tag:machine{i},option:router,{gateway}")
        out.append(f"dhcp-option=option:dns-server,{helper.address}")
        out.append(f"dhcp-option=option:domain-name,{d}")
        out += [f"dhcp-host={n.mac},{n.address},{n.name},{plan.dhcp.lease_time}" for n in plan.nodes if n.mac]
    if plan.pxe_wanted:
        out += [
            "",
            "# PXE: UEFI clients (client-arch 7 and 9, e.g. DGX) get GRUB, BIOS clients pxelinux",
            "enable-tftp",
            f"tftp-root={helper.paths.tftp_root}",
            "dhcp-match=set:efi-x86_64,option:client-arch,7",
            "dhcp-match=set:efi-x86_64,option:client-arch,9",
            "dhcp-boot=tag:efi-x86_64,grubx64.efi",
            "dhcp-boot=tag:!efi-x86_64,pxelinux.0",
        ]
    return "\n".join(out) + "\n"
