"""The lab's identity and the guard that refuses an edit a running lab cannot take (components/identity.py)."""

from __future__ import annotations

import builders
import yaml

from components.config import load_lab
from components.identity import _PROVIDER, identity_of, identity_problems
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
