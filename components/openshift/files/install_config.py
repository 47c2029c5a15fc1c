"""install-config.yaml, the one file openshift-install reads to make the cluster (UPI)."""

from __future__ import annotations

import yaml

from components.mirror import image_digest_sources
from components.openshift.plan import ClusterPlan

REDACTED = "<redacted>"


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
    nets = plan.networks
    doc: dict = {
        "apiVersion": "v1",
        "baseDomain": plan.base_domain,
        "metadata": {"name": plan.cluster_name},
        "compute": [{"name": "worker", "hyperthreading": "Enabled", "replicas": COMPUTE_REPLICAS}],
        "controlPlane": {"name": "master", "hyperthreading": "Enabled", "replicas": control_plane_replicas(plan)},
        "networking": {
            "networkType": plan.network_type,
            "clusterNetwork": [{"cidr": nets.cluster_cidr, "hostPrefix": nets.host_prefix}],
            "serviceNetwork": [nets.service_network],
            "machineNetwork": [{"cidr": c} for c in nets.machine_networks],
        },
        "platform": {"none": {}},
        "pullSecret": pull_secret,
        "sshKey": ssh_key,
    }
    if plan.platform == "vsphere" and plan.vcenter is not None:
        doc["platform"] = {"vsphere": _vsphere_platform(plan, vcenter_password or REDACTED)}
    if plan.single_node:
        control_plane = next(n for n in plan.nodes if n.role == "control-plane")
        doc["bootstrapInPlace"] = {"installationDisk": control_plane.install_device}
    if plan.mirror is not None:
        # The release payload and its component images by digest from the mirror (oc-mirror's layout);
        # the mirror's CA in every node's trust store, not only the proxy's ("Always").
        doc["imageDigestSources"] = image_digest_sources(plan.mirror)
        if plan.mirror.ca_bundle is not None:
            doc["additionalTrustBundle"] = plan.mirror.ca_bundle
            doc["additionalTrustBundlePolicy"] = "Always"
    return yaml.safe_dump(doc, sort_keys=False, width=1000)


def _vsphere_platform(plan: ClusterPlan, password: str) -> dict:
    vc = plan.vcenter
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
