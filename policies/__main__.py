"""The gpu-lab CrossGuard pack: assembles the rules in ``rules/``; nothing else lives here.

Run by the Pulumi CLI (``pulumi preview --policy-pack policies``) through the
pulumi-analyzer-policy-python plugin, or by tools/policy_check.py the same way.
Building the PolicyPack starts its gRPC server and never returns.
"""

from pulumi_policy import EnforcementLevel, PolicyPack

from rules import ALL_POLICIES
from rules.declare import judges
from rules.pulumi_policy_internals import PoliciesByType, install

install()  # secrets kept as Secret, per-request memo, per-type dispatch (see that module)

PolicyPack(
    name="gpu-lab",
    description="RoCE / PVRDMA / vGPU / OpenShift guard rails for the gpu-lab program",
    enforcement_level=EnforcementLevel.ADVISORY,
    policies=PoliciesByType(ALL_POLICIES, judges),
)
