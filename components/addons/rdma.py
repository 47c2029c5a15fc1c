"""RDMA networking for pods: PVRDMA on vSphere workers, SR-IOV rails on bare metal.

Both designs use the NVIDIA network operator for Multus, the CNI plugins and nv-ipam (its
NicClusterPolicy no longer ships whereabouts), and give pods:
- `networks`: the attachments NCCL/Horovod pods name in `k8s.v1.cni.cncf.io/networks`,
- `static_network`: an attachment with static IPAM, so the ib_write_bw client knows where the
  server is (rdma_cm needs the peer's address on the RDMA subnet, as in the DeepOps RoCE guide),
- `resources`: the device plugin resources that bring the RDMA device into the pod.

PVRDMA: the operator's own RDMA shared device plugin only runs on nodes with a
Mellanox NIC (label pci-15b3), which a VM with a VMware PVRDMA function never gets, so the plugin
runs here as a DaemonSet on the nodes NFD labels as having the PVRDMA function (15ad:0820), through
a NodeFeatureRule of ours as the network operator has one for its NICs. Pods reach the RDMA subnet
through macvlan on the VM's PVRDMA netdev.

SR-IOV (DeepOps): 8 VFs per ConnectX-5 port, one network per rail (VLAN 111/112),
RDMA enabled, through the sriov-network-operator the network operator chart bundles.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pulumi

from components.addons import versions
from components.addons.images import with_mirror
from components.addons.kube import Kube, helm_release, metadata, role_of
from components.addons.plan import (
    PVRDMA_NETWORK,
    PVRDMA_RESOURCE,
    PVRDMA_STATIC_NETWORK,
    SRIOV_RESOURCE_PREFIX,
    AddonsPlan,
    SriovRail,
)
from components.mirror import MirrorPlan

NAMESPACE = "nvidia-network-operator"
NIC_CLUSTER_POLICY_READY = {
    # nv-ipam's IPPool CRD is installed by the operator as it deploys nv-ipam, not by the chart, and
    # pulumi-kubernetes retries a custom resource of an unknown kind for about a minute only: the
    # pools wait for the policy, which waits until the operator reports every component ready
    # (NicClusterPolicy .status.state).
    "pulumi.com/waitFor": "jsonpath={.status.state}=ready",
    # images pulled to every node through the lab's network first
    "pulumi.com/timeoutSeconds": "1800",
}

# PCI ids (vendor, device): the guides' NICs.
PVRDMA_PCI = ("15ad", "0820")  # VMware paravirtual RDMA function of a vmxnet3/PVRDMA NIC
CONNECTX5_PF = ("15b3", "1017")  # MT27800 ConnectX-5 physical function
CONNECTX5_VF = ("15b3", "1018")  # its virtual function
# NFD prefixes a rule's label without a namespace with feature.node.kubernetes.io/; the name is the
# one NFD's pci source gives with deviceLabelFields [vendor, device].
PVRDMA_FEATURE = f"pci-{PVRDMA_PCI[0]}_{PVRDMA_PCI[1]}.present"
PVRDMA_NODE_LABEL = f"feature.node.kubernetes.io/{PVRDMA_FEATURE}"


# ---------------------------------------------------------------- manifests (pure)


def network_operator_values(own_nfd: bool, sriov: bool, mirror: MirrorPlan | None = None) -> dict[str, Any]:
    values: dict[str, Any] = {
        # One NFD per cluster (config.nfd_source): the chart's own only when no other release has one.
        "nfd": {"enabled": own_nfd},
        "sriovNetworkOperator": {"enabled": sriov},
    }
    if sriov:
        values["sriov-network-operator"] = {"operator": {"resourcePrefix": SRIOV_RESOURCE_PREFIX}}
    return with_mirror(values, versions.NETWORK_OPERATOR_IMAGES, mirror)


def components_repository(mirror: MirrorPlan | None) -> str:
    """Where the NicClusterPolicy's components and our RDMA device plugin come from."""
    repo = versions.NETWORK_OPERATOR_REPOSITORY
    return mirror.repository(repo) if mirror is not None else repo


