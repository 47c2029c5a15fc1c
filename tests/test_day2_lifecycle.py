"""docs/day2.md, protection and taking a lab down: what the engine refuses, and in which order a lab goes."""

from __future__ import annotations

import builders
import pytest

from tools.diff import snapshot, steps_between
from tools.mockrun import run_program

PROTECTED = {"vms-m01", "vms-m02", "vms-m03", "roce-vds", "openshift-ignition"}


@pytest.fixture(scope="module")
def protected():
    config = builders.with_value(builders.lab_stack(), "gpu-lab:lifecycle", {"protect": True})
    return config, run_program(config)


def test_protect_covers_the_control_plane_the_vds_and_the_install(protected):
    _, run = protected
    assert {r.name for r in run.resources if r.protect} == PROTECTED
    unprotected = run_program(builders.lab_stack())
    assert not [r.name for r in unprotected.resources if r.protect]


def test_a_typo_that_would_delete_the_control_plane_is_refused(protected):
    config, base = protected
    typo = builders.with_value(config, "gpu-lab:vsphere.controlPlane.names", ["m01", "m02", "m3"])
    steps = steps_between(snapshot(base), snapshot(run_program(typo)))
    refused = {s.name: s.refused for s in steps if s.refused}
    assert set(refused) == {"vms-m03"}
    assert refused["vms-m03"].startswith("protected: the engine refuses to delete it")


def test_taking_the_lab_down_first_lifts_the_protection_and_changes_nothing_else(protected):
    config, base = protected
    lifted = builders.with_value(config, "gpu-lab:lifecycle", {"protect": False})
    steps = [s for s in steps_between(snapshot(base), snapshot(run_program(lifted))) if s.op != "same"]
    assert steps == []  # an option only: `pulumi up` records it and runs nothing; then `pulumi destroy`


def test_a_lab_goes_in_order_add_ons_then_nodes_then_vms(protected):
    _, run = protected
    # The engine deletes a resource before what it depends on, and before its provider
    # (tests/engine/test_provider_orders_deletes.py shows both on the real engine).
    provider = run.named("addons-k8s")
    addons = [r for r in run.resources if r.name.startswith("addons-") and r.custom and r is not provider]
    nodes = {r.urn for r in run.resources if r.name.startswith("openshift-nodes-")}
    vms = {r.urn for r in run.resources if r.type == "vsphere:index/virtualMachine:VirtualMachine"}
    assert nodes <= set(provider.dependencies) and vms <= set(provider.dependencies)
    for addon in addons:
        assert addon.provider.startswith(provider.urn + "::"), addon.name
    for node in run.resources:
        if node.urn in nodes and node.name != "openshift-nodes-bs01":
            assert run.named(f"vms-{node.name.removeprefix('openshift-nodes-')}").urn in node.dependencies
