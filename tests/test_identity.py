"""The lab's identity and the guard that refuses an edit a running lab cannot take (components/identity_rules.py,
components/dynamic/guard.py)."""

from __future__ import annotations

import copy

import builders
import yaml

from components.config import load_lab
from components.dynamic.guard import _PROVIDER
from components.identity_rules import identity_of, identity_problems, identity_warnings
from tools.mockrun import run_program


def lab(**changes) -> dict:
    config = builders.lab_stack()
    for path, value in changes.items():
        config = builders.with_value(config, path, value)
    return config


def identity(config: dict) -> dict:
    return identity_of(load_lab(builders.sections(config)))


def check(old: dict, new: dict) -> list[str]:
    """What the guard's check answers the engine for a stack deployed as `old` and now `new`."""
    result = _PROVIDER.check({"kind": "lab-identity", **old}, {"kind": "lab-identity", **new})
    assert all(f.property == "" for f in result.failures)  # the reason alone, not the property's value
    return [f.reason for f in result.failures]


def test_identity_holds_the_cluster_the_vsphere_section_and_the_bare_metal_nodes():
    found = identity(lab())
    assert found["cluster"]["clusterName"] == builders.LAB_CLUSTER_NAME
    assert found["vsphere"]["workers"]["names"] == builders.WORKERS
    assert found["bareMetal"] == {}
    assert identity(builders.baremetal_stack())["bareMetal"]["dgx-0"]


def test_adding_a_worker_at_the_end_is_fine():
    names = [*builders.WORKERS, "w05"]
    assert identity_problems(identity(lab()), identity(lab(**{"gpu-lab:vsphere.workers.names": names}))) == []


def test_removing_a_middle_worker_with_positional_forms_is_refused_with_the_lists_that_keep_the_others():
    before = identity(lab())
    after = identity(lab(**{"gpu-lab:vsphere.workers.names": ["w01", "w03", "w04"]}))
    (problem,) = identity_problems(before, after)
    assert problem.startswith("vsphere: the edit adds or removes a node")
    assert "w03: managementAddress 172.16.7.53 -> 172.16.7.52" in problem and "w01:" not in problem
    # the edit it proposes is YAML for the stack file; made, it moves nobody
    edit = yaml.safe_load(problem.split("(then make the edit):\n", 1)[1])["gpu-lab:vsphere"]
    kept = lab(**{"gpu-lab:vsphere.workers.names": ["w01", "w03", "w04"]})
    for key, value in edit["workers"].items():
        kept = builders.with_value(kept, f"gpu-lab:vsphere.workers.{key}", value)
    assert identity_problems(before, identity(kept)) == []


def test_a_changed_cluster_identity_is_refused_with_the_way_back():
    before = identity(lab())
    after = identity(lab(**{"gpu-lab:openshift.clusterName": "kub2", "gpu-lab:openshift.baseDomain": "lab.test"}))
    assert identity_problems(before, after) == [
        "openshift.clusterName: 'kub1' -> 'kub2': the cluster is installed once and cannot take this change in "
        "place; put 'kub1' back, or rebuild the lab on purpose instead (docs/day2.md, \"Take a lab down\")",
        "openshift.baseDomain: 'lab.local' -> 'lab.test': the cluster is installed once and cannot take this "
        "change in place; put 'lab.local' back, or rebuild the lab on purpose instead (docs/day2.md, \"Take a lab down\")",
    ]


def test_a_written_address_change_is_refused_but_a_written_host_change_is_a_migration():
    before = identity(lab())
    readdressed = identity(lab(**{"gpu-lab:vsphere.controlPlane.managementAddresses": ["172.16.7.21", "172.16.7.12",
                                                                                       "172.16.7.13"]}))
    (problem,) = identity_problems(before, readdressed)
    assert problem.startswith("vsphere.controlPlane.managementAddresses: m01: managementAddress 172.16.7.11 -> "
                              "172.16.7.21: a running node keeps its addresses")
    pinned = identity(lab(**{"gpu-lab:vsphere.workers.hosts": builders.WORKER_HOSTS}))
    moved = identity(lab(**{"gpu-lab:vsphere.workers.hosts": [builders.WORKER_HOSTS[1], *builders.WORKER_HOSTS[1:]]}))
    assert identity_problems(before, pinned) == []  # writing today's places changes nothing
    assert identity_problems(pinned, moved) == []