def _component(image: str, mirror: MirrorPlan | None) -> dict[str, str]:
    return {"image": image, "repository": components_repository(mirror),
            "version": versions.NETWORK_OPERATOR_COMPONENTS}


def nic_cluster_policy(openshift: bool, mirror: MirrorPlan | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nvIpam": {**_component("nvidia-k8s-ipam", mirror), "enableWebhook": False}}
    if not openshift:
        # OpenShift ships Multus and the reference CNI plugins (macvlan, static) itself.
        spec["secondaryNetwork"] = {"cniPlugins": _component("plugins", mirror),
                                    "multus": _component("multus-cni", mirror)}
    return {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
            "metadata": metadata("nic-cluster-policy", annotations=NIC_CLUSTER_POLICY_READY), "spec": spec}


def on_nodes(nodes: list[str]) -> dict[str, Any]:
    """Node selector matching exactly the GPU workers."""
    return {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": list(nodes)}]}]}


def ip_pool(name: str, subnet: ipaddress.IPv4Network, nodes: list[str], exclude: list[str],
            block: int) -> dict[str, Any]:
    # nv-ipam carves one block per selected node: select only the workers, or the control plane's blocks
    # would eat the pool. The block size is fixed: nv-ipam keeps a node's range only while it stays
    # (Mellanox/nvidia-k8s-ipam, pkg/ipam-controller/allocator/allocator.go: a range of another size is
    # dropped and every node gets a new one, while running pods keep their addresses).
    spec: dict[str, Any] = {"subnet": str(subnet), "perNodeBlockSize": block,
                            "defaultGateway": False, "nodeSelector": on_nodes(nodes)}
    inside = [a for a in exclude if ipaddress.IPv4Address(a) in subnet]
    if inside:
        spec["exclusions"] = [{"startIP": a, "endIP": a} for a in inside]
    return {"apiVersion": "nv-ipam.nvidia.com/v1alpha1", "kind": "IPPool",
            "metadata": metadata(name, NAMESPACE), "spec": spec}


def macvlan_config(name: str, master: str, mtu: int, ipam: dict[str, Any], static: bool = False) -> str:
    """CNI config of a macvlan attachment on the PVRDMA netdev."""
    config: dict[str, Any] = {"cniVersion": "0.3.1", "name": name, "type": "macvlan", "master": master,
                              "mode": "bridge", "mtu": mtu}
    if static:
        config["capabilities"] = {"ips": True}
    config["ipam"] = ipam
    return json.dumps(config, sort_keys=True)


def network_attachment(name: str, namespace: str, config: str) -> dict[str, Any]:
    return {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": metadata(name, namespace), "spec": {"config": config}}


def rdma_shared_device_config(resource: str) -> str:
    return json.dumps({
        "periodicUpdateInterval": 300,
        "configList": [{
            "resourceName": resource,
            "rdmaHcaMax": 63,
            "selectors": {"vendors": [PVRDMA_PCI[0]], "deviceIDs": [PVRDMA_PCI[1]]},
        }],
    }, sort_keys=True)


def pvrdma_node_rule() -> dict[str, Any]:
    """NFD labels the nodes that have a PVRDMA function: the device plugin runs on them, so a new
    worker gets its plugin pod without the DaemonSet's template changing under the running ones."""
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
            "metadata": {"name": "gpu-lab-pvrdma"},
            "spec": {"rules": [{
                "name": "VMware PVRDMA function",
                "labels": {PVRDMA_FEATURE: "true"},
                "matchFeatures": [{"feature": "pci.device", "matchExpressions": {
                    "vendor": {"op": "In", "value": [PVRDMA_PCI[0]]},
                    "device": {"op": "In", "value": [PVRDMA_PCI[1]]}}}],
            }]}}


def rdma_shared_device_plugin(resource: str, mirror: MirrorPlan | None = None) -> list[dict[str, Any]]:
    """ServiceAccount, ConfigMap and DaemonSet of the RDMA shared device plugin for PVRDMA."""
    name = f"rdma-shared-dp-{resource}"
    labels = {"app": name}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(name, NAMESPACE)},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(f"rdma-devices-{resource}", NAMESPACE),
         "data": {"config.json": rdma_shared_device_config(resource)}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": metadata(name, NAMESPACE, labels=labels),
         "spec": {
             "selector": {"matchLabels": labels},
             "template": {
                 "metadata": {"labels": labels},
                 "spec": {
                     "serviceAccountName": name,
                     "hostNetwork": True,
                     "priorityClassName": "system-node-critical",
                     "nodeSelector": {PVRDMA_NODE_LABEL: "true"},
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                     "containers": [{
                         "name": "rdma-shared-dp",
                         "image": f"{components_repository(mirror)}/k8s-rdma-shared-dev-plugin:"
                                  f"{versions.NETWORK_OPERATOR_COMPONENTS}",
                         "command": ["/bin/k8s-rdma-shared-dp"],
                         # A device plugin: registers with kubelet and reads /dev (infrastructure,
                         # not an acceptance job).
                         "securityContext": {"privileged": True},
                         "volumeMounts": [
                             {"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"},
                             {"name": "plugins-registry", "mountPath": "/var/lib/kubelet/plugins_registry"},
                             {"name": "config", "mountPath": "/k8s-rdma-shared-dev-plugin"},
                             {"name": "devs", "mountPath": "/dev/"},
                         ],
                     }],
                     "volumes": [
                         {"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}},
                         {"name": "plugins-registry", "hostPath": {"path": "/var/lib/kubelet/plugins_registry"}},
                         {"name": "config", "configMap": {"name": f"rdma-devices-{resource}",
                                                          "items": [{"key": "config.json", "path": "config.json"}]}},
                         {"name": "devs", "hostPath": {"path": "/dev/"}},
                     ],
                 },
             },
         }},
    ]


