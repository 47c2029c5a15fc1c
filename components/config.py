"""The whole lab configuration: one typed, validated model built from the stack's config keys.

Each section lives beside the component that uses it and contributes its own rules:

    gpu-lab:vsphere    -> components.vsphere.model.VsphereConfig
    gpu-lab:openshift  -> components.openshift.model.OpenShiftConfig   (optional)
    gpu-lab:switches   -> components.switch.model.SwitchConfig list     (optional)
    gpu-lab:addons     -> components.addons.model.AddonsConfig          (optional)
    gpu-lab:lifecycle  -> components.config.Lifecycle                   (optional)
    gpu-lab:mirror     -> components.mirror.MirrorConfig                (optional)

`load_lab` is the single entry point: it returns a LabConfig or raises one ConfigError
listing every problem, before any resource is registered. Each section's structure is checked
on its own, so a typo in one section does not hide the rule problems of the others; a section's
rules run when it and every section they read are sound. A section's rules take that section and
the facts they read of the others (components/facts.py), never the whole LabConfig: this module
composes the sections, and no section imports it. `LabConfig.plan` is the lab plan
(components/lab_plan.py) the components take their arguments from.

`gpu_lab_sections` gives `load_lab` every key of the `gpu-lab:` namespace the engine (or the
mocks) hands the program, so a misspelt section is an error rather than a section left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cached_property
from typing import Any

import pulumi
from pydantic import Field, TypeAdapter, ValidationError

from components.addons.model import AddonsConfig
from components.addons.plan import AddonsLab
from components.addons.rules import check as check_addons
from components.addons.rules import registry_auth_problems
from components.addons.rules import required_secrets as addons_required_secrets
from components.facts import PlannedHost, PlannedVm
from components.lab_plan import LabPlan, plan_lab
from components.mirror import MirrorConfig
from components.model import ConfigError, Model, Problem, closest, problems_from_validation_error
from components.openshift.model import OpenShiftConfig
from components.openshift.rules import check as check_openshift
from components.openshift.rules import pull_secret_problems, ssh_key_problems
from components.secrets import SECRET_KEYS, SecretRule
from components.switch.model import SwitchConfig
from components.switch.rules import check as check_switches
from components.vsphere.model import VsphereConfig
from components.vsphere.rules import check as check_vsphere

SECTIONS = ("vsphere", "openshift", "switches", "addons", "lifecycle", "mirror")
"""Config keys under the `gpu-lab:` namespace that hold structured sections."""
BUILDING = SECTIONS[:4]
"""The sections that build something; lifecycle and mirror only say how."""

NAMESPACE = "gpu-lab"


class Lifecycle(Model):
    """How the engine may treat what this stack built (not what it builds)."""

    protect: bool = Field(
        default=False,
        description="protect the resources a lab cannot lose without a rebuild (control-plane VMs, the vDS, "
                    "the OpenShift install): the engine refuses to delete or replace them until this is false "
                    "and `pulumi up` has run")


class LabConfig(Model):
    vsphere: VsphereConfig | None = None
    openshift: OpenShiftConfig | None = None
    switches: list[SwitchConfig] = Field(default_factory=list)
    addons: AddonsConfig = Field(default_factory=AddonsConfig)
    lifecycle: Lifecycle = Field(default_factory=Lifecycle)
    mirror: MirrorConfig | None = None

    @cached_property
    def plan(self) -> LabPlan:
        """The facts the sections share, derived once from the validated sections (components/lab_plan.py)."""
        return plan_lab(self.vsphere, self.openshift, self.switches, self.addons, self.mirror)

    @cached_property
    def addons_lab(self) -> AddonsLab:
        """The add-ons section and the facts of the lab plan its rules read."""
        return AddonsLab(self.addons, self.plan.vsphere, self.plan.addons.openshift, self.plan.addons.mirror)

    def hosts(self) -> list[PlannedHost]:
        """Worker ESXi hosts with their RDMA uplinks and vmk address (empty without vSphere)."""
        return list(self.plan.hosts)

    def vms(self) -> list[PlannedVm]:
        """Every VM to create, bootstrap included only while OpenShift needs it."""
        return list(self.plan.vms)

    def problems(self, sound: set[str] | None = None) -> list[Problem]:
        """The rule problems of every section whose rules can run (all of them by default)."""
        found: list[Problem] = []
        for rule, reads in _RULES.values():
            if sound is None or reads <= sound:
                found += rule(self)
        return found

    def required_secrets(self) -> list[tuple[str, str]]:
        """(LabSecrets attribute, why) for each secret the configured sections need up front."""
        needed: list[tuple[str, str]] = []
        if self.vsphere is not None:
            needed.append(("vcenter_password", "the pyvmomi host and VM settings need it"))
        if self.openshift is not None:
            needed += [
                ("pull_secret", "openshift is configured and install-config needs the pull secret"),
                ("ssh_public_key", "openshift is configured and install-config needs the core user's key"),
                ("helper_ssh_private_key", "openshift is configured and the helper node deploy connects over SSH"),
            ]
        if self.switches:
            needed.append(("switch_passwords", "switches are configured"))
        return needed + addons_required_secrets(self.addons_lab)

    def secret_format_rules(self) -> dict[str, SecretRule]:
        """gpu-lab secret key -> the consumer's own format check, for the secrets it parses."""
        rules: dict[str, SecretRule] = {}
        if self.openshift is not None:
            rules.update(pullSecret=pull_secret_problems, sshPublicKey=ssh_key_problems)
        if "registry_auth" in dict(self.required_secrets()):
            rules["registryAuth"] = registry_auth_problems
        return rules


