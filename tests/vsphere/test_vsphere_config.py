"""Every vSphere configuration rule, passing and failing, with the message checked."""

import copy

import builders
import pytest

from components.config import load_lab
from components.model import ConfigError


@pytest.fixture
def lab_sections(lab_sections):
    """Only the vsphere section: these are its rules (other sections test theirs)."""
    return {"vsphere": lab_sections["vsphere"]}


def test_the_whole_lab_stack_is_valid(lab_config):
    assert problems(builders.sections(lab_config)) == []


def problems(sections) -> list[str]:
    try:
        load_lab(sections)
    except ConfigError as err:
        return [str(p) for p in err.problems]
    return []


def only(sections, fragment: str) -> str:
    found = problems(sections)
    assert len(found) == 1, found
    assert fragment in found[0], found[0]
    return found[0]


def test_the_lab_stack_is_valid_and_matches_the_guide(lab_sections):
    lab = load_lab(lab_sections)
    hosts = lab.hosts()
    assert [h.name for h in hosts] == ["esx01", "esx02", "esx03", "esx04"]
    assert [h.vmk_address for h in hosts] == [f"192.168.0.{n}" for n in (24, 25, 26, 27)]
    workers = [v for v in lab.vms() if v.role == "worker"]
    assert [(v.name, v.rdma_address) for v in workers] == [
        (f"w0{i}", f"192.168.0.5{i}") for i in (1, 2, 3, 4)]
    assert {(v.cpus, v.memory_gb, v.disk_gb) for v in workers} == {(4, 24, 50)}
    assert [v.host for v in workers] == ["esx01", "esx02", "esx03", "esx04"]
    assert lab.vsphere.management_host == "esx00"


def test_listed_addresses_equal_derived_ones(lab_sections):
    listed = copy.deepcopy(lab_sections)
    listed["vsphere"]["workers"]["rdmaAddresses"] = [f"192.168.0.5{i}" for i in (1, 2, 3, 4)]
    assert [v.rdma_address for v in load_lab(listed).vms()] == [v.rdma_address for v in load_lab(lab_sections).vms()]


def test_address_outside_its_subnet(lab_sections):
    lab_sections["vsphere"]["workers"]["rdmaAddresses"] = ["192.168.0.51", "192.168.0.52", "192.168.1.53", "192.168.0.54"]
    msg = only(lab_sections, "vsphere.workers.rdmaAddresses[2]")
    assert "192.168.1.53" in msg and "not a usable host address of 192.168.0.0/24" in msg


def test_derived_addresses_running_past_the_subnet(lab_sections):
    lab_sections["vsphere"]["vmkAddresses"] = {"first": "192.168.0.253"}
    msg = only(lab_sections, "vsphere.vmkAddresses.first")
    assert "192.168.0.255" in msg


def test_duplicate_addresses(lab_sections):
    lab_sections["vsphere"]["workers"]["rdmaAddresses"] = ["192.168.0.51", "192.168.0.52", "192.168.0.52", "192.168.0.54"]
    msg = only(lab_sections, "vsphere.workers.rdmaAddresses")
    assert "192.168.0.52 is listed more than once" in msg


def test_wrong_number_of_listed_addresses(lab_sections):
    lab_sections["vsphere"]["workers"]["rdmaAddresses"] = ["192.168.0.51"]
    msg = only(lab_sections, "vsphere.workers.rdmaAddresses")
    assert "1 addresses for 4 workers" in msg


def test_duplicate_names(lab_sections):
    lab_sections["vsphere"]["workers"]["names"][3] = "m01"
    msg = only(lab_sections, "name 'm01' is used by more than one host or VM")
    # At the key the user wrote twice, naming every place the name is written.
    assert msg == ("vsphere.workers.names[3]: name 'm01' is used by more than one host or VM: "
                   "vsphere.controlPlane.names[0], vsphere.workers.names[3]; names must be unique")