def test_a_bare_metal_node_keeps_its_address():
    config = builders.baremetal_stack()
    nodes = config["gpu-lab:openshift"]["nodes"]
    index = next(i for i, n in enumerate(nodes) if n["name"] == "dgx-0")
    (problem,) = identity_problems(identity(config), identity(builders.with_value(
        config, f"gpu-lab:openshift.nodes.{index}.address", "10.33.3.99")))
    assert problem.startswith("openshift.nodes: dgx-0: address ")


def test_the_guard_checks_only_an_existing_lab():
    new = identity(lab(**{"gpu-lab:openshift.clusterName": "kub2"}))
    assert check({}, new) == []  # first deployment: nothing to compare with
    assert len(check(identity(lab()), new)) == 1
    assert check(identity(lab()), identity(lab())) == []


def test_the_guard_has_a_provider_of_its_own_configured_with_nothing():
    run = run_program(builders.lab_stack())
    assert run.named("lab-guard").inputs == {}
    guard = run.named("lab-identity")
    assert guard.provider_name == "lab-guard" and set(guard.secret_paths()) <= {"__provider"}
    assert guard.plain()["vsphere"]["workers"]["managementAddresses"] == {"first": "172.16.7.51"}


# ---------------------------------------------------------------- renames and reuse in one `up`


def placed(names: list[str], addresses: list[int], hosts: list[str]) -> dict:
    """The test lab with listed worker addresses (172.16.7.<n>, 192.168.0.<n>) and hosts."""
    return lab(**{"gpu-lab:vsphere.workers.names": names,
                  "gpu-lab:vsphere.workers.managementAddresses": [f"172.16.7.{n}" for n in addresses],
                  "gpu-lab:vsphere.workers.rdmaAddresses": [f"192.168.0.{n}" for n in addresses],
                  "gpu-lab:vsphere.workers.hosts": hosts})


HOSTS = ["esx01", "esx02", "esx03", "esx04"]


def test_a_rename_that_keeps_the_addresses_is_refused_naming_both_nodes_and_the_two_steps():
    """w02 -> w09 with positional addresses: the new VM would be created, with w02's addresses
    and on its host, while w02 still runs."""
    before = identity(lab())
    after = identity(lab(**{"gpu-lab:vsphere.workers.names": ["w01", "w09", "w03", "w04"]}))
    (problem,) = identity_problems(before, after)
    assert problem.startswith("vsphere.workers.names: new node w09 would take management address 172.16.7.52, "
                              "RDMA address 192.168.0.52, the GPU share of host esx02 that node w02, removed in "
                              "the same `pulumi up`, still holds")
    assert "remove the old node in one `pulumi up`" in problem and "then add the new one in the next" in problem


def test_a_new_node_on_new_addresses_and_another_host_is_fine_beside_a_removal():
    before = identity(placed(["w01", "w02", "w03"], [51, 52, 53], HOSTS[:3]))
    after = identity(placed(["w01", "w03", "w09"], [51, 53, 59], [HOSTS[0], HOSTS[2], HOSTS[3]]))
    assert identity_problems(before, after) == []
    # on the removed node's host, with its vGPU: the GPU share is still the old VM's
    same_host = identity(placed(["w01", "w03", "w09"], [51, 53, 59], [HOSTS[0], HOSTS[2], HOSTS[1]]))
    (problem,) = identity_problems(before, same_host)
    assert "new node w09 would take the GPU share of host esx02 that node w02" in problem


def test_removing_or_renaming_a_control_plane_node_is_refused_with_the_etcd_member_replacement():
    before = identity(lab(**{"gpu-lab:vsphere.controlPlane.names": ["m01", "m02", "m03", "m04"]}))
    for names, what in ((["m01", "m02", "m04"], "removes control-plane node(s) m03"),
                        (["m01", "m02", "m05", "m04"], "renames control-plane node(s) m03 to m05")):
        problems = identity_problems(before, identity(lab(**{"gpu-lab:vsphere.controlPlane.names": names})))
        mine = [p for p in problems if p.startswith("vsphere.controlPlane.names:")]
        assert len(mine) == 1 and what in mine[0]
        assert "Replacing an unhealthy etcd member" in mine[0] and "https://docs.openshift.com/" in mine[0]


def test_a_vgpu_profile_change_beside_a_new_worker_is_refused():
    before = identity(lab())
    both = identity(lab(**{"gpu-lab:vsphere.workers.vgpuProfile": "grid_v100-32c",
                           "gpu-lab:vsphere.workers.names": [*builders.WORKERS, "w05"]}))
    (problem,) = identity_problems(before, both)
    assert problem.startswith("vsphere.workers.vgpuProfile: grid_v100-16c -> grid_v100-32c in the same `pulumi up` "
                              "as new worker(s) w05")
    assert identity_problems(before, identity(lab(**{"gpu-lab:vsphere.workers.vgpuProfile": "grid_v100-32c"}))) == []