# Each section's rules: its own section plus what it reads of the others from the lab plan.
def _vsphere_rules(lab: LabConfig) -> list[Problem]:
    return check_vsphere(lab.vsphere) if lab.vsphere is not None else []


def _openshift_rules(lab: LabConfig) -> list[Problem]:
    return check_openshift(lab.openshift, lab.plan.vsphere) if lab.openshift is not None else []


def _switch_rules(lab: LabConfig) -> list[Problem]:
    return check_switches(lab.switches, lab.plan.vsphere)


def _addons_rules(lab: LabConfig) -> list[Problem]:
    return check_addons(lab.addons_lab)


# The sections each section's rules read (a rule runs only when all of them are sound); the
# openshift section decides whether the bootstrap VM exists, so the VM list reads it too.
_RULES = {
    "vsphere": (_vsphere_rules, {"vsphere"}),
    "openshift": (_openshift_rules, {"openshift", "vsphere"}),
    "switches": (_switch_rules, {"switches", "vsphere", "openshift"}),
    "addons": (_addons_rules, {"addons", "vsphere", "openshift"}),
}


def _secret_keys() -> list[str]:
    return [key for _, namespace, key, _ in SECRET_KEYS if namespace == NAMESPACE]


def load_lab(sections: Mapping[str, Any]) -> LabConfig:
    """Validate raw section values (as read from Pulumi config) into a LabConfig.

    Raises ConfigError with every problem found; nothing is half-validated.
    """
    problems: list[Problem] = []
    for key in sorted(set(sections) - set(SECTIONS)):
        message = f"unknown section; allowed: {', '.join(SECTIONS)} (and the secret keys {', '.join(_secret_keys())})"
        guess = closest(key, [*SECTIONS, *_secret_keys()])
        problems.append(Problem(key, f"{message}; did you mean {guess}?" if guess else message))
    given = {k: v for k, v in sections.items() if k in SECTIONS}
    if not set(given) & set(BUILDING) and not problems:
        problems.append(Problem(NAMESPACE, f"no configuration: the stack sets none of {NAMESPACE}:"
                                           f"{f', {NAMESPACE}:'.join(BUILDING)}, so there is nothing to build"))
    validated: dict[str, Any] = {}
    sound = set(SECTIONS)
    for key, value in given.items():
        annotation = LabConfig.model_fields[key].annotation
        assert annotation is not None  # every LabConfig field is annotated
        if value is None:
            problems.append(Problem(key, f"the section is empty; give its keys or remove {NAMESPACE}:{key}"))
            sound.discard(key)
            continue
        try:
            validated[key] = TypeAdapter(annotation).validate_python(value)
        except ValidationError as err:
            problems += problems_from_validation_error(err, prefix=key, model=annotation)
            sound.discard(key)
    lab = LabConfig.model_validate(validated)
    problems += lab.problems(sound)
    notes = [f"the rules of {section} run once {', '.join(sorted(reads - sound))} (which they read) "
             "is fixed" for section, (_, reads) in _RULES.items()
             if section in given and section in sound and not reads <= sound]
    if problems:
        raise ConfigError(problems, notes=notes)
    return lab


def gpu_lab_sections(config: Mapping[str, Any]) -> dict[str, Any]:
    """The section keys of the `gpu-lab:` namespace ({"vsphere": value, ...}) from "ns:key" config.

    Every key but the secrets is returned, known or not, so that `load_lab` can name a typo.
    Values arrive as the engine passes them (JSON text for objects) or already decoded.
    """
    secrets = set(_secret_keys())
    sections: dict[str, Any] = {}
    for full_key, value in config.items():
        namespace, _, key = full_key.partition(":")
        if namespace != NAMESPACE or key in secrets:
            continue
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                pass  # a bare string where a section belongs: validation names it
        sections[key] = value
    return sections


def program_config() -> dict[str, Any]:
    """Every config key the engine hands this program ("ns:key" -> value text).

    pulumi.Config can only look keys up, not list them. The engine's language host passes the
    stack's config in the PULUMI_CONFIG environment variable, read by the public
    pulumi.runtime.get_config_env; `make plan` and the tests (tools/mockrun.py) set it the same way.
    """
    return pulumi.runtime.get_config_env()