def test_duplicate_management_address_names_the_vms_at_their_keys(lab_sections):
    lab_sections["vsphere"]["bootstrap"]["managementAddress"] = "172.16.7.12"
    msg = only(lab_sections, "management address 172.16.7.12")
    assert msg == ("vsphere.controlPlane.managementAddresses.first: management address 172.16.7.12 is given to "
                   "more than one VM: bs01 (vsphere.bootstrap.managementAddress), m02 "
                   "(vsphere.controlPlane.managementAddresses.first); each VM needs its own")


def test_duplicate_mac_names_the_vms_at_their_keys(lab_sections):
    lab_sections["vsphere"]["workers"]["macs"] = ["00:50:56:00:00:01", "00:50:56:00:00:02",
                                                  "00:50:56:00:00:01", "00:50:56:00:00:04"]
    msg = only(lab_sections, "MAC 00:50:56:00:00:01")
    assert msg.startswith("vsphere.workers.macs[2]: ") and "w01 (vsphere.workers.macs[0])" in msg \
        and "w03 (vsphere.workers.macs[2])" in msg


def test_duplicate_host_names(lab_sections):
    lab_sections["vsphere"]["workerHosts"][1]["name"] = "esx01"
    found = problems(lab_sections)
    assert any("host name 'esx01' appears more than once" in p for p in found), found


def test_duplicate_macs(lab_sections):
    lab_sections["vsphere"]["workers"]["macs"] = ["00:50:56:00:00:01", "00:50:56:00:00:02",
                                                  "00:50:56:00:00:01", "00:50:56:00:00:04"]
    only(lab_sections, "MAC 00:50:56:00:00:01 is given to more than one VM")


def test_malformed_mac_is_a_structural_error(lab_sections):
    lab_sections["vsphere"]["workers"]["macs"] = ["00:50:56:00:00:01", "00:50:56:zz:00:01",
                                                  "00:50:56:00:00:03", "00:50:56:00:00:04"]
    msg = only(lab_sections, "vsphere.workers.macs[1]")
    assert "is not a MAC address" in msg


def test_two_nics_of_one_vm_on_the_same_subnet(lab_sections):
    lab_sections["vsphere"]["networks"]["management"]["vmCidr"] = "192.168.0.0/24"
    lab_sections["vsphere"]["workers"]["managementAddresses"] = {"first": "192.168.0.151"}
    lab_sections["vsphere"]["controlPlane"]["managementAddresses"] = {"first": "192.168.0.111"}
    lab_sections["vsphere"]["bootstrap"]["managementAddress"] = "192.168.0.110"
    found = problems(lab_sections)
    assert "vsphere.networks.management.vmCidr: 192.168.0.0/24 overlaps the RDMA network 192.168.0.0/24; " \
           "each NIC needs its own subnet" in found
    assert "vsphere: VM w01 has two NICs on 192.168.0.0/24; one NIC per subnet" in found


def test_vmk_address_colliding_with_a_vm(lab_sections):
    lab_sections["vsphere"]["vmkAddresses"] = ["192.168.0.24", "192.168.0.25", "192.168.0.53", "192.168.0.27"]
    msg = only(lab_sections, "vsphere.workers.rdmaAddresses[2]")
    assert "192.168.0.53 of VM w03 collides with the vmk of host esx03" in msg


@pytest.mark.parametrize("key", ["networks.rdma.mtu", "vds.mtu"])
def test_mtu_below_9000_on_the_rdma_network(lab_sections, key):
    section, field = key.rsplit(".", 1)
    node = lab_sections["vsphere"]
    for part in section.split("."):
        node = node[part]
    node[field] = 1500
    found = problems(lab_sections)
    assert any(p.startswith(f"vsphere.{key}: 1500 is below 9000") for p in found), found


def test_jumbo_mtu_above_9000_passes(lab_sections):
    lab_sections["vsphere"]["networks"]["rdma"]["mtu"] = 9000
    lab_sections["vsphere"]["vds"]["mtu"] = 9216
    assert problems(lab_sections) == []


def test_lacp_on_rdma_uplinks(lab_sections):
    lab_sections["vsphere"]["vds"]["lacp"] = True
    msg = only(lab_sections, "vsphere.vds.lacp")
    assert "LACP is not allowed on RDMA uplinks" in msg and "set false" in msg


