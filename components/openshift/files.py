"""Pure text renderers: everything that lands on the helper node or a node's boot path.

Each takes a `ClusterPlan` (and, where needed, secret values as plain strings inside an
`apply`) and returns text. Nothing here touches Pulumi, the network or the file system.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import yaml

from components import shell_templates
from components.openshift.config import IGNITION_NAME, ClusterNode, ClusterPlan
from labrules.openshift import API_PORT, HTTP_PORT, HTTPS_PORT, LOAD_BALANCER_PORTS, MACHINE_CONFIG_PORT

REDACTED = "<redacted>"
IGNITION_SPEC = "3.2.0"

MCS_PORT = MACHINE_CONFIG_PORT
FRONTENDS = LOAD_BALANCER_PORTS

PXE_ROLES = ("bootstrap", "control-plane", "worker")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------- install-config.yaml


def control_plane_replicas(plan: ClusterPlan) -> int:
    """Every control-plane node, VM or bare metal: openshift-install sizes etcd from this
    (one etcd endpoint per replica, openshift/installer pkg/asset/ignition/bootstrap/common.go)."""
    return len(plan.of_role("control-plane"))


COMPUTE_REPLICAS = 0
"""install-config's compute replicas, always 0, as in Red Hat's sample install-config for
user-provisioned infrastructure: the workers are ours (VMs and bare metal), not a MachineSet's.

