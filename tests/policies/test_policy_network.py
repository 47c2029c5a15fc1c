"""Network rules on the compliant lab and on one-property mutations of it."""

import pytest
from plan_fixtures import planned_vm
from policy_helpers import find, props, violations

from rules import network


def test_compliant_lab_passes_every_network_rule(lab):
    for policy in network.POLICIES:
        assert violations(policy, lab) == [], policy.name


# ---------------------------------------------------------------- no LACP


@pytest.mark.parametrize("resource, what, value", [
    ("roce-vds", "vDS 'lab-roce-vds'", True),
    ("roce-vds", "vDS 'lab-roce-vds'", "true"),
    ("roce-rdma-pg", "port group 'lab-rdma'", True),
])
def test_lacp_on_the_fabric_is_refused(lab, resource, what, value):
    props(lab, resource)["lacpEnabled"] = value
    [(name, message)] = violations(network.vds_no_lacp, lab)
    assert name == resource
    assert message.startswith(f"{what} has lacpEnabled=true; RDMA uplinks must not be aggregated")


def test_lacp_false_and_other_switches_are_left_alone(lab):
    props(lab, "roce-vds")["lacpEnabled"] = False
    other = {k: v for k, v in find(lab, "roce-vds").items() if k not in ("urn", "parent")}
    other["name"] = "mgmt-vds"
    other["properties"] = dict(other["properties"], name="mgmt-vds", lacpEnabled=True)
    lab["resources"].append(other)
    assert violations(network.vds_no_lacp, lab) == []


# ---------------------------------------------------------------- MTU


@pytest.mark.parametrize("resource, key, value, message", [
    ("roce-vds", "maxMtu", 1500,
     "vDS 'lab-roce-vds' maxMtu is 1500; RoCE needs jumbo frames end to end: set 9000 or more"),
    ("roce-vds", "maxMtu", None,
     "vDS 'lab-roce-vds' maxMtu is not set, so vSphere uses 1500; set it to 9000 or more (jumbo frames)"),
    ("roce-esx02-vmk", "mtu", 4000,
     "vmk 'roce-esx02-vmk' mtu is 4000; RoCE needs jumbo frames end to end: set 9000 or more"),
    ("roce", "rdmaMtu", 1500,
     "fabric 'roce' rdmaMtu is 1500; RoCE needs jumbo frames end to end: set 9000 or more"),
    ("sw01", "mtu", 1500, "switch 'sw01' mtu is 1500; RoCE needs jumbo frames end to end: set 9000 or more"),
    ("sw01", "hostMtu", 9500, "switch 'sw01' mtu is 9216; RoCE needs jumbo frames end to end: set 9500 or more"),
])
def test_small_mtu_is_refused(lab, resource, key, value, message):
    if value is None:
        del props(lab, resource)[key]
    else:
        props(lab, resource)[key] = value
    assert violations(network.rdma_mtu, lab) == [(resource, message)]


def test_mtu_threshold_comes_from_config(lab):
    found = violations(network.rdma_mtu, lab, {"minMtu": 9100})
    assert sorted(name for name, _ in found) == sorted(
        ["roce-vds", "roce"] + [f"roce-{h}-vmk" for h in ("esx01", "esx02", "esx03",
                                                                             "esx04")])
    assert all("set 9100 or more" in m for _, m in found)


# ---------------------------------------------------------------- the RDMA NIC is the only uplink


@pytest.mark.parametrize("mutate, message", [
    (lambda p: p.update(uplinks=["uplink1", "uplink2"]),
     "vDS 'lab-roce-vds' defines 2 uplinks ['uplink1', 'uplink2']; the RDMA card must be its only uplink"),
    (lambda p: p.update(activeUplinks=["uplink1", "uplink2"]),
     "vDS 'lab-roce-vds' has 2 active uplinks ['uplink1', 'uplink2']; keep exactly one (the RDMA NIC)"),
    (lambda p: p.update(standbyUplinks=["uplink2"]),
     "vDS 'lab-roce-vds' has standby uplinks ['uplink2']; a failover to a non-RDMA NIC"),
    (lambda p: p["hosts"][2].update(devices=["vmnic4", "vmnic5"]),
     "vDS 'lab-roce-vds' takes 2 NICs ['vmnic4', 'vmnic5'] from host host-esx03; give it exactly one"),
])
def test_a_second_uplink_is_refused(lab, mutate, message):
    mutate(props(lab, "roce-vds"))
    [(name, found)] = violations(network.vds_single_uplink, lab)
    assert name == "roce-vds"
    assert found.startswith(message)


# ---------------------------------------------------------------- one NIC per subnet


