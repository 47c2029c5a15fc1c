"""The whole lab configuration: one typed, validated model built from the stack's config keys.

Each section lives beside the component that uses it and contributes its own rules:

    gpu-lab:vsphere    -> components.vsphere.config.VsphereConfig
    gpu-lab:openshift  -> components.openshift.config.OpenShiftConfig   (optional)
    gpu-lab:switches   -> components.switch.config.SwitchConfig list    (optional)
    gpu-lab:addons     -> components.addons.config.AddonsConfig         (optional)

`load_lab` is the single entry point: it returns a LabConfig or raises one ConfigError
listing every problem, before any resource is registered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from pydantic import Field, ValidationError

from components import addons, openshift, switch, vsphere  # noqa: F401  (section packages)
from components.addons.config import AddonsConfig
from components.addons.config import check as check_addons
from components.model import ConfigError, Model, Problem, problems_from_validation_error
from components.openshift.config import OpenShiftConfig
from components.openshift.config import check as check_openshift
from components.switch.config import SwitchConfig
from components.switch.config import check as check_switches
from components.vsphere.config import PlannedHost, PlannedVm, VsphereConfig, planned_hosts, planned_vms
from components.vsphere.config import check as check_vsphere

SECTIONS = ("vsphere", "openshift", "switches", "addons")
"""Config keys under the `gpu-lab:` namespace that hold structured sections."""

_RULES = (check_vsphere, check_openshift, check_switches, check_addons)


class LabConfig(Model):
    vsphere: Optional[VsphereConfig] = None
    openshift: Optional[OpenShiftConfig] = None
    switches: list[SwitchConfig] = Field(default_factory=list)
    addons: AddonsConfig = Field(default_factory=AddonsConfig)

    @property
    def bootstrap_vm_wanted(self) -> bool:
        """The OpenShift bootstrap VM exists only while the install needs it."""
        return self.openshift is not None and self.openshift.bootstrap

    @property
    def rdma_lossless(self) -> bool:
        """Whether the hosts send pause frames: only when every switch runs RoCE lossless (PFC)."""
        return all(s.roce.pfc_mode == "lossless" for s in self.switches)

    def hosts(self) -> list[PlannedHost]:
        """Worker ESXi hosts with their RDMA uplinks and vmk address (empty without vSphere)."""
        return planned_hosts(self.vsphere) if self.vsphere else []

    def vms(self) -> list[PlannedVm]:
        """Every VM to create, bootstrap included only while OpenShift needs it."""
        return planned_vms(self.vsphere, with_bootstrap=self.bootstrap_vm_wanted) if self.vsphere else []

    def problems(self) -> list[Problem]:
        found: list[Problem] = []
        for rule in _RULES:
            found += rule(self)
        return found


def load_lab(sections: Mapping[str, Any]) -> LabConfig:
    """Validate raw section values (as read from Pulumi config) into a LabConfig.

    Raises ConfigError with every problem found; nothing is half-validated.
    """
    unknown = sorted(set(sections) - set(SECTIONS))
    problems = [Problem(k, f"unknown section; allowed: {', '.join(SECTIONS)}") for k in unknown]
    raw = {k: v for k, v in sections.items() if k in SECTIONS and v is not None}
    try:
        lab = LabConfig.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(problems + problems_from_validation_error(err, prefix="")) from None
    problems += lab.problems()
    if problems:
        raise ConfigError(problems)
    return lab