So the worker count is not part of what the installer sees, and adding or removing a worker
never touches the install. openshift-install creates no machines from it on platform none
(pkg/asset/machines/worker.go) and would create a MachineSet of that many extra VMs on platform
vsphere; with 0 it derives the infrastructure topology from the control plane
(pkg/asset/manifests/topologies.go, determineTopologies: 3 control-plane replicas give
HighlyAvailable) and makes the control plane schedulable (pkg/asset/manifests/scheduler.go),
which masters_schedulable() takes back for clusters with workers.
"""


def masters_schedulable(plan: ClusterPlan) -> bool:
    """Whether workloads may run on the control plane: only in a cluster installed without workers.

    With compute replicas 0 the installer writes `mastersSchedulable: true` into
    manifests/cluster-scheduler-02-config.yml (openshift/installer pkg/asset/manifests/scheduler.go);
    the UPI procedure sets it back to false between `create manifests` and `create
    ignition-configs` when compute nodes will join (openshift/installer docs/user/openstack/install_upi.md,
    "Make control plane nodes unschedulable"). A compact or single-node cluster keeps it true.
    """
    return not plan.of_role("worker")


def render_install_config(
    plan: ClusterPlan, pull_secret: str, ssh_key: str, vcenter_password: str | None = None
) -> str:
    """install-config.yaml for `openshift-install create ignition-configs` (UPI)."""
    oc = plan.config
    nets = oc.networks
    doc: dict = {
        "apiVersion": "v1",
        "baseDomain": oc.base_domain,
        "metadata": {"name": oc.cluster_name},
        "compute": [{"name": "worker", "hyperthreading": "Enabled", "replicas": COMPUTE_REPLICAS}],
        "controlPlane": {"name": "master", "hyperthreading": "Enabled", "replicas": control_plane_replicas(plan)},
        "networking": {
            "networkType": oc.network_type,
            "clusterNetwork": [{"cidr": nets.cluster_network.cidr, "hostPrefix": nets.cluster_network.host_prefix}],
            "serviceNetwork": [nets.service_network],
            "machineNetwork": [{"cidr": c} for c in nets.machine_network],
        },
        "platform": {"none": {}},
        "pullSecret": pull_secret,
        "sshKey": ssh_key,
    }
    if oc.platform == "vsphere" and oc.vcenter is not None:
        doc["platform"] = {"vsphere": _vsphere_platform(plan, vcenter_password or REDACTED)}
    if oc.single_node:
        control_plane = next(n for n in plan.nodes if n.role == "control-plane")
        doc["bootstrapInPlace"] = {"installationDisk": control_plane.install_device}
    return yaml.safe_dump(doc, sort_keys=False, width=1000)


def _vsphere_platform(plan: ClusterPlan, password: str) -> dict:
    oc = plan.config
    vc = oc.vcenter
    server = vc.server if vc else ""  # the rules require vcenter with platform vsphere
    # The rules guarantee a vsphere section when platform is vsphere; this function stays total.
    vs = plan.vsphere
    dc = vs.datacenter if vs else ""
    topology = {
        "datacenter": dc,
        "computeCluster": f"/{dc}/host/{vs.cluster}" if vs else "",
        "datastore": f"/{dc}/datastore/{vs.datastore}" if vs else "",
        "networks": [vs.vm_port_group] if vs else [],
    }
    if vs and vs.folder:
        topology["folder"] = f"/{dc}/vm/{vs.folder}"
    return {
        "vcenters": [{"server": server, "user": vc.user if vc else "", "password": password, "datacenters": [dc]}],
        "failureDomains": [{"name": "lab", "region": "lab", "zone": "lab", "server": server, "topology": topology}],
    }


# ---------------------------------------------------------------- DNS: dnsmasq


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
    oc = plan.config
    d = plan.domain
    helper = oc.helper
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
    if oc.dhcp.enabled:
        out += ["", "# DHCP: reservations only, no dynamic pool"]
        for i, cidr in enumerate(oc.networks.machine_network):
            net = ipaddress.IPv4Network(cidr)
            out.append(f"dhcp-range=set:machine{i},{net.network_address},static,{net.netmask},{oc.dhcp.lease_time}")
            gateway = plan.gateway
            if gateway and ipaddress.IPv4Address(gateway) in net:
                out.append(f"dhcp-option=tag:machine{i},option:router,{gateway}")
        out.append(f"dhcp-option=option:dns-server,{helper.address}")
        out.append(f"dhcp-option=option:domain-name,{d}")
        out += [f"dhcp-host={n.mac},{n.address},{n.name},{oc.dhcp.lease_time}" for n in plan.nodes if n.mac]
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


# ---------------------------------------------------------------- HAProxy


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


# ---------------------------------------------------------------- PXE


def _kernel_args(plan: ClusterPlan, role: str, install_device: str) -> str:
    oc = plan.config
    args = [
        "ip=dhcp",
        "rd.neednet=1",
        f"coreos.inst.install_dev={install_device}",
        f"coreos.live.rootfs_url={plan.image_url(oc.rhcos.rootfs)}",
        f"coreos.inst.ignition_url={plan.ignition_url(role)}",
    ]
    return " ".join(args + list(oc.kernel_args))


def _pxe_label(role: str) -> str:
    return IGNITION_NAME[role]


def _role_device(plan: ClusterPlan, role: str) -> str:
    """The install device every node of the role shares, else the cluster default."""
    devices = {n.install_device for n in plan.of_role(role)}
    return devices.pop() if len(devices) == 1 else plan.config.install_device


def _pxelinux_entry(plan: ClusterPlan, label: str, role: str, install_device: str) -> list[str]:
    oc = plan.config
    return [
        f"LABEL {label}",
        f"    MENU LABEL Install RHCOS: {label}",
        f"    KERNEL {plan.image_url(oc.rhcos.kernel)}",
        f"    APPEND initrd={plan.image_url(oc.rhcos.initramfs)} {_kernel_args(plan, role, install_device)}",
    ]


def render_pxelinux_default(plan: ClusterPlan) -> str:
    """pxelinux.cfg/default (BIOS): one entry per role; unknown machines boot their disk."""
    out = [
        f"# PXE menu (BIOS) for OpenShift cluster {plan.domain} (rendered by gpu-lab)",
        "# Machines with a configured MAC get pxelinux.cfg/01-<mac> and install unattended.",
        "DEFAULT local",
        "PROMPT 1",
        "TIMEOUT 100",
        "",
        "LABEL local",
        "    MENU LABEL Boot from local disk",
        "    LOCALBOOT 0",
    ]
    for role in PXE_ROLES:
        out += [""] + _pxelinux_entry(plan, _pxe_label(role), role, _role_device(plan, role))
    return "\n".join(out) + "\n"


def pxelinux_mac_name(mac: str) -> str:
    """pxelinux's per-machine file name: 01 (Ethernet) and the MAC with dashes."""
    return "01-" + mac.lower().replace(":", "-")


def pxe_nodes(plan: ClusterPlan) -> list[ClusterNode]:
    """Bare-metal nodes that PXE picks out by MAC."""
    return [n for n in plan.nodes if n.platform == "baremetal" and n.mac]


def render_pxelinux_node(plan: ClusterPlan, node: ClusterNode) -> str:
    """pxelinux.cfg/01-<mac>: this node installs its role without a prompt."""
    out = [f"# {node.name} ({node.role}) of OpenShift cluster {plan.domain} (rendered by gpu-lab)",
           f"DEFAULT {node.name}", "PROMPT 0", "TIMEOUT 0", ""]
    out += _pxelinux_entry(plan, node.name, node.role, node.install_device)
    return "\n".join(out) + "\n"