def test_two_nics_on_one_network_are_refused(lab):
    nics = props(lab, "vms-w02")["networkInterfaces"]
    nics.append(dict(nics[0]))
    assert violations(network.one_nic_per_subnet, lab) == [
        ("vms-w02", f"VM 'w02' has 2 NICs on network {nics[0]['networkId']}; give each NIC its own subnet")]


def test_two_nics_on_one_subnet_in_the_vm_plan_are_refused(lab):
    entry = planned_vm(lab, "w02")
    entry["nics"][1]["subnet"] = entry["nics"][0]["subnet"]
    assert violations(network.one_nic_per_subnet, lab) == [
        ("vms", "VM 'w02' has 2 NICs on subnet 172.16.7.0/24; give each NIC its own subnet")]


# ---------------------------------------------------------------- vrdma NICs on a DPG


def test_pvrdma_nic_on_a_standard_network_is_refused(lab):
    planned_vm(lab, "w01")["nics"][1]["network"] = "VM Network"
    [(name, message)] = violations(network.pvrdma_nic_on_dpg, lab)
    assert name == "vms"
    assert message.startswith("VM 'w01' NIC 1 is a PVRDMA (vmxnet3vrdma) adapter on network 'VM Network', which "
                              "is not a distributed port group of this stack (['lab-management', 'lab-rdma'])")


def test_pvrdma_vm_whose_networks_depend_on_no_port_group_is_refused(lab):
    find(lab, "vms-w03")["propertyDependencies"] = {"networkInterfaces": []}
    assert violations(network.pvrdma_nic_on_dpg, lab) == [(
        "vms-w03", "VM 'w03' has a PVRDMA (vmxnet3vrdma) NIC but none of its networks is a distributed port "
                    "group of this stack; attach the PVRDMA NIC to the RDMA vDS port group")]


def test_a_pvrdma_vm_whose_networks_depend_on_the_rdma_port_group_passes(lab):
    find(lab, "vms-w03")["propertyDependencies"] = {"networkInterfaces": ["roce-rdma-pg"]}
    assert violations(network.pvrdma_nic_on_dpg, lab) == []


def test_without_dependency_information_the_vm_is_not_judged(lab):
    assert "propertyDependencies" not in find(lab, "vms-w03")  # plan.json records none
    assert violations(network.pvrdma_nic_on_dpg, lab) == []


# ---------------------------------------------------------------- hosts ready for PVRDMA


def _drop(stack, name):
    stack["resources"] = [r for r in stack["resources"] if r["name"] != name]


@pytest.mark.parametrize("mutate, resource, message", [
    (lambda s: _drop(s, "roce-esx02-pvrdma-vmknic"), "roce",
     "host esx02 does not set the advanced option Net.PVRDMAVmknic; PVRDMA needs it to name the RDMA vmk"),
    (lambda s: props(s, "roce-esx02-pvrdma-vmknic").update(value="vmnic4"), "roce",
     "host esx02 sets Net.PVRDMAVmknic to 'vmnic4', which is not a vmk name (e.g. vmk3)"),
    (lambda s: props(s, "roce-esx01-pvrdma-ruleset").update(enabled=False), "roce",
     "host esx01 does not enable the pvrdma firewall ruleset; PVRDMA traffic (port 28250) would be blocked"),
    (lambda s: _drop(s, "roce-esx04-pvrdma-ruleset"), "roce",
     "host esx04 does not enable the pvrdma firewall ruleset; PVRDMA traffic (port 28250) would be blocked"),
    (lambda s: props(s, "roce-esx04-pvrdma-ruleset").update(ruleset="ssh"), "roce",
     "host esx04 does not enable the pvrdma firewall ruleset; PVRDMA traffic (port 28250) would be blocked"),
    (lambda s: props(s, "roce")["hosts"][1].update(rdmaUplinks=[]), "roce",
     "host esx02 has no RDMA uplink in the fabric; list its ConnectX NIC"),
    (lambda s: props(s, "roce-vds").update(name="other-vds"), "roce",
     "fabric 'roce' names vDS 'lab-roce-vds', but no vDS of that name is in the stack; its hosts would "
     "have no RDMA uplink"),
    (lambda s: props(s, "roce-vds")["hosts"].pop(), "roce-vds",
     "vDS 'lab-roce-vds' joins 3 hosts but the fabric has 4 (esx01, esx02, esx03, esx04); every "
     "RDMA host needs its RDMA NIC as an uplink of the vDS"),
    (lambda s: props(s, "roce-vds")["hosts"][3].update(devices=["vmnic0"]), "roce-vds",
     "vDS 'lab-roce-vds' member host-esx04 has no RDMA uplink: ['vmnic0'] are not among the fabric's RDMA "
     "NICs ['vmnic4']"),
])
def test_a_host_missing_a_pvrdma_piece_is_refused(lab, mutate, resource, message):
    mutate(lab)
    assert violations(network.rdma_host_ready, lab) == [(resource, message)]
