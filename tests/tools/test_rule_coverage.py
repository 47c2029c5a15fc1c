"""Every resource type the program registers has a `make diff` rule of its own, citing the provider
source it follows: a type added without one would fall back to "any change is an update with no
effect", which is how a DRS group's replacement went unseen.

The types come from two places: what the shipped stacks (Pulumi.lab/openshift/sim.yaml) and the test
stacks (tests/builders.py: the lab and bare-metal shapes, the pinned-worker form with DRS groups,
every add-on on) register under mocks, and every pulumi-vsphere and pulumi-command resource class
the components construct (read from their source), so a type only an untested branch registers is
caught too.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import builders
import pulumi_command
import pulumi_vsphere
import pytest

from components.vsphere.provider_facts import FORCE_NEW, MIGRATE_INPUTS, NETWORK_INPUTS, SOURCES
from tools.diff.rules import DEFAULT_RULE, explicit_rule, rule_for
from tools.mockrun import placeholder_secrets, run_program
from tools.stackfile import load_stack_config, offline_secrets

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("lab", "openshift", "sim")


def _bitfusion_tokens() -> str:
    """The add-on tests' token archive (tests/addons_harness.py), which the Bitfusion Secret checks."""
    from addons_harness import token_archive

    return token_archive()


def _test_stacks() -> dict[str, dict]:
    placed = builders.lab_stack()
    workers = placed["gpu-lab:vsphere"]["workers"]
    count = len(workers["names"])
    workers["managementAddresses"] = [f"172.16.7.{50 + i}" for i in range(1, count + 1)]
    workers["rdmaAddresses"] = [f"192.168.0.{50 + i}" for i in range(1, count + 1)]
    workers["hosts"] = [builders.WORKER_HOSTS[i % len(builders.WORKER_HOSTS)] for i in range(count)]
    everything = builders.lab_stack()
    everything.setdefault("gpu-lab:addons", {})["bitfusion"] = {
        "enabled": True, "clientImage": "registry.lab.local:5000/bitfusion/tf-client:2.5.1"}
    return {"test lab": builders.lab_stack(), "test bare metal": builders.baremetal_stack(),
            "test lab, workers.hosts": placed, "test lab, Bitfusion on": everything}


@pytest.fixture(scope="module")
def registered() -> dict[str, set[str]]:
    """Custom resource type -> the stacks that register it."""
    found: dict[str, set[str]] = {}
    runs = {}
    for stack in SHIPPED:
        config = load_stack_config(stack)
        runs[f"Pulumi.{stack}.yaml"] = run_program(config, stack=stack, secrets=offline_secrets(config))
    for name, config in _test_stacks().items():
        secrets = {**placeholder_secrets(config), "gpu-lab:bitfusionClientToken": _bitfusion_tokens()}
        try:
            runs[name] = run_program(config, secrets=secrets)
        except Exception as err:  # a test stack that stops planning is a finding of its own
            pytest.fail(f"{name}: {err}")
    for name, run in runs.items():
        for r in run.resources:
            if r.custom:
                found.setdefault(r.type, set()).add(name)
    return found


def _constructed_types() -> dict[str, str]:
    """pulumi-vsphere and pulumi-command resource classes the components construct -> type token."""
    found: dict[str, str] = {}
    pattern = re.compile(r"\b(vsphere|remote|local)\.([A-Z]\w+)\(")
    for path in sorted((ROOT / "components").rglob("*.py")):
        for module, name in pattern.findall(path.read_text()):
            package = pulumi_vsphere if module == "vsphere" else getattr(pulumi_command, module)
            cls = getattr(package, name, None)
            if not inspect.isclass(cls) or not issubclass(cls, __import__("pulumi").CustomResource):
                continue  # an Args class or an invoke
            token = re.search(r"__init__\(\s*'([^']+)'", inspect.getsource(cls))
            assert token, f"{module}.{name}: no type token in its source"
            found[token.group(1)] = f"{path.relative_to(ROOT)}: {module}.{name}"
    return found


def test_the_stacks_register_the_types_this_test_is_about(registered):
    # the enumeration itself must see the DRS groups (workers.hosts) and the explicit providers
    for token in ("vsphere:index/computeClusterVmGroup:ComputeClusterVmGroup",
                  "vsphere:index/computeClusterHostGroup:ComputeClusterHostGroup",
                  "vsphere:index/computeClusterVmHostRule:ComputeClusterVmHostRule",
                  "pulumi:providers:pulumi-python", "pulumi-python:dynamic:Resource", "command:remote:Command"):
        assert token in registered, token


def test_every_registered_type_has_an_explicit_rule_citing_its_source(registered):
    missing = {t: sorted(where) for t, where in registered.items() if explicit_rule(t) is None}
    assert not missing, f"make diff has no rule for: {missing} (tools/diff/rules.py, RULES)"
    for token in registered:
        rule = rule_for(token)
        assert rule is not DEFAULT_RULE and rule.source, token
        assert re.search(r"\.(go|py)\b", rule.source), (token, rule.source)


def test_every_type_the_components_construct_has_an_explicit_rule():
    constructed = _constructed_types()
    assert "vsphere:index/virtualMachine:VirtualMachine" in constructed
    missing = {t: where for t, where in constructed.items() if explicit_rule(t) is None}
    assert not missing, f"make diff has no rule for: {missing}"


def test_a_type_without_a_rule_is_found():
    # the test's own premise: an unknown type falls back to the default, which the tests above refuse
    assert explicit_rule("vsphere:index/datastoreCluster:DatastoreCluster") is None
    assert rule_for("vsphere:index/datastoreCluster:DatastoreCluster") is DEFAULT_RULE


def test_every_vsphere_fact_cites_its_terraform_file(registered):
    vsphere_types = {t for t in registered if t.startswith("vsphere:")}
    assert vsphere_types <= set(FORCE_NEW) and vsphere_types <= set(SOURCES)
    for table in (FORCE_NEW, MIGRATE_INPUTS, NETWORK_INPUTS):
        for token in table:
            assert re.fullmatch(r"vsphere/resource_vsphere_\w+\.go", SOURCES[token]), token


@pytest.mark.parametrize(("token", "paths"), [
    # terraform-provider-vsphere v2.16.1: compute_cluster_id and name are ForceNew on the DRS VM and host
    # groups (resource_vsphere_compute_cluster_vm_group.go, resource_vsphere_compute_cluster_host_group.go),
    # compute_cluster_id alone on the VM-host rule (resource_vsphere_compute_cluster_vm_host_rule.go)
    ("vsphere:index/computeClusterVmGroup:ComputeClusterVmGroup", ("computeClusterId", "name")),
    ("vsphere:index/computeClusterHostGroup:ComputeClusterHostGroup", ("computeClusterId", "name")),
    ("vsphere:index/computeClusterVmHostRule:ComputeClusterVmHostRule", ("computeClusterId",)),
])
def test_the_drs_groups_and_rule_replace_on_their_force_new_inputs(token, paths):
    assert FORCE_NEW[token] == paths
    rule = rule_for(token)
    for path in paths:
        assert rule.diff(None, None, {}, [(path,)], None).replaces == [path]  # type: ignore[arg-type]
    assert rule.diff(None, None, {}, [("virtualMachineIds", 0)], None).replaces == []  # type: ignore[arg-type]