@pytest.mark.parametrize("group,field,value,minimum", [
    ("workers", "cpus", 2, 4),
    ("workers", "memoryGb", 16, 24),
    ("workers", "diskGb", 40, 50),
    ("controlPlane", "cpus", 2, 4),
    ("controlPlane", "memoryGb", 8, 16),
    ("controlPlane", "diskGb", 20, 50),
])
def test_sizing_below_the_guide(lab_sections, group, field, value, minimum):
    lab_sections["vsphere"][group]["sizing"][field] = value
    msg = only(lab_sections, f"vsphere.{group}.sizing.{field}")
    assert f"{value} is below the guide's" in msg and f"minimum of {minimum}" in msg


def test_larger_sizing_passes(lab_sections):
    lab_sections["vsphere"]["workers"]["sizing"] = {"cpus": 16, "memoryGb": 128, "diskGb": 200}
    assert problems(lab_sections) == []


@pytest.mark.parametrize("profile", ["v100-16c", "grid_v100-16", "grid_v100-16x", "GRID_V100-16C"])
def test_malformed_vgpu_profile(lab_sections, profile):
    lab_sections["vsphere"]["workers"]["vgpuProfile"] = profile
    msg = only(lab_sections, "vsphere.workers.vgpuProfile")
    assert "is not a vGPU profile" in msg and "grid_v100-16c" in msg


@pytest.mark.parametrize("profile", ["grid_v100-16c", "grid_a100-3-20c", "nvidia_l40s-24c", "grid_t4-8q"])
def test_well_formed_vgpu_profiles(lab_sections, profile):
    lab_sections["vsphere"]["workers"]["vgpuProfile"] = profile
    assert problems(lab_sections) == []


def test_hosts_that_differ_in_their_rdma_uplink_layout(lab_sections):
    lab_sections["vsphere"]["workerHosts"][2]["rdmaUplinks"] = ["vmnic5"]
    msg = only(lab_sections, "vsphere.workerHosts[2].rdmaUplinks")
    assert "differs from esx01's ['vmnic4']" in msg and "same RDMA uplink layout" in msg


@pytest.mark.parametrize("version", [11, 12, 16, 23])
def test_hardware_version_too_old_for_pvrdma_or_unknown_to_the_provider(lab_sections, version):
    # PVRDMA needs 13+ (VMware vSphere Networking, "PVRDMA Support"); pulumi-vsphere 4.18.2 accepts
    # 4, 7-11, 13-15, 17-22 (pulumi_vsphere/virtual_machine.py, hardware_version).
    lab_sections["vsphere"]["hardwareVersion"] = version
    only(lab_sections, f"vsphere.hardwareVersion: {version} is not allowed: PVRDMA needs virtual hardware 13 or "
                       "later, and pulumi-vsphere accepts 13-15, 17-22; or leave it out to keep the template's version")


@pytest.mark.parametrize("version", [13, 15, 17, 22])
def test_hardware_versions_the_provider_accepts(lab_sections, version):
    lab_sections["vsphere"]["hardwareVersion"] = version
    assert problems(lab_sections) == []


def test_hardware_version_is_optional(lab_sections):
    lab_sections["vsphere"].pop("hardwareVersion", None)
    assert load_lab(lab_sections).vsphere.hardware_version is None


def test_vds_version_the_provider_does_not_know(lab_sections):
    # terraform-provider-vsphere, vsphere/distributed_virtual_switch_helper.go, dvsVersions
    lab_sections["vsphere"]["vds"]["version"] = "7.0.1"
    only(lab_sections, "vsphere.vds.version: 7.0.1 is not a vDS version pulumi-vsphere can create; use one of "
                       "6.5.0, 6.6.0, 7.0.0, 7.0.2, 7.0.3, 8.0.0, 8.0.3")


def test_vds_version_too_old_for_pvrdma(lab_sections):
    lab_sections["vsphere"]["vds"]["version"] = "6.0.0"
    only(lab_sections, "vsphere.vds.version: 6.0.0: PVRDMA needs a vDS of version 6.5.0 or later")


