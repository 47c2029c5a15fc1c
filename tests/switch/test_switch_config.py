"""The `switches` section: structure, defaults and every rule, against the lab stack's config."""

from __future__ import annotations

import copy

import pytest

from components.config import load_lab
from components.model import ConfigError
from components.switch.model import SN2700_BUFFER_KB


def problems(sections: dict) -> list[tuple[str, str]]:
    """(path, message) of every problem load_lab reports; [] when the config is valid."""
    try:
        load_lab(sections)
    except ConfigError as err:
        return [(p.path, p.message) for p in err.problems]
    return []


def paths(sections: dict) -> list[str]:
    return [path for path, _ in problems(sections)]


@pytest.fixture
def lab(lab_sections) -> dict:
    return lab_sections


@pytest.fixture
def sw(lab) -> dict:
    """The lab's switch, mutable in place."""
    return lab["switches"][0]


def rails_switch(lab: dict) -> dict:
    """A Cumulus switch with the guide's two rails (VLAN 111/112), added to the lab."""
    sw = {
        "name": "sw02",
        "os": "cumulus",
        "managementAddress": "172.16.31.3",
        "user": "cumulus",
        "ports": {
            "rails": [
                {"subnet": "10.10.11.0/24", "ports": ["swp1", "swp2"], "hostInterface": "enp5s0"},
                {"subnet": "10.10.12.0/24", "ports": ["swp3", "swp4"], "hostInterface": "enp132s0"},
            ]
        },
    }
    lab["switches"].append(sw)
    return sw


# ---------------------------------------------------------------- the lab as written


def test_lab_stack_switch_is_valid_and_has_the_guides_settings(lab):
    cfg = load_lab(lab)
    (sw,) = cfg.switches
    assert (sw.name, sw.os) == ("sw01", "onyx")
    assert cfg.plan.switches[0].roce_ports == ["1/1", "1/2", "1/3", "1/4"]
    r = sw.roce
    assert (r.traffic_class, r.ecn_min_kb, r.ecn_max_kb) == (3, 150, 1500)
    assert (r.pfc_mode, r.pfc_priority, r.trust, r.mtu, r.buffer_kb) == ("lossless", 3, "dscp", 9216, 16384)


def test_defaults_are_the_guides(lab, sw):
    del sw["roce"]
    r = load_lab(lab).switches[0].roce
    assert (r.traffic_class, r.ecn_min_kb, r.ecn_max_kb, r.pfc_priority, r.trust, r.mtu) == (3, 150, 1500, 3, "dscp", 9216)
    assert r.buffer_kb == SN2700_BUFFER_KB == 16 * 1024


def test_rails_default_to_the_guides_vlans_111_and_112(lab):
    rails_switch(lab)
    cfg = load_lab(lab)
    assert cfg.plan.switches[1].rail_vlans == [111, 112]


def test_host_side_comes_from_vsphere_or_follows_the_switch_on_bare_metal(lab):
    lab["vsphere"]["networks"]["rdma"]["mtu"] = 9100
    lab["vsphere"]["vds"]["mtu"] = 9200
    cfg = load_lab(lab)
    host = cfg.plan.switches[0].hosts
    assert (host.pfc_priority, host.trust, host.mtu, host.mtu_path) == (3, "dscp", 9200, "vsphere.vds.mtu")
    cfg = load_lab({"switches": lab["switches"]})  # bare metal: no vSphere (nor its VMs in openshift)
    host = cfg.plan.switches[0].hosts
    assert (host.pfc_priority, host.trust, host.mtu) == (3, "dscp", 9000)


# ---------------------------------------------------------------- structure


@pytest.mark.parametrize("key, value, path", [
    ("os", "eos", "switches[0].os"),
    ("managementAddress", "not-an-ip", "switches[0].managementAddress"),
    ("user", "ad min", "switches[0].user"),
    ("colour", "blue", "switches[0].colour"),
])
def test_structural_errors_name_the_key(lab, sw, key, value, path):
    sw[key] = value
    assert path in paths(lab)


# pulumi-command parses connection.hostKey with golang.org/x/crypto/ssh ParseAuthorizedKey
# (provider/pkg/provider/remote/connection.go, SSHConfig): a known type, then base64 key data naming it.
@pytest.mark.parametrize("value, fragment", [
    ("AAAAC3NzaC1lZDI1NTE5AAAAIC8wDKIPxTD", "no key type"),
    ("ssh-ed25519 not*base64", "not base64"),
    ("ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIC8wDKIPxTD+BPx9yKrkMAGoDRrmSxLth9xr0wbOTtcO", "not a ssh-rsa key"),
    ("[172.16.31.2]:22 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC8wDKIPxTD+BPx9yKrkMAGoDRrmSxLth9xr0wbOTtcO",
     "starts with '[172.16.31.2]:22', not the key type"),
])
def test_a_host_key_that_is_not_an_openssh_public_key_is_refused(lab, sw, value, fragment):
    sw["hostKey"] = value
    [(path, message)] = problems(lab)
    assert path == "switches[0].hostKey" and fragment in message and "ssh-keyscan -t ed25519" in message, message


def test_a_host_key_line_as_ssh_keyscan_prints_it_is_taken_without_the_comment_or_blanks(lab, sw):
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC8wDKIPxTD+BPx9yKrkMAGoDRrmSxLth9xr0wbOTtcO"
    sw["hostKey"] = f"  {key} root@sw01\n"
    assert load_lab(lab).switches[0].host_key == f"{key} root@sw01"


