"""A node's addresses and host belong to its name: `workers.hosts`, and what moves when a list changes.

The derived forms ({first: ...} addresses, round-robin hosts) give each node its place by
position; these tests pin that the day-1 form plans as before, that the explicit form lets any
worker go with nothing else moving, and that the edit which keeps nodes in place is exact.
"""

from __future__ import annotations

import copy

import builders
import pytest
import yaml

from components.config import load_lab
from components.identity_rules import (
    NodeIdentity,
    keeping_edit,
    node_identities,
    node_moves,
    render_keeping_edit,
)
from components.model import ConfigError


def vsphere_of(config: dict):
    return load_lab(builders.sections(config)).vsphere


def problems(config: dict) -> list[str]:
    try:
        load_lab(builders.sections(config))
    except ConfigError as err:
        return [str(p) for p in err.problems]
    return []


def explicit_lab() -> dict:
    """The test lab with every worker's addresses and host written out (what the day-1 form gives)."""
    config = builders.lab_stack()
    workers = config["gpu-lab:vsphere"]["workers"]
    workers["managementAddresses"] = [f"172.16.7.5{i}" for i in (1, 2, 3, 4)]
    workers["rdmaAddresses"] = [f"192.168.0.5{i}" for i in (1, 2, 3, 4)]
    workers["hosts"] = list(builders.WORKER_HOSTS)
    return config


def without_worker(config: dict, name: str) -> dict:
    """`config` with one worker removed from names and from every per-worker list."""
    changed = copy.deepcopy(config)
    workers = changed["gpu-lab:vsphere"]["workers"]
    index = workers["names"].index(name)
    for key in ("names", "managementAddresses", "rdmaAddresses", "hosts", "macs"):
        if isinstance(workers.get(key), list):
            workers[key] = workers[key][:index] + workers[key][index + 1:]
    return changed


# ---------------------------------------------------------------- the day-1 form is unchanged


def test_without_hosts_workers_go_round_robin_as_before(lab_config):
    lab_config["gpu-lab:vsphere"]["workers"]["names"] = [f"w{i:02d}" for i in range(1, 7)]
    identities = node_identities(vsphere_of(lab_config))
    assert [identities[f"w{i:02d}"].host for i in range(1, 7)] == [
        "esx01", "esx02", "esx03", "esx04", "esx01", "esx02"]


def test_identities_name_every_node_with_its_addresses_and_host(lab_config):
    identities = node_identities(vsphere_of(lab_config))
    assert identities["w02"] == ("172.16.7.52", "192.168.0.52", "esx02")
    assert identities["m01"] == NodeIdentity("172.16.7.11", None, "esx00")
    assert identities["bs01"] == ("172.16.7.10", None, "esx00")  # while it exists, the bootstrap VM is a node
    assert sorted(identities) == ["bs01", "m01", "m02", "m03", "w01", "w02", "w03", "w04"]


def test_the_explicit_form_plans_exactly_what_the_derived_one_did(lab_config):
    assert node_identities(vsphere_of(explicit_lab())) == node_identities(vsphere_of(lab_config))


# ---------------------------------------------------------------- workers.hosts is validated


def test_hosts_place_each_worker():
    config = explicit_lab()
    config["gpu-lab:vsphere"]["workers"]["hosts"] = ["esx04", "esx04", "esx01", "esx02"]
    assert [node_identities(vsphere_of(config))[f"w0{i}"].host for i in (1, 2, 3, 4)] == [
        "esx04", "esx04", "esx01", "esx02"]


def test_one_host_per_worker():
    config = explicit_lab()
    config["gpu-lab:vsphere"]["workers"]["hosts"] = ["esx01", "esx02", "esx03"]
    assert problems(config) == [
        "vsphere.workers.hosts: 3 hosts for 4 workers; give exactly one worker host per name, in the order of "
        "vsphere.workers.names, or leave hosts out for round-robin"]


@pytest.mark.parametrize("host, why", [
    ("esx09", "'esx09' (worker w03) is not a worker host"),
    ("esx00", "'esx00' (worker w03) is the management host, which is not on the RoCE vDS"),
    ("ESX03", "'ESX03' (worker w03) is written 'esx03' in vsphere.workerHosts; write it the same way"),
])
def test_each_host_is_a_configured_worker_host(host, why):
    config = explicit_lab()
    config["gpu-lab:vsphere"]["workers"]["hosts"][2] = host
    assert problems(config) == [
        f"vsphere.workers.hosts[2]: {why}; use one of vsphere.workerHosts: esx01, esx02, esx03, esx04"]


def test_a_bad_host_stops_the_program_before_anything_is_registered():
    from tools.mockrun import run_program

    config = explicit_lab()
    config["gpu-lab:vsphere"]["workers"]["hosts"][0] = "esx09"
    with pytest.raises(Exception, match=r"vsphere\.workers\.hosts\[0\]: 'esx09' \(worker w01\) is not a worker host"):
        run_program(config)


# ---------------------------------------------------------------- what moves


@pytest.mark.parametrize("removed", ["w01", "w02", "w03", "w04"])
def test_in_the_explicit_form_any_worker_can_go_and_nothing_else_moves(removed):
    before = explicit_lab()
    after = without_worker(before, removed)
    old, new = vsphere_of(before), vsphere_of(after)
    assert node_moves(old, new) == []
    assert render_keeping_edit(old, new) == ""
    kept = {name: ident for name, ident in node_identities(old).items() if name != removed}
    assert node_identities(new) == kept