def test_unknown_keys_and_bad_types_are_reported_together(lab_sections):
    lab_sections["vsphere"]["workers"]["sizng"] = {}
    lab_sections["vsphere"]["networks"]["rdma"]["cidr"] = "192.168.0.1/24"
    lab_sections["vsphere"]["vmkAddresses"] = {"first": "not-an-ip"}
    found = problems(lab_sections)
    assert any(p.startswith("vsphere.workers.sizng: unknown key") for p in found), found
    assert any(p.startswith("vsphere.networks.rdma.cidr:") and "not an IPv4 network" in p for p in found), found
    assert any(p.startswith("vsphere.vmkAddresses.first:") for p in found), found


def test_every_rule_problem_is_reported_at_once(lab_sections):
    vs = lab_sections["vsphere"]
    vs["vds"]["lacp"] = True
    vs["networks"]["rdma"]["mtu"] = 1500
    vs["workers"]["sizing"]["cpus"] = 1
    vs["workerHosts"][1]["rdmaUplinks"] = ["vmnic7"]
    with pytest.raises(ConfigError) as err:
        load_lab(lab_sections)
    paths = {p.path for p in err.value.problems}
    assert {"vsphere.vds.lacp", "vsphere.networks.rdma.mtu", "vsphere.workers.sizing.cpus",
            "vsphere.workerHosts[1].rdmaUplinks"} <= paths
    assert str(err.value).startswith(f"{len(err.value.problems)} problem(s) in the lab configuration:")


def test_unknown_section(lab_sections):
    lab_sections["vsphre"] = {}
    msg = only(lab_sections, "vsphre: unknown section; allowed: vsphere, openshift, switches, addons, lifecycle")
    assert msg


def test_more_than_one_rdma_uplink_per_host(lab_sections):
    for host in lab_sections["vsphere"]["workerHosts"]:
        host["rdmaUplinks"] = ["vmnic4", "vmnic5"]
    found = problems(lab_sections)
    assert len(found) == 4, found
    assert found[0] == ("vsphere.workerHosts[0].rdmaUplinks: 2 RDMA uplinks; the PVRDMA vDS takes exactly one "
                        "RoCE port per host (one NIC per subnet, no teaming); give one vmnic")


# ---------------------------------------------------------------- ESXi hosts are vCenter inventory names


@pytest.mark.parametrize("name", ["esx24.lab.example.com", "172.16.31.24", "ESX01", "fd00:31::24"])
def test_esxi_hosts_may_be_named_as_vcenter_lists_them(lab_sections, name):
    # vCenter lists a host under the address it was added by: an FQDN, an address, any case.
    lab_sections["vsphere"]["workerHosts"][0]["name"] = name
    lab_sections["vsphere"]["managementHost"] = f"mgmt-{name}" if ":" not in name else "fd00:31::21"
    assert problems(lab_sections) == []
    lab = load_lab(lab_sections)
    assert lab.hosts()[0].name == name


@pytest.mark.parametrize("name,fragment", [
    ("", "vsphere.workerHosts[0].name: must not be empty"),
    (" esx24.lab", "vsphere.workerHosts[0].name: ' esx24.lab' has leading or trailing whitespace"),
    ("esx24/lab", "vsphere.workerHosts[0].name: 'esx24/lab' contains '/'"),
    ("e" * 254, "is 254 characters; a host name has at most 253"),
])
def test_esxi_host_names_vcenter_could_not_list(lab_sections, name, fragment):
    lab_sections["vsphere"]["workerHosts"][0]["name"] = name
    only(lab_sections, fragment)


def test_host_names_differing_only_in_case_are_the_same_host(lab_sections):
    lab_sections["vsphere"]["workerHosts"][1]["name"] = "ESX01"
    only(lab_sections, "host name 'esx01' appears more than once")


def test_vm_names_stay_dns_labels(lab_sections):
    lab_sections["vsphere"]["workers"]["names"][0] = "Worker01.lab"
    only(lab_sections, "vsphere.workers.names[0]: 'Worker01.lab' is not a valid host name")
