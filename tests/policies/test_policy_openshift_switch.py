"""OpenShift and Spectrum switch rules on the compliant lab and one-property mutations."""

import builders
import pytest
from policy_helpers import props, violations

from rules import openshift, switch


def test_compliant_lab_passes_openshift_and_switch_rules(lab):
    for policy in openshift.POLICIES + switch.POLICIES:
        assert violations(policy, lab) == [], policy.name


# ---------------------------------------------------------------- control plane


@pytest.mark.parametrize("count", [1, 2, 5])
def test_other_than_three_control_plane_nodes_is_refused(lab, count):
    props(lab, "openshift")["controlPlaneCount"] = count
    assert violations(openshift.three_control_plane, lab) == [(
        "openshift", f"cluster '{builders.LAB_CLUSTER_NAME}' has {count} control-plane node(s); OpenShift needs 3 for etcd quorum and "
                  "uninterrupted upgrades (or singleNode: true)")]


def test_single_node_openshift_is_exempt(lab):
    props(lab, "openshift").update(controlPlaneCount=1, singleNode=True)
    assert violations(openshift.three_control_plane, lab) == []


def test_control_plane_count_comes_from_config(lab):
    props(lab, "openshift")["controlPlaneCount"] = 5
    assert violations(openshift.three_control_plane, lab, {"controlPlaneCount": 5}) == []


# ---------------------------------------------------------------- load balancer


def test_missing_load_balancer_ports_are_refused(lab):
    props(lab, "openshift")["loadBalancer"]["frontends"] = [6443, 443]
    assert violations(openshift.lb_ports, lab) == [(
        "openshift", "the load balancer does not serve port(s) [22623, 80]; it must serve [6443, 22623, 80, 443] "
                  "(API 6443, machine config 22623, ingress 80/443)")]


def test_a_port_without_backends_is_refused(lab):
    props(lab, "openshift")["loadBalancer"]["backends"]["443"] = []
    assert violations(openshift.lb_ports, lab) == [
        ("openshift", "the load balancer serves port 443 but has no backend nodes for it")]


def test_required_ports_come_from_config(lab):
    props(lab, "openshift")["loadBalancer"]["frontends"] = [6443, 22623]
    assert violations(openshift.lb_ports, lab, {"requiredPorts": [6443, 22623]}) == []


def test_bootstrap_backend_after_install_is_reported(lab):
    props(lab, "openshift")["loadBalancer"]["backends"]["22623"].append("bootstrap")
    assert violations(openshift.lb_no_bootstrap, lab) == [(
        "openshift", "bootstrap is off but node 'bootstrap' is still a backend of port 22623; remove it from the "
                  "load balancer")]


def test_bootstrap_vm_of_the_plan_is_recognised_by_role(lab):
    props(lab, "vms")["vms"].append({"name": "boot01", "role": "bootstrap", "nics": []})
    props(lab, "openshift")["loadBalancer"]["backends"]["6443"].append("boot01.kub1.lab.local")
    [(name, message)] = violations(openshift.lb_no_bootstrap, lab)
    assert "node 'boot01.kub1.lab.local' is still a backend of port 6443" in message


def test_bootstrap_node_named_by_the_cluster_is_recognised(lab):
    ocp = props(lab, "openshift")
    ocp["bootstrapNode"] = builders.BOOTSTRAP
    ocp["loadBalancer"]["backends"]["22623"].append(builders.BOOTSTRAP)
    [(name, message)] = violations(openshift.lb_no_bootstrap, lab)
    assert f"node '{builders.BOOTSTRAP}' is still a backend of port 22623" in message


def test_bootstrap_backend_during_install_is_expected(lab):
    ocp = props(lab, "openshift")
    ocp["bootstrap"] = True
    ocp["loadBalancer"]["backends"]["6443"].insert(0, "bootstrap")
    assert violations(openshift.lb_no_bootstrap, lab) == []


# ---------------------------------------------------------------- switch


@pytest.mark.parametrize("low, high, message", [
    (1500, 150, "switch 'sw01' starts ECN marking at 1500 KB but its maximum is 150 KB; the minimum must be below "
                "the maximum (the guide uses 150 / 1500)"),
    (500, 500, "switch 'sw01' starts ECN marking at 500 KB but its maximum is 500 KB; the minimum must be below "
               "the maximum (the guide uses 150 / 1500)"),
    (-1, 100, "switch 'sw01' has ECN thresholds -1/100 KB; both must be at least 1 KB"),
    # the configuration check's floor (components/switch/model.py, labrules.roce.ECN_MIN_KB_FLOOR): 0 too
    (0, 100, "switch 'sw01' has ECN thresholds 0/100 KB; both must be at least 1 KB"),
])
def test_misordered_ecn_thresholds_are_refused(lab, low, high, message):
    props(lab, "sw01").update(ecnMinKb=low, ecnMaxKb=high)
    assert violations(switch.ecn_min_below_max, lab) == [("sw01", message)]


def test_switch_pfc_priority_other_than_the_hosts_is_refused(lab):
    props(lab, "sw01").update(pfcPriority=4, hostPfcPriority=4)
    assert violations(switch.pfc_priority, lab) == [(
        "sw01", "switch 'sw01' runs PFC on priority 4 but the hosts send RoCE on priority 3 (fabric 'roce' "
               "pfcPriority); make them equal")]


def test_switch_told_another_host_priority_is_refused(lab):
    props(lab, "sw01")["hostPfcPriority"] = 5
    assert violations(switch.pfc_priority, lab) == [(
        "sw01", "switch 'sw01' runs PFC on priority 3 but the hosts send RoCE on priority 5 (its hostPfcPriority); "
               "make them equal")]


def test_without_a_fabric_the_switch_compares_with_its_host_priority(lab):
    lab["resources"] = [r for r in lab["resources"] if r["name"] != "roce"]
    for r in lab["resources"]:
        if r.get("parent") == "roce":
            del r["parent"]
    props(lab, "sw01")["pfcPriority"] = 4
    [(name, message)] = violations(switch.pfc_priority, lab)
    assert message.endswith("on priority 3 (its hostPfcPriority); make them equal")


def test_switch_trust_other_than_the_hosts_is_refused(lab):
    props(lab, "sw01")["trust"] = "pcp"
    assert violations(switch.trust_matches, lab) == [(
        "sw01", "switch 'sw01' trusts pcp but the hosts mark RoCE by dscp (fabric 'roce' trust); use the same "
               "trust mode on both")]