@pytest.mark.parametrize("key, value", [
    ("pfcMode", "semi-lossless"), ("trust", "both"), ("pfcPriority", 8), ("mtu", 9300), ("trafficClass", -1),
])
def test_roce_values_outside_their_range_are_rejected(lab, sw, key, value):
    sw["roce"][key] = value
    assert f"switches[0].roce.{key}" in paths(lab)


# ---------------------------------------------------------------- rules


def test_ecn_minimum_above_maximum(lab, sw):
    sw["roce"]["ecnMinKb"] = 1600
    found = problems(lab)
    assert [p for p, _ in found] == ["switches[0].roce.ecnMinKb"]
    assert "below the maximum" in found[0][1]
    sw["roce"]["ecnMinKb"] = 1500  # equal is no ramp either
    assert paths(lab) == ["switches[0].roce.ecnMinKb"]


def test_ecn_thresholds_beyond_the_buffer(lab, sw):
    sw["roce"]["bufferKb"] = 1024
    found = dict(problems(lab))
    assert set(found) == {"switches[0].roce.ecnMaxKb"}
    assert "1-1024" in found["switches[0].roce.ecnMaxKb"]
    sw["roce"]["bufferKb"] = 100
    assert set(paths(lab)) == {"switches[0].roce.ecnMinKb", "switches[0].roce.ecnMaxKb"}


def test_pfc_priority_differing_from_the_hosts(lab, sw):
    lab["vsphere"]["networks"]["rdma"]["pfcPriority"] = 4
    found = dict(problems(lab))
    assert set(found) == {"switches[0].roce.pfcPriority"}
    assert "vsphere.networks.rdma.pfcPriority" in found["switches[0].roce.pfcPriority"]


def test_trust_differing_from_the_hosts(lab):
    lab["vsphere"]["networks"]["rdma"]["trust"] = "pcp"
    assert paths(lab) == ["switches[0].roce.trust"]


def test_switch_mtu_below_the_hosts(lab, sw):
    sw["roce"]["mtu"] = 4200
    found = dict(problems(lab))
    assert set(found) == {"switches[0].roce.mtu"}
    assert "9000-9216" in found["switches[0].roce.mtu"]
    sw["roce"]["mtu"] = 9000  # equal is enough: both sides count the MTU without the Ethernet header
    assert paths(lab) == []


def test_traffic_class_must_be_the_roce_priority(lab, sw):
    sw["roce"]["trafficClass"] = 4
    assert paths(lab) == ["switches[0].roce.trafficClass"]


def test_port_used_twice_within_a_role(lab, sw):
    sw["ports"]["hosts"].append("1/2")
    found = dict(problems(lab))
    assert set(found) == {"switches[0].ports.hosts[4]"}
    assert "switches[0].ports.hosts[1]" in found["switches[0].ports.hosts[4]"]


def test_port_used_twice_across_roles(lab, sw):
    sw["ports"]["rails"] = [{"subnet": "10.10.11.0/24", "ports": ["1/5", "1/3"]}]
    assert paths(lab) == ["switches[0].ports.rails[0].ports[1]"]


def test_the_same_port_name_on_two_switches_is_fine(lab):
    rails_switch(lab)["ports"]["hosts"] = ["swp10"]
    other = copy.deepcopy(lab["switches"][1])
    other.update(name="sw03", managementAddress="172.16.31.4")
    lab["switches"].append(other)
    assert paths(lab) == []


def test_port_names_follow_the_os(lab, sw):
    sw["ports"]["hosts"][0] = "swp1"
    assert paths(lab) == ["switches[0].ports.hosts[0]"]
    rails_switch(lab)["ports"]["rails"][0]["ports"][0] = "1/1"
    assert "switches[1].ports.rails[0].ports[0]" in paths(lab)


def test_a_switch_without_ports(lab, sw):
    sw["ports"] = {}
    assert paths(lab) == ["switches[0].ports"]


def test_duplicate_vlans_across_rails(lab):
    rails = rails_switch(lab)["ports"]["rails"]
    rails[1]["vlan"] = 111  # the first rail defaults to 111
    found = dict(problems(lab))
    assert set(found) == {"switches[1].ports.rails[1].vlan"}
    assert "rail 0" in found["switches[1].ports.rails[1].vlan"]


def test_two_rails_on_one_subnet(lab):
    rails = rails_switch(lab)["ports"]["rails"]
    rails[1]["subnet"] = "10.10.11.0/25"  # inside the first rail's /24
    assert paths(lab) == ["switches[1].ports.rails[1].subnet"]


def test_rail_subnet_on_the_management_network(lab):
    rails_switch(lab)["ports"]["rails"][0]["subnet"] = "172.16.7.0/24"
    assert paths(lab) == ["switches[1].ports.rails[0].subnet"]


def test_duplicate_switch_names_and_addresses(lab, sw):
    twin = copy.deepcopy(sw)
    lab["switches"].append(twin)
    messages = " | ".join(m for _, m in problems(lab))
    assert "'sw01' appears more than once" in messages
    assert "172.16.31.2 is given to more than one switch" in messages


def test_switches_of_one_fabric_must_agree(lab):
    rails_switch(lab)["roce"] = {"pfcMode": "lossy"}
    assert paths(lab) == ["switches[1].roce.pfcMode"]


def test_management_address_taken_by_a_vm(lab, sw):
    sw["managementAddress"] = "172.16.7.51"  # w01
    found = dict(problems(lab))
    assert "w01" in found["switches[0].managementAddress"]


def test_bare_metal_lab_without_vsphere_checks_the_script_mtu(lab, sw):
    bare = {"switches": lab["switches"]}
    assert paths(bare) == []
    sw["roce"]["mtu"] = 4200
    assert paths(bare) == ["switches[0].roce.mtu"]