def privileged_scc_binding(name: str, namespace: str, service_account: str) -> dict[str, Any]:
    """OpenShift: let a service account run privileged pods (device plugins only)."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": metadata(name, namespace),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:openshift:scc:privileged"},
            "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}]}


def sriov_node_policy(rail: SriovRail, num_vfs: int) -> dict[str, Any]:
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
            "metadata": metadata(f"policy-{rail.network_name}", NAMESPACE),
            "spec": {
                "resourceName": rail.resource_name,
                "nodeSelector": {"feature.node.kubernetes.io/network-sriov.capable": "true"},
                "numVfs": num_vfs,
                # The operator creates VFs 15b3:1018 on these ConnectX-5 (15b3:1017) ports.
                "nicSelector": {"vendor": CONNECTX5_PF[0], "deviceID": CONNECTX5_PF[1], "pfNames": [rail.pf_name]},
                "deviceType": "netdevice",
                "isRdma": True,
            }}


def sriov_network(name: str, rail: SriovRail, namespace: str, ipam: dict[str, Any],
                  static: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"resourceName": rail.resource_name, "networkNamespace": namespace, "vlan": rail.vlan,
                            "ipam": json.dumps(ipam, sort_keys=True)}
    if static:
        spec["capabilities"] = json.dumps({"ips": True})
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetwork",
            "metadata": metadata(name, NAMESPACE), "spec": spec}


def network_manifests(addons: AddonsPlan, openshift: bool, workload_namespace: str) -> dict[str, list[dict[str, Any]]]:
    """Every object of the RDMA networking add-on, grouped by what must exist first.

    `policy`: NicClusterPolicy and (SR-IOV) node policies, created once the operator's CRDs are
    in; `pools`: nv-ipam pools, created once nv-ipam runs; `networks`: what pods attach to;
    `labels`: the NodeFeatureRule naming the nodes our PVRDMA device plugin, `plugin`, runs on.
    """
    plan = addons.rdma
    assert plan is not None  # decided with the network on (addons_plan)
    nodes = list(addons.jobs.nodes)
    static = list(addons.jobs.ib_write_bw_addresses) if addons.jobs.ib_write_bw else []
    out: dict[str, list[dict[str, Any]]] = {"policy": [nic_cluster_policy(openshift, addons.mirror)], "pools": [],
                                            "networks": [], "labels": [], "plugin": []}
    if plan.mode == "pvrdma":
        pool = addons.network.pod_pool
        if pool is None:  # check() reports a missing pool before anything is built
            raise ValueError("addons.network.podPool: no pod address pool on the RDMA network")
        out["pools"].append(ip_pool("rdma-pool", pool, nodes, static, addons.network.pod_addresses_per_node))
        master = addons.network.interface
        out["networks"] += [
            network_attachment(PVRDMA_NETWORK, workload_namespace, macvlan_config(
                PVRDMA_NETWORK, master, plan.mtu, {"type": "nv-ipam", "poolName": "rdma-pool"})),
            network_attachment(PVRDMA_STATIC_NETWORK, workload_namespace, macvlan_config(
                PVRDMA_STATIC_NETWORK, master, plan.mtu, {"type": "static"}, static=True)),
        ]
        out["labels"] = [pvrdma_node_rule()]
        out["plugin"] = rdma_shared_device_plugin(PVRDMA_RESOURCE, addons.mirror)
        if openshift:
            out["plugin"].append(privileged_scc_binding("rdma-shared-dp-privileged", NAMESPACE,
                                                        f"rdma-shared-dp-{PVRDMA_RESOURCE}"))
        return out
    net = addons.network
    for rail in net.rails:
        pool_name = f"{rail.network_name}-pool"
        out["policy"].append(sriov_node_policy(rail, net.num_vfs))
        out["pools"].append(ip_pool(pool_name, ipaddress.IPv4Network(rail.cidr), nodes, static,
                                    net.pod_addresses_per_node))
        out["networks"].append(sriov_network(rail.network_name, rail, workload_namespace,
                                             {"type": "nv-ipam", "poolName": pool_name}))
    out["networks"].append(sriov_network(plan.static_network, net.rails[0], workload_namespace,
                                         {"type": "static"}, static=True))
    return out


# ---------------------------------------------------------------- resources


def deploy_network(kube: Kube, addons: AddonsPlan, workload_namespace: str,
                   after: list[pulumi.Resource | None]) -> list[pulumi.Resource]:
    """The network operator and the RDMA networks; returns what pods on them must wait for."""
    plan = addons.rdma
    assert plan is not None  # decided with the network on (addons_plan)
    ns = kube.namespace("network-operator-namespace", NAMESPACE)
    release = helm_release(kube, "network-operator", versions.NETWORK_OPERATOR, NAMESPACE,
                           network_operator_values(addons.nfd_source == "networkOperator", plan.mode == "sriov",
                                                   addons.mirror),
                           depends_on=[ns, *after])
    manifests = network_manifests(addons, kube.openshift, workload_namespace)
    ready: list[pulumi.Resource] = []
    policies = [kube.register(role_of(m), m, [release]) for m in manifests["policy"]]
    pools = [kube.register(role_of(m), m, policies) for m in manifests["pools"]]
    ready += [kube.register(role_of(m), m, [release, *after, *pools]) for m in manifests["networks"]]
    # The rule's CRD comes with NFD, which the release waits for (after). The plugin follows the rule,
    # so a lab moving from node names to the label has its nodes labelled as soon as NFD can.
    rules = [kube.register(role_of(m), m, [release]) for m in manifests["labels"]]
    ready += rules + [kube.register(role_of(m), m, [ns, *rules]) for m in manifests["plugin"]]
    return ready + pools + policies
