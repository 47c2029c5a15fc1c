"""Names, descriptions, enforcement levels and config schemas of every rule in the pack."""

import re

import jsonschema
import pytest
from pulumi_policy import EnforcementLevel, StackValidationPolicy

from rules import ALL_POLICIES

# name -> (level, kind, the reference guide the description must name, config keys)
EXPECTED = {
    "vsphere-vds-no-lacp": ("mandatory", "resource", "001", set()),
    "vsphere-rdma-mtu": ("mandatory", "resource", "000", {"minMtu"}),
    "vsphere-pvrdma-vds-single-uplink": ("mandatory", "resource", "000", set()),
    "vsphere-vm-one-nic-per-subnet": ("mandatory", "resource", "001", set()),
    "vsphere-pvrdma-nic-on-distributed-port-group": ("mandatory", "stack", "000", set()),
    "vsphere-rdma-host-ready": ("mandatory", "stack", "000", set()),
    "vsphere-pvrdma-hardware-version": ("mandatory", "resource", "000", {"minHardwareVersion"}),
    "vsphere-vm-nic-adapter-type": ("mandatory", "resource", "000", set()),
    "vsphere-vgpu-memory-reserved": ("mandatory", "stack", "000", set()),
    "vsphere-vm-sizing": ("advisory", "stack", "000", {
        "workerMinCpus", "workerMinMemoryGb", "workerMinDiskGb",
        "controlPlaneMinCpus", "controlPlaneMinMemoryGb", "controlPlaneMinDiskGb"}),
    "vsphere-workers-identical": ("mandatory", "stack", "000", set()),
    "openshift-three-control-plane-nodes": ("mandatory", "resource", "004", {"controlPlaneCount"}),
    "openshift-lb-required-ports": ("mandatory", "resource", "004", {"requiredPorts"}),
    "openshift-lb-no-bootstrap-after-install": ("advisory", "stack", "004", set()),
    "spectrum-ecn-min-below-max": ("mandatory", "resource", "001", set()),
    "spectrum-pfc-priority-matches-hosts": ("mandatory", "stack", "001", set()),
    "spectrum-trust-matches-hosts": ("mandatory", "stack", "001", set()),
    "k8s-rdma-pod-ipc-lock": ("mandatory", "resource", "001", {"rdmaResourcePatterns"}),
    "k8s-gpu-limits": ("mandatory", "resource", "000", {"gpuResource"}),
    "secrets-credentials-are-secret": ("mandatory", "resource", "004", {"credentialKeyPattern"}),
    "secrets-k8s-secret-data-is-secret": ("mandatory", "resource", "000", set()),
    "command-connect-timeout": ("advisory", "resource", "001", {
        "minPerDialTimeout", "maxPerDialTimeout", "minDialErrorLimit", "maxDialErrorLimit"}),
    "command-ssh-host-key-pinned": ("advisory", "resource", "001", set()),
    "addons-mirror-only": ("mandatory", "stack", "004", set()),
}


# How a rule's description names its guide (docs/references.md lists them by these names).
GUIDE_NAMES = {"000": "RDG", "001": "DeepOps", "002": "Bitfusion", "004": "OpenShift"}


def test_the_pack_has_exactly_the_expected_rules():
    names = [p.name for p in ALL_POLICIES]
    assert len(names) == len(set(names))
    assert set(names) == set(EXPECTED)


@pytest.mark.parametrize("policy", ALL_POLICIES, ids=lambda p: p.name)
def test_rule_metadata(policy):
    level, kind, reference, config_keys = EXPECTED[policy.name]
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", policy.name)
    assert policy.enforcement_level == EnforcementLevel(level)
    assert isinstance(policy, StackValidationPolicy) == (kind == "stack")
    # the description says which guide asks for it, and why
    assert GUIDE_NAMES[reference] in policy.description
    assert len(policy.description) > 120
    schema = policy.config_schema.properties if policy.config_schema else {}
    assert set(schema) == config_keys


@pytest.mark.parametrize("policy", [p for p in ALL_POLICIES if p.config_schema], ids=lambda p: p.name)
def test_config_defaults_satisfy_their_own_schema(policy):
    props = policy.config_schema.properties
    defaults = {k: v["default"] for k, v in props.items()}
    assert set(defaults) == set(props), "every setting has a default, so the pack works unconfigured"
    jsonschema.Draft7Validator({"type": "object", "properties": props}).validate(defaults)
