"""The openshift section: both stacks load, nodes resolve from lab.vms(), bad input is named."""

from __future__ import annotations

import dataclasses

import builders
import pytest
from openshift_helpers import sections
from pydantic import BaseModel

from components.config import load_lab
from components.model import ConfigError
from components.openshift.rules import pull_secret_problems, ssh_key_problems

ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC8wDKIPxTD+BPx9yKrkMAGoDRrmSxLth9xr0wbOTtcO core@lab"


def problems(raw: dict) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as err:
        load_lab(raw)
    return [(p.path, p.message) for p in err.value.problems]


def assert_problem(raw: dict, path: str, fragment: str) -> None:
    found = problems(raw)
    assert any(p == path and fragment in m for p, m in found), found


def test_lab_nodes_take_addresses_from_the_vsphere_plan(lab_sections):
    p = load_lab(lab_sections).plan.cluster
    by_name = {n.name: n for n in p.nodes}
    assert by_name["bs01"].address == "172.16.7.10"
    assert [by_name[f"m0{i}"].address for i in (1, 2, 3)] == ["172.16.7.11", "172.16.7.12", "172.16.7.13"]
    assert by_name["w04"].address == "172.16.7.54"
    assert by_name["w04"].rdma_address == "192.168.0.54"
    assert by_name["m01"].rdma_address is None
    assert p.domain == "kub1.lab.local"
    assert p.lb_address == "172.16.7.5"
    assert not p.pxe_wanted  # every lab node is a VM cloned from the RHCOS template


def test_guide_stack_resolves_its_own_numbers(openshift_sections):
    lab = load_lab(openshift_sections)
    assert lab.vsphere is None and lab.vms() == []
    p = lab.plan.cluster
    assert p.domain == "pod1.nvidia.com"
    assert p.lb_address == "10.33.3.54"
    assert p.http_base == "http://10.33.3.18:8080"
    assert [n.address for n in p.of_role("control-plane")] == ["10.33.3.50", "10.33.3.51", "10.33.3.52"]
    assert [n.address for n in p.of_role("worker")] == ["10.33.3.44", "10.33.3.46"]
    assert p.bootstrap_node.address == "10.33.3.53"
    assert lab.openshift.network_type == "OVNKubernetes"
    assert p.pxe_wanted