def test_in_the_derived_form_removing_a_middle_worker_moves_every_later_one(lab_config):
    old = vsphere_of(lab_config)
    new = vsphere_of(builders.with_value(lab_config, "gpu-lab:vsphere.workers.names", ["w01", "w03", "w04"]))
    moves = node_moves(old, new)
    assert [m.name for m in moves] == ["w03", "w04"]
    assert [m.describe() for m in moves] == [
        "w03: managementAddress 172.16.7.53 -> 172.16.7.52 (vsphere.workers.managementAddresses), "
        "rdmaAddress 192.168.0.53 -> 192.168.0.52 (vsphere.workers.rdmaAddresses), "
        "host esx03 -> esx02 (vsphere.workers.hosts)",
        "w04: managementAddress 172.16.7.54 -> 172.16.7.53 (vsphere.workers.managementAddresses), "
        "rdmaAddress 192.168.0.54 -> 192.168.0.53 (vsphere.workers.rdmaAddresses), "
        "host esx04 -> esx03 (vsphere.workers.hosts)",
    ]
    assert all(change.positional for m in moves for change in m.changes)


def test_the_edit_that_keeps_them_is_exact_yaml_and_moves_nothing(lab_config):
    old = vsphere_of(lab_config)
    removed = builders.with_value(lab_config, "gpu-lab:vsphere.workers.names", ["w01", "w03", "w04"])
    new = vsphere_of(removed)
    text = render_keeping_edit(old, new)
    assert text == (
        "gpu-lab:vsphere:\n"
        "  workers:\n"
        "    managementAddresses: [172.16.7.51, 172.16.7.53, 172.16.7.54]\n"
        "    rdmaAddresses: [192.168.0.51, 192.168.0.53, 192.168.0.54]\n"
        "    hosts: [esx01, esx03, esx04]\n"
    )
    # Written into the stack file, it validates and nothing moves.
    for key, values in yaml.safe_load(text)["gpu-lab:vsphere"]["workers"].items():
        removed["gpu-lab:vsphere"]["workers"][key] = values
    assert problems(removed) == []
    kept = vsphere_of(removed)
    assert node_moves(old, kept) == []
    assert node_identities(kept) == {n: i for n, i in node_identities(old).items() if n != "w02"}


def test_appending_a_worker_moves_nothing(lab_config):
    old = vsphere_of(lab_config)
    new = vsphere_of(builders.with_value(lab_config, "gpu-lab:vsphere.workers.names",
                                         ["w01", "w02", "w03", "w04", "w05"]))
    assert node_moves(old, new) == [] and keeping_edit(old, new) == {}
    assert node_identities(new)["w05"] == ("172.16.7.55", "192.168.0.55", "esx01")


def test_a_new_worker_in_the_same_edit_gets_free_addresses_and_the_least_used_host(lab_config):
    old = vsphere_of(lab_config)
    new = vsphere_of(builders.with_value(lab_config, "gpu-lab:vsphere.workers.names", ["w01", "w03", "w04", "w05"]))
    # By position w05 would take w04's addresses (.54) and host; the edit gives it the next free
    # ones and the host w02 left.
    assert keeping_edit(old, new) == {"workers": {
        "managementAddresses": ["172.16.7.51", "172.16.7.53", "172.16.7.54", "172.16.7.55"],
        "rdmaAddresses": ["192.168.0.51", "192.168.0.53", "192.168.0.54", "192.168.0.55"],
        "hosts": ["esx01", "esx03", "esx04", "esx02"],
    }}


def test_the_edit_skips_addresses_other_nodes_hold(lab_config):
    # The next RDMA address after the workers' is a host's vmk: the new worker must not take it.
    lab_config["gpu-lab:vsphere"]["vmkAddresses"] = {"first": "192.168.0.55"}
    old = vsphere_of(lab_config)
    new = vsphere_of(builders.with_value(lab_config, "gpu-lab:vsphere.workers.names", ["w01", "w03", "w04", "w05"]))
    assert keeping_edit(old, new)["workers"]["rdmaAddresses"] == [
        "192.168.0.51", "192.168.0.53", "192.168.0.54", "192.168.0.59"]


def test_a_control_plane_removal_is_kept_in_place_too(lab_config):
    # vSphere alone: OpenShift itself wants three control-plane nodes
    lab_config = {k: v for k, v in lab_config.items() if k not in ("gpu-lab:openshift", "gpu-lab:addons")}
    old = vsphere_of(lab_config)
    new = vsphere_of(builders.with_value(lab_config, "gpu-lab:vsphere.controlPlane.names", ["m01", "m03"]))
    assert [m.describe() for m in node_moves(old, new)] == [
        "m03: managementAddress 172.16.7.13 -> 172.16.7.12 (vsphere.controlPlane.managementAddresses)"]
    assert keeping_edit(old, new) == {"controlPlane": {"managementAddresses": ["172.16.7.11", "172.16.7.13"]}}


def test_an_address_written_for_a_node_is_a_move_the_user_made(lab_config):
    before = explicit_lab()
    after = builders.with_value(before, "gpu-lab:vsphere.workers.rdmaAddresses.1", "192.168.0.99")
    (move,) = node_moves(vsphere_of(before), vsphere_of(after))
    assert move.name == "w02"
    assert [(c.attribute, c.before, c.after, c.positional) for c in move.changes] == [
        ("rdmaAddress", "192.168.0.52", "192.168.0.99", False)]
    assert keeping_edit(vsphere_of(before), vsphere_of(after)) == {}  # nothing to undo: it is the edit