def _grub_path(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or 80
    return f"(http,{parts.hostname}:{port}){parts.path}"


def _grub_entry(plan: ClusterPlan, entry_id: str, title: str, role: str, install_device: str) -> list[str]:
    oc = plan.config
    return [
        f"menuentry '{title}' --id {entry_id} {{",
        f"    linux {_grub_path(plan.image_url(oc.rhcos.kernel))} {_kernel_args(plan, role, install_device)}",
        f"    initrd {_grub_path(plan.image_url(oc.rhcos.initramfs))}",
        "}",
    ]


def render_grub_cfg(plan: ClusterPlan) -> str:
    """grub.cfg (UEFI, e.g. DGX): one entry per role, configured MACs install unattended."""
    out = [
        f"# PXE menu (UEFI) for OpenShift cluster {plan.domain} (rendered by gpu-lab)",
        "set timeout=10",
        "set default=local",
    ]
    for node in pxe_nodes(plan):
        out += [f'if [ "${{net_default_mac}}" = "{node.mac}" ]; then', f"    set default={node.name}",
                "    set timeout=0", "fi"]
    out += ["", "menuentry 'Boot from local disk' --id local {", "    exit", "}"]
    for role in PXE_ROLES:
        label = _pxe_label(role)
        out += [""] + _grub_entry(plan, label, f"Install RHCOS: {label}", role, _role_device(plan, role))
    for node in pxe_nodes(plan):
        out += [""] + _grub_entry(plan, node.name, f"Install RHCOS: {node.name} ({node.role})", node.role,
                                  node.install_device)
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- ignition


def render_pointer_ignition(plan: ClusterPlan, role: str) -> str:
    """A small ignition config that merges the full one from the helper's HTTP server."""
    doc = {"ignition": {"version": IGNITION_SPEC, "config": {"merge": [{"source": plan.ignition_url(role)}]}}}
    return json.dumps(doc, indent=2) + "\n"


def network_kargs(plan: ClusterPlan, node: ClusterNode) -> str:
    """Static dracut ip= arguments for a vSphere node (management, and RDMA when it has one)."""
    oc = plan.config
    net = plan.machine_network_of(node.planned_address)
    netmask = net.netmask if net else "255.255.255.0"
    gateway = plan.gateway or ""
    args = [f"ip={node.address}::{gateway}:{netmask}:{node.name}.{plan.domain}:{oc.interfaces.management}:none"]
    if node.rdma_address and plan.rdma_cidr:
        rdma = ipaddress.IPv4Network(plan.rdma_cidr)
        mtu = f":{plan.rdma_mtu}" if plan.rdma_mtu else ""
        args.append(f"ip={node.rdma_address}:::{rdma.netmask}::{oc.interfaces.rdma}:none{mtu}")
    args.append(f"nameserver={oc.helper.address}")
    return " ".join(args)


def vm_extra_config(ignition: str, kargs: str) -> dict[str, str]:
    """The VM advanced settings RHCOS reads on vSphere (afterburn and ignition guestinfo)."""
    return {
        "guestinfo.ignition.config.data": base64.b64encode(ignition.encode()).decode(),
        "guestinfo.ignition.config.data.encoding": "base64",
        "guestinfo.afterburn.initrd.network-kargs": kargs,
    }


# ---------------------------------------------------------------- lifecycle scripts


def _script(name: str, values: dict[str, shell_templates.Value]) -> str:
    """components/openshift/scripts/<name> with its values written in front of its body."""
    return shell_templates.render("components.openshift", name, values)


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
    return _script("create-ignition.sh", {
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


def file_bundle(files: Mapping[str, str]) -> str:
    """Files as the helper and lifecycle scripts read them on stdin: one "<path> <base64>" line each."""
    for path in files:
        if not path or path.startswith("/") or ".." in path or any(c.isspace() for c in path):
            raise ValueError(f"{path!r} is not a relative path without blanks")
    return "".join(f"{path} {base64.b64encode(text.encode()).decode()}\n" for path, text in files.items())


def install_dir_bundle(generated: Mapping[str, str], single_node: bool = False) -> str:
    """The kept install assets, by their path under the install dir, for the scripts that put it back."""
    return file_bundle({path: generated[key] for key, path in install_assets(single_node).items() if key in generated})


def render_wait_script(install_dir: str, installer: str, stage: str) -> str:
    """`openshift-install wait-for <stage>`, the install dir put back from stdin where it is missing."""
    return _script("wait-for.sh", {"INSTALL_DIR": install_dir, "INSTALLER": installer, "WAIT_STAGE": stage})


CSR_TIMEOUT_S = 3600
CSR_INTERVAL_S = 20
DRAIN_TIMEOUT_S = 900


def _node_names(plan: ClusterPlan, names: Sequence[str]) -> list[str]:
    return [*names, *(f"{n}.{plan.domain}" for n in names)]


def render_csr_script(
    plan: ClusterPlan, oc_bin: str, names: Sequence[str],
    timeout_s: int = CSR_TIMEOUT_S, interval_s: int = CSR_INTERVAL_S,
) -> str:
    """Approve pending CSRs of the named nodes only, until every one of them has joined
    (the admin kubeconfig on stdin)."""
    return _script("approve-csrs.sh", {
        "OC": oc_bin,
        "ALLOWED_NODES": " ".join(_node_names(plan, names)),
        "WANTED_NODES": " ".join(names),
        "CLUSTER_DOMAIN": plan.domain,
        "TIMEOUT_S": int(timeout_s),
        "INTERVAL_S": int(interval_s),
    })


def render_remove_node_script(plan: ClusterPlan, oc_bin: str, name: str,
                              drain_timeout_s: int = DRAIN_TIMEOUT_S) -> str:
    """Cordon, drain and delete a node that leaves the lab, when the cluster answers (kubeconfig on stdin)."""
    return _script("remove-node.sh", {
        "OC": oc_bin,
        "NODE_NAMES": " ".join(_node_names(plan, [name])),
        "DRAIN_TIMEOUT_S": int(drain_timeout_s),
    })


# ---------------------------------------------------------------- credentials of a running cluster


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
    return _script("patch-cluster.sh", {
        "OC": oc_bin,
        "PATCHES": [f"{p.resource} {p.namespace or '-'} {p.file}" for p in patches],
    })


def patch_bundle(kubeconfig: str, patches: Sequence[ClusterPatch]) -> str:
    """stdin of render_patch_script: the kubeconfig and each patch body."""
    return file_bundle({"kubeconfig": kubeconfig,
                        **{p.file: json.dumps(p.body, sort_keys=True) for p in patches}})


# ---------------------------------------------------------------- helper-node steps


# What the PXE menus point UEFI and BIOS clients to; they must be in the TFTP root.
BOOT_LOADERS = ("pxelinux.0", "grubx64.efi")
# Every rendered haproxy.cfg says so on its first line; the lb step keeps a distribution's file aside.
RENDERED_MARKER = "rendered by gpu-lab"
HELPER_ACTIONS = ("install", "remove")


def _helper_script(plan: ClusterPlan, name: str, action: str, values: dict[str, shell_templates.Value]) -> str:
    """A script that runs on the helper node, through sudo unless it logs in as root."""
    if action not in HELPER_ACTIONS:
        raise ValueError(f"action {action!r}: one of {HELPER_ACTIONS}")
    helper = plan.config.helper
    return _script(name, {
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
    paths = plan.config.helper.paths
    if step == "dns":
        return _helper_script(plan, "helper-dns.sh", action, {
            "HOSTS_FILE": paths.hosts_file, "DNSMASQ_CONF": paths.dnsmasq_conf})
    if step == "lb":
        return _helper_script(plan, "helper-lb.sh", action, {
            "HAPROXY_CFG": paths.haproxy_cfg, "MARKER": RENDERED_MARKER})
    if step == "pxe":
        oc = plan.config
        local_images = [loc for loc in (oc.rhcos.kernel, oc.rhcos.initramfs, oc.rhcos.rootfs)
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
    file only to its role's nodes (components/openshift/httpd.py)."""
    return _helper_script(plan, "helper-httpd.sh", action, {"DROP_IN": plan.config.helper.paths.httpd_drop_in})


def ignition_files(plan: ClusterPlan) -> dict[str, str]:
    """Installer output key -> file name on the helper's HTTP server (bootstrap.ign only while bootstrapping)."""
    files = {"master": "master.ign", "worker": "worker.ign"}
    if plan.bootstrap_node is not None:
        files = {"bootstrap": "bootstrap.ign", **files}
    return files


def render_ignition_publish(plan: ClusterPlan, file_name: str, action: str) -> str:
    """Publish (the file on stdin) or withdraw one ignition file on the helper's HTTP server."""
    helper = plan.config.helper
    return _helper_script(plan, "helper-ignition.sh", action, {
        "HTTP_ROOT": helper.paths.http_root,
        "FILE_NAME": file_name,
        "WEB_GROUP": helper.http_group,
    })


PLACEHOLDER_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: placeholder
  cluster: {server: "https://api.placeholder.invalid:6443"}
contexts:
- name: placeholder
  context: {cluster: placeholder, user: admin}
current-context: placeholder
users:
- name: admin
  user: {token: placeholder}
"""


def placeholder_ignition_stdout() -> str:
    """Stdout of the ignition step with placeholder files, for offline runs under mocks."""
    files = {key: json.dumps({"ignition": {"version": IGNITION_SPEC}}) for key in ("bootstrap", "master", "worker")}
    files["kubeconfig"] = PLACEHOLDER_KUBECONFIG
    files["kubeadminPassword"] = "placeholder"
    files["metadata"] = json.dumps({"clusterName": "placeholder", "infraID": "placeholder"})
    files["installState"] = json.dumps({})
    return json.dumps({k: base64.b64encode(v.encode()).decode() for k, v in files.items()})