# ---------------------------------------------------------------- a device is its address as well as its name


def _switch(config: dict, **changes) -> dict:
    config = copy.deepcopy(config)
    config["gpu-lab:switches"][0].update(changes)
    return config


def _cumulus(config: dict, name: str) -> dict:
    return _switch(config, name=name, os="cumulus", user="cumulus", ports={"hosts": ["swp1", "swp2", "swp3", "swp4"]})


def test_a_renamed_switch_that_changes_os_is_refused_with_the_two_ups():
    before = identity(lab())
    after = identity(_cumulus(lab(), "sw09"))
    (problem,) = identity_problems(before, after)
    assert problem.startswith("switches: sw09 takes address 172.16.31.2 of sw01, removed in the same `pulumi up`, "
                              "and its os 'onyx' -> 'cumulus': one device under two names")
    assert "retire the old switch's configuration first: remove it from gpu-lab:switches in one `pulumi up`" in problem
    assert check(before, after) == [problem]


def test_two_names_for_one_address_are_refused_even_with_the_same_os():
    (problem,) = identity_problems(identity(lab()), identity(_switch(lab(), name="sw09")))
    assert "sw09 takes address 172.16.31.2 of sw01" in problem and "its os" not in problem


def test_a_switch_retired_in_one_up_and_added_under_a_new_name_in_the_next_passes():
    retired = lab()
    retired["gpu-lab:switches"] = []
    assert identity_problems(identity(lab()), identity(retired)) == []
    readded = _cumulus(lab(), "sw09")
    assert identity_problems(identity(retired), identity(readded)) == []
    # a new switch on another address beside the removed one is no rename either
    assert identity_problems(identity(lab()), identity(_switch(lab(), name="sw09", managementAddress="172.16.31.9"))) \
        == []


def test_a_lab_that_did_not_record_switch_addresses_is_warned_not_refused():
    before = identity(lab())
    for sw in before["switches"].values():
        del sw["address"]
    after = identity(_switch(lab(), name="sw09"))
    assert identity_problems(before, after) == []
    assert any("switches' addresses" in w for w in identity_warnings(before, after))


def _without_bootstrap(config: dict) -> dict:
    config = copy.deepcopy(config)
    del config["gpu-lab:vsphere"]["bootstrap"]
    config["gpu-lab:openshift"]["bootstrap"] = False
    return config


def test_the_bootstrap_vms_address_cannot_go_to_a_new_worker_in_the_up_that_deletes_it():
    base = lab()
    retired = _without_bootstrap(base)
    taking = _without_bootstrap(lab(**{"gpu-lab:vsphere.workers.names": [*builders.WORKERS, "w05"],
                                       "gpu-lab:vsphere.workers.managementAddresses": [
                                           "172.16.7.51", "172.16.7.52", "172.16.7.53", "172.16.7.54",
                                           "172.16.7.10"]}))
    (problem,) = identity_problems(identity(base), identity(taking))
    assert problem.startswith("vsphere.workers.names: new node w05 would take management address 172.16.7.10 of the "
                              "bootstrap VM bs01, which this `pulumi up` deletes")
    assert "stay reserved until the `pulumi up` after the one that deletes it" in problem
    # the two steps: the bootstrap VM goes in one up, its address is free in the next
    assert identity_problems(identity(base), identity(retired)) == []
    assert identity_problems(identity(retired), identity(taking)) == []


def test_make_diff_refuses_a_renamed_switch_and_the_bootstrap_address_before_any_step():
    from tools.diff import refusals

    base = run_program(lab())
    (refused,) = refusals(base, run_program(_cumulus(lab(), "sw09")))
    assert refused.startswith("lab-identity: switches: sw09 takes address 172.16.31.2 of sw01")
    taking = _without_bootstrap(lab(**{"gpu-lab:vsphere.workers.names": [*builders.WORKERS, "w05"],
                                       "gpu-lab:vsphere.workers.managementAddresses": [
                                           "172.16.7.51", "172.16.7.52", "172.16.7.53", "172.16.7.54",
                                           "172.16.7.10"]}))
    (refused,) = refusals(base, run_program(taking))
    assert "management address 172.16.7.10 of the bootstrap VM bs01" in refused