def plain_facts(value) -> list:
    """The pydantic models found anywhere in a plan value (none expected)."""
    if isinstance(value, BaseModel):
        return [value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [m for f in dataclasses.fields(value) for m in plain_facts(getattr(value, f.name))]
    if isinstance(value, tuple | list):
        return [m for v in value for m in plain_facts(v)]
    return []


@pytest.mark.parametrize("shape", ["lab", "baremetal"])
def test_the_cluster_plan_holds_plain_facts_not_the_sections_models(shape):
    # The components read the plan only (components/openshift/plan.py), never the stack file's models.
    raw = sections(shape)
    if shape == "lab":
        raw["openshift"].update(platform="vsphere", vcenter={"server": "vc1.lab.local", "user": "admin@lab"},
                                ingressNodes=["w01"])
    raw["openshift"]["helper"]["dnsUpstreams"] = ["10.0.0.53"]
    p = load_lab(raw).plan.cluster
    assert plain_facts(p) == []
    assert p.helper.dns_upstreams == ("10.0.0.53",) and isinstance(p.helper.address, str)
    if shape == "lab":
        assert (p.vcenter.server, p.vcenter.user) == ("vc1.lab.local", "admin@lab")
        assert [n.name for n in p.ingress] == ["w01"]


def test_bootstrap_false_drops_the_bootstrap_node_and_vm(lab_sections):
    lab_sections["openshift"]["bootstrap"] = False
    lab = load_lab(lab_sections)
    assert "bs01" not in {n.name for n in lab.plan.cluster.nodes}
    assert "bs01" not in {vm.name for vm in lab.vms()}
    assert lab.plan.cluster.bootstrap_node is None


def test_every_lab_vm_is_a_node_without_listing_it(lab_sections):
    assert "nodes" not in lab_sections["openshift"]
    p = load_lab(lab_sections).plan.cluster
    assert [(n.name, n.role, n.platform) for n in p.nodes][:2] == [
        ("bs01", "bootstrap", "vsphere"), ("m01", "control-plane", "vsphere")]
    assert len(p.nodes) == 8


def test_listed_vm_details_that_agree_are_accepted(lab_sections):
    lab_sections["vsphere"]["controlPlane"]["macs"] = ["00:50:56:00:00:01", "00:50:56:00:00:02", "00:50:56:00:00:03"]
    lab_sections["openshift"]["nodes"] = [
        {"name": "m02", "role": "control-plane", "platform": "vsphere", "address": "172.16.7.12"},
        {"name": "m03", "role": "control-plane", "platform": "vsphere", "mac": "00:50:56:00:00:03",
         "installDevice": "/dev/nvme0n1"},
        {"name": "dgx01", "role": "worker", "address": "172.16.7.81", "mac": "0c:42:a1:00:00:81"},
    ]
    p = load_lab(lab_sections).plan.cluster
    nodes = {n.name: n for n in p.nodes}
    assert nodes["m01"].mac == "00:50:56:00:00:01"
    assert nodes["m03"].install_device == "/dev/nvme0n1"
    assert nodes["dgx01"].platform == "baremetal" and p.pxe_wanted


def test_clashes_among_vms_are_left_to_the_vsphere_section(lab_sections):
    lab_sections["vsphere"]["workers"]["macs"] = ["00:50:56:00:00:01"] * 4
    found = problems(lab_sections)
    assert [path for path, _ in found] == ["vsphere.workers.macs[3]"]


def test_too_few_control_plane_vms_reported_where_the_names_are_written(lab_sections):
    lab_sections["vsphere"]["controlPlane"]["names"] = ["m01", "m02"]
    found = problems(lab_sections)
    assert ("vsphere.controlPlane.names", "2 control-plane node(s); OpenShift needs at least 3 for etcd quorum "
            "(or opt into a one-node lab with singleNode: true)") in found, found


def test_single_node_is_an_explicit_opt_in(openshift_sections):
    oc = openshift_sections["openshift"]
    oc["nodes"] = [n for n in oc["nodes"] if n["name"] in ("cp-0", "dgx-0")]
    assert_problem(openshift_sections, "openshift.nodes", "at least 3")
    oc.update(singleNode=True)
    assert_problem(openshift_sections, "openshift.bootstrap", "set bootstrap: false")
    oc.update(bootstrap=False)
    assert load_lab(openshift_sections).openshift.single_node


# (mutation of the guide's stack, key path, part of the message)
GUIDE_CASES = {
    "two control-plane nodes": (
        lambda oc: oc["nodes"].pop(3), "openshift.nodes", "2 control-plane node(s); OpenShift needs at least 3"),
    "two bootstrap nodes": (
        lambda oc: oc["nodes"].append({"name": "bootstrap-2", "role": "bootstrap", "address": "10.33.3.60"}),
        "openshift.nodes", "at most one"),
    "bootstrap on without a bootstrap node": (
        lambda oc: oc["nodes"].pop(0), "openshift.bootstrap", "needs a bootstrap node"),
    "duplicate name": (
        lambda oc: oc["nodes"][5].update(name="dgx-0"), "openshift.nodes", "'dgx-0' is used more than once"),
    "duplicate address": (
        lambda oc: oc["nodes"][5].update(address="10.33.3.44"), "openshift.nodes",
        "address 10.33.3.44 is given to more than one node (dgx-0, dgx-1)"),
    "duplicate MAC": (
        lambda oc: [oc["nodes"][i].update(mac="52:54:00:aa:bb:cc") for i in (4, 5)], "openshift.nodes",
        "MAC 52:54:00:aa:bb:cc is given to more than one node"),
    "node outside the machine network": (
        lambda oc: oc["nodes"][4].update(address="10.33.4.44"), "openshift.nodes[4].address",
        "outside the machine network(s) 10.33.3.0/24"),
    "bare metal without address": (
        lambda oc: oc["nodes"][4].pop("address"), "openshift.nodes[4].address", "required for bare-metal nodes"),
    "cluster and service networks overlap": (
        lambda oc: oc["networks"].update(serviceNetwork="10.130.0.0/16"), "openshift.networks.serviceNetwork",
        "overlaps 10.128.0.0/14"),
    "machine network inside the cluster network": (
        lambda oc: oc["networks"].update(clusterNetwork={"cidr": "10.32.0.0/14", "hostPrefix": 23}),
        "openshift.networks.machineNetwork[0]", "10.33.3.0/24 overlaps 10.32.0.0/14"),
    "OVN internal range": (
        lambda oc: oc["networks"].update(serviceNetwork="100.64.0.0/16"), "openshift.networks.serviceNetwork",
        "OVN-Kubernetes uses internally"),
    "hostPrefix equal to the cluster prefix: one node subnet": (
        lambda oc: oc["networks"].update(clusterNetwork={"cidr": "10.128.0.0/14", "hostPrefix": 14}),
        "openshift.networks.clusterNetwork.hostPrefix", "1 node subnet(s) for 5 nodes"),
    "cluster network too small for the nodes": (
        lambda oc: oc["networks"].update(clusterNetwork={"cidr": "10.128.0.0/22", "hostPrefix": 24}),
        "openshift.networks.clusterNetwork.hostPrefix", "4 node subnet(s) for 5 nodes"),
    "gateway outside the machine network": (
        lambda oc: oc["networks"].update(gateway="10.9.9.1"), "openshift.networks.gateway", "outside"),
    "ingress node that is not a node": (
        lambda oc: oc.update(ingressNodes=["dgx-0", "bootstrap"]), "openshift.ingressNodes[1]",
        "not a control-plane or worker node"),
    "helper on a node's address": (
        lambda oc: oc["helper"].update(address="10.33.3.50"), "openshift.helper.address", "also a node's address"),
    "helper HTTP on a load-balancer port": (
        lambda oc: oc["helper"].update(httpPort=443, loadBalancerAddress="10.33.3.18"), "openshift.helper.httpPort",
        "load-balancer port"),
    "helper host key that is not a public key": (
        lambda oc: oc["helper"].update(hostKey="ssh-ed25519 not*base64"), "openshift.helper.hostKey",
        "is not an OpenSSH public key (the ssh-ed25519 key data is not base64)"),
    "helper host key pasted with its address": (
        lambda oc: oc["helper"].update(hostKey=f"10.33.3.18 {ED25519}"), "openshift.helper.hostKey",
        "starts with '10.33.3.18', not the key type"),
    "helper HTTP group that is not a group name": (
        lambda oc: oc["helper"].update(httpGroup="Web Server"), "openshift.helper.httpGroup", "not a group name"),
    "PXE kernel over https": (
        lambda oc: oc["rhcos"].update(kernel="https://mirror.example.com/rhcos/kernel"), "openshift.rhcos.kernel",
        "without TLS"),
    "vsphere platform with bare-metal nodes": (
        lambda oc: oc.update(platform="vsphere", vcenter={"server": "vc", "user": "u"}),
        "openshift.nodes[4].platform", "platform: vsphere does not support"),
    "vsphere platform without vcenter": (
        lambda oc: oc.update(platform="vsphere"), "openshift.vcenter", "needs vcenter"),
    "vSphere node without a vsphere section": (
        lambda oc: oc["nodes"][1].update(platform="vsphere"), "openshift.nodes[1].platform",
        "no vsphere section"),
    "unknown role (structure)": (
        lambda oc: oc["nodes"][1].update(role="infra"), "openshift.nodes[1].role", "'bootstrap', 'control-plane'"),
    "unknown network type (structure)": (
        lambda oc: oc.update(networkType="Calico"), "openshift.networkType", "OVNKubernetes"),
    "misspelt key (structure)": (
        lambda oc: oc.update(waitForBootstrapp=True), "openshift.waitForBootstrapp", "unknown key"),
    "bad install device (structure)": (
        lambda oc: oc.update(installDevice="sda"), "openshift.installDevice", "/dev/sda"),
}


@pytest.mark.parametrize("case", GUIDE_CASES, ids=list(GUIDE_CASES))
def test_guide_stack_bad_input_is_named(openshift_sections, case):
    mutate, path, fragment = GUIDE_CASES[case]
    mutate(openshift_sections["openshift"])
    assert_problem(openshift_sections, path, fragment)


def listing(**node):
    return lambda raw: raw["openshift"].setdefault("nodes", []).append(node)


LAB_CASES = {
    "VM that does not exist": (
        listing(name="w05", role="worker", platform="vsphere"), "openshift.nodes[0].name",
        "'w05' is not a VM of the vsphere section"),
    "address that disagrees with the VM": (
        listing(name="m02", role="control-plane", platform="vsphere", address="172.16.7.99"),
        "openshift.nodes[0].address", "differs from VM m02's management address 172.16.7.12"),
    "role that disagrees with the VM": (
        listing(name="w01", role="control-plane", platform="vsphere"), "openshift.nodes[0].role",
        "VM w01 is planned as worker"),
    "MAC that disagrees with the VM": (
        lambda raw: (raw["vsphere"]["workers"].update(macs=[f"00:50:56:00:01:0{i}" for i in range(4)]),
                     listing(name="w01", role="worker", platform="vsphere", mac="00:50:56:00:01:09")(raw)),
        "openshift.nodes[0].mac", "differs from VM w01's MAC 00:50:56:00:01:00"),
    "bare-metal node named like a VM": (
        listing(name="w01", role="worker", address="172.16.7.90"), "openshift.nodes",
        "'w01' is used more than once"),
    "bare-metal node on a VM's address": (
        listing(name="dgx01", role="worker", address="172.16.7.51"), "openshift.nodes",
        "address 172.16.7.51 is given to more than one node (w01, dgx01)"),
    "VM without a planned address": (
        lambda raw: raw["vsphere"]["workers"].pop("managementAddresses"), "openshift.nodes",
        "VM w01 has no management address"),
    "pod network over the RDMA network": (
        lambda raw: raw["openshift"]["networks"].update(clusterNetwork={"cidr": "192.168.0.0/16", "hostPrefix": 24}),
        "vsphere.networks.rdma.cidr", "overlaps 192.168.0.0/16"),
    "machine network that misses the VMs": (
        lambda raw: raw["openshift"]["networks"].update(machineNetwork=["172.16.8.0/24"]),
        "openshift.nodes", "172.16.7.11 of node m01 is outside"),
    "bootstrap on without a bootstrap VM": (
        lambda raw: raw["vsphere"].pop("bootstrap"), "openshift.bootstrap", "needs a bootstrap node"),
}


@pytest.mark.parametrize("case", LAB_CASES, ids=list(LAB_CASES))
def test_lab_stack_bad_input_is_named(lab_sections, case):
    mutate, path, fragment = LAB_CASES[case]
    mutate(lab_sections)
    assert_problem(lab_sections, path, fragment)


def test_bootstrap_vm_may_be_absent_once_bootstrap_is_off(lab_sections):
    lab_sections["vsphere"].pop("bootstrap")
    lab_sections["openshift"]["bootstrap"] = False
    assert load_lab(lab_sections).openshift.bootstrap is False


def test_every_problem_is_reported_at_once(openshift_sections):
    oc = openshift_sections["openshift"]
    oc["nodes"].pop(3)
    oc["networks"]["serviceNetwork"] = "10.128.0.0/16"
    oc["nodes"][3]["address"] = "10.33.3.50"
    paths = {p for p, _ in problems(openshift_sections)}
    assert {"openshift.nodes", "openshift.networks.serviceNetwork"} <= paths
    assert len(problems(openshift_sections)) >= 3


# ---------------------------------------------------------------- openshift-install's own rules


def domain_of_length(n: int) -> str:
    """A DNS name of exactly n characters, in labels of at most 60."""
    labels = []
    while n > 61:
        labels.append("d" * 60)
        n -= 61
    return ".".join(labels + ["d" * n])

# Each case mirrors a check of openshift-install's install-config validation, read at
# openshift/installer commit 7ad0e35651d59acc86772481d79ea17241f3ecd7 (master, 2025-05-13).
# (mutation of the guide's stack, key path, part of the message)
INSTALLER_CASES = {
    # pkg/validate/validate.go, ClusterName: at most 63 - 9 characters
    "cluster name longer than 54": (
        lambda oc: oc.update(clusterName="c" * 55), "openshift.clusterName",
        "is 55 characters; openshift-install allows at most 54"),
    # pkg/types/validation/installconfig.go, ValidateInstallConfig: DomainName(ClusterDomain()),
    # a DNS-1123 subdomain of at most 253 characters
    "cluster domain longer than 253": (
        lambda oc: oc.update(baseDomain=domain_of_length(254 - len(oc["clusterName"] + "."))), "openshift.baseDomain",
        "is 254 characters; openshift-install allows at most 253"),
    # pkg/types/validation/installconfig.go, validateNetworking: OpenShiftSDN is refused
    "OpenShiftSDN": (
        lambda oc: oc.update(networkType="OpenShiftSDN"), "openshift.networkType",
        "'OpenShiftSDN' is not installable since OpenShift 4.15 (openshift-install refuses it); allowed: OVNKubernetes"),
    # pkg/validate/validate.go, ServiceSubnetCIDR: IPv4 service network /12 or longer
    "service network shorter than /12": (
        lambda oc: oc["networks"].update(serviceNetwork="172.0.0.0/11"), "openshift.networks.serviceNetwork",
        "172.0.0.0/11 is /11; openshift-install needs /12 or longer"),
    # pkg/validate/validate.go, SubnetCIDR: "address must be specified"
    "machine network at 0.0.0.0": (
        lambda oc: oc["networks"].update(machineNetwork=["10.33.3.0/24", "0.0.0.0/1"]),
        "openshift.networks.machineNetwork[1]", "0.0.0.0/1 starts at 0.0.0.0"),
    # pkg/types/validation/installconfig.go, validateClusterNetwork: hostPrefix not below the
    # cluster network's prefix
    "hostPrefix shorter than the cluster prefix": (
        lambda oc: oc["networks"].update(clusterNetwork={"cidr": "10.128.0.0/14", "hostPrefix": 13}),
        "openshift.networks.clusterNetwork.hostPrefix", "/13 is shorter than the cluster network's /14"),
    # pkg/types/validation/installconfig.go, validateClusterNetwork / validateServiceNetwork /
    # validateMachineNetwork: no overlaps among cluster, service and machine networks
    "cluster network over the machine network": (
        lambda oc: oc["networks"].update(clusterNetwork={"cidr": "10.33.0.0/16", "hostPrefix": 23}),
        "openshift.networks.machineNetwork[0]", "10.33.3.0/24 overlaps 10.33.0.0/16"),
    "two machine networks overlap": (
        lambda oc: oc["networks"].update(machineNetwork=["10.33.3.0/24", "10.33.0.0/16"]),
        "openshift.networks.machineNetwork[1]", "10.33.0.0/16 overlaps 10.33.3.0/24"),
    # pkg/validate/validate.go OVNIPv4JoinSubnet / OVNIPv4TransitSubnet / OVNIPv4MasqueradeSubnet;
    # installconfig.go, validateNetworkNotOverlapDefaultOVNSubnets
    "OVN join subnet": (
        lambda oc: oc["networks"].update(serviceNetwork="100.64.0.0/16"), "openshift.networks.serviceNetwork",
        "overlaps 100.64.0.0/16, the join subnet OVN-Kubernetes uses internally"),
    "OVN transit subnet": (
        lambda oc: oc["networks"].update(clusterNetwork={"cidr": "100.88.0.0/14", "hostPrefix": 23}),
        "openshift.networks.clusterNetwork.cidr", "the transit subnet"),
    "OVN masquerade subnet": (
        lambda oc: oc["networks"].update(machineNetwork=["10.33.3.0/24", "169.254.100.0/24"]),
        "openshift.networks.machineNetwork[1]", "overlaps 169.254.0.0/17, the masquerade subnet"),
}


@pytest.mark.parametrize("case", INSTALLER_CASES, ids=list(INSTALLER_CASES))
def test_installer_rules_are_named_before_openshift_install_runs(openshift_sections, case):
    mutate, path, fragment = INSTALLER_CASES[case]
    mutate(openshift_sections["openshift"])
    assert_problem(openshift_sections, path, fragment)


def test_installer_limits_accept_their_boundaries(openshift_sections):
    # ClusterName allows exactly 54 characters; ServiceSubnetCIDR allows /12; validateClusterNetwork
    # allows hostPrefix equal to the cluster prefix (one node subnet, enough for a one-node lab)
    # (openshift/installer pkg/validate/validate.go, pkg/types/validation/installconfig.go).
    oc = openshift_sections["openshift"]
    oc.update(clusterName="c" * 54)
    oc["networks"].update(serviceNetwork="172.16.0.0/12")
    assert load_lab(openshift_sections).openshift.cluster_name == "c" * 54
    oc["nodes"] = [n for n in oc["nodes"] if n["name"] == builders.METAL_CONTROL_PLANE[0]]
    oc.update(singleNode=True, bootstrap=False)
    oc["networks"].update(clusterNetwork={"cidr": "10.128.0.0/23", "hostPrefix": 23})
    assert load_lab(openshift_sections).openshift.networks.cluster_network.host_prefix == 23


# openshift/installer pkg/validate/validate.go, ImagePullSecret: JSON, non-empty "auths", each
# registry with "auth" or "credsStore".
@pytest.mark.parametrize("value, fragment", [
    ("not json", "is not JSON"),
    ("[]", 'needs a non-empty "auths" object'),
    ('{"auths": {}}', 'needs a non-empty "auths" object'),
    ('{"auths": {"quay.io": {"email": "a@b"}}}', "registry 'quay.io' needs \"auth\" or \"credsStore\""),
])
def test_pull_secret_rule_of_openshift_install(value, fragment):
    found = pull_secret_problems(value)
    assert [p.path for p in found] == ["gpu-lab:pullSecret"] and fragment in found[0].message, found


def test_pull_secret_rule_accepts_auth_and_creds_store():
    assert pull_secret_problems('{"auths": {"quay.io": {"auth": "dXNlcjpwYXNz"}, "r.lab": {"credsStore": "x"}}}') == []


# openshift/installer pkg/validate/validate.go, SSHPublicKey (golang.org/x/crypto/ssh ParseAuthorizedKey:
# the base64 blob must parse as a public key).
@pytest.mark.parametrize("value, fragment", [
    ("", "is empty"),
    ("AAAAC3NzaC1lZDI1NTE5AAAAIC8wDKIPxTD", "no key type"),
    ("ssh-ed25519", "without its key data"),
    ("ssh-ed25519 not*base64", "not base64"),
    (ED25519.replace("ssh-ed25519", "ssh-rsa", 1), "not a ssh-rsa key"),
    (ED25519 + "\nssh-ed25519 AAAA", "line 2: the key data is truncated"),
])
def test_ssh_key_rule_of_openshift_install(value, fragment):
    found = ssh_key_problems(value)
    assert found and all(p.path == "gpu-lab:sshPublicKey" for p in found) and fragment in found[-1].message, found


def test_helper_defaults_pin_nothing_and_serve_as_rhel_httpd(openshift_sections):
    helper = load_lab(openshift_sections).openshift.helper
    assert helper.host_key is None
    assert helper.http_group == "apache"  # RHEL's httpd package runs as apache:apache
    assert helper.paths.httpd_drop_in == "/etc/httpd/conf.d/gpu-lab-ignition.conf"


def test_helper_host_key_is_kept_as_one_key_line(openshift_sections):
    openshift_sections["openshift"]["helper"]["hostKey"] = ED25519 + "\n"
    assert load_lab(openshift_sections).openshift.helper.host_key == ED25519


def test_ssh_key_rule_accepts_keys_options_and_comments():
    assert ssh_key_problems(ED25519) == []
    assert ssh_key_problems(f'# core\nno-pty,from="10.0.0.1" {ED25519}\n\n{ED25519}\n') == []
