"""The lab plan: the facts the sections share, derived once from the validated sections.

__main__ (through components.config.LabConfig.plan) builds it before any resource is
registered; each component then gets its own narrow part of it. This module imports the section
config models; no section imports it.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.addons.model import AddonsConfig
from components.addons.plan import AddonsLab, AddonsPlan, addons_plan
from components.facts import PlannedHost, PlannedVm, VsphereFacts
from components.mirror import MirrorConfig, mirror_plan
from components.openshift.model import OpenShiftConfig
from components.openshift.plan import ClusterPlan
from components.openshift.plan import plan as cluster_plan
from components.switch.model import SwitchConfig
from components.switch.plan import SwitchPlan, switch_plan
from components.vsphere.model import VsphereConfig
from components.vsphere.plan import LabVmsPlan, RoceFabricPlan, lab_vms_plan, roce_fabric_plan, vsphere_facts
from labrules.openshift import DEFAULT_OC, NODE_DRAIN_TIMEOUT_S


@dataclass(frozen=True)
class LabPlan:
    vsphere: VsphereFacts | None
    """Worker hosts, VMs (the bootstrap VM only while OpenShift bootstraps), RDMA network, hosts' RoCE."""
    roce_fabric: RoceFabricPlan | None
    """What RoceFabric builds; None without the vsphere section."""
    lab_vms: LabVmsPlan | None
    """What LabVms builds; None without the vsphere section."""
    cluster: ClusterPlan | None
    """The OpenShift cluster with every node resolved; None without the openshift section."""
    addons: AddonsPlan
    """What ClusterAddons and `make render` read: the add-ons with what they read of the rest of the lab."""
    switches: tuple[SwitchPlan, ...]
    rdma_lossless: bool
    """Whether the hosts send pause frames: only when every switch runs RoCE lossless (PFC)."""

    @property
    def hosts(self) -> tuple[PlannedHost, ...]:
        return self.vsphere.hosts if self.vsphere else ()

    @property
    def vms(self) -> tuple[PlannedVm, ...]:
        return self.vsphere.vms if self.vsphere else ()

    @property
    def oc(self) -> str:
        """The oc binary the VMs' rolls drain and uncordon the nodes with: the cluster's, else the default."""
        return self.cluster.lifecycle.oc if self.cluster else DEFAULT_OC

    @property
    def drain_timeout_s(self) -> int:
        """How long a node's drain may take before its roll stops: the cluster's, else the default."""
        return self.cluster.lifecycle.drain_timeout_s if self.cluster else NODE_DRAIN_TIMEOUT_S


def plan_lab(vsphere: VsphereConfig | None, openshift: OpenShiftConfig | None,
             switches: list[SwitchConfig], addons: AddonsConfig, mirror: MirrorConfig | None = None) -> LabPlan:
    """The lab plan of validated sections (a section left out is None, or empty)."""
    bootstrap_vm_wanted = openshift is not None and openshift.bootstrap
    mirrored = mirror_plan(mirror)
    facts: VsphereFacts | None = None
    fabric: RoceFabricPlan | None = None
    vms: LabVmsPlan | None = None
    if vsphere is not None:
        facts = vsphere_facts(vsphere, with_bootstrap=bootstrap_vm_wanted)
        fabric, vms = roce_fabric_plan(vsphere, facts), lab_vms_plan(vsphere, facts)
    return LabPlan(
        vsphere=facts,
        roce_fabric=fabric,
        lab_vms=vms,
        cluster=cluster_plan(openshift, facts, mirrored) if openshift is not None else None,
        addons=addons_plan(AddonsLab(addons=addons, vsphere=facts, openshift=openshift is not None, mirror=mirrored)),
        switches=tuple(switch_plan(s, facts) for s in switches),
        rdma_lossless=all(s.roce.pfc_mode == "lossless" for s in switches),
    )
