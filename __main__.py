"""gpu-lab: the GPU machine-learning lab of the reference designs, as one Pulumi program.

Reads like a table of contents: validate the configuration, build each part, export what a
platform engineer needs after `pulumi up`.
"""

from components.runtime_tuning import relax_gc

relax_gc()  # first, before the SDK and component imports: see components/runtime_tuning.py

import pulumi  # noqa: E402  (this and the imports below come after relax_gc on purpose)

from components.sdk_internals import install_program_patches

install_program_patches()  # before any resource: see components/sdk_internals.py

from components.addons.component import ClusterAddons, ClusterAddonsArgs
from components.addons.mpi import operator_manifest
from components.addons.shipped import ManifestError
from components.config import gpu_lab_sections, load_lab, program_config
from components.dynamic.guard import OUTPUT as IDENTITY_OUTPUT
from components.dynamic.guard import LabIdentity, guard_deployed, identity_digest, read_deployed_state
from components.dynamic.provider import GUARD, explicit_provider, node_roll_provider, vcenter_provider
from components.identity_rules import identity_of
from components.model import ConfigError
from components.openshift.component import ClusterNodes, ClusterNodesArgs, OpenShiftUpi, OpenShiftUpiArgs
from components.secrets import (
    MissingSecretError,
    check_required_secrets,
    check_secret_formats,
    check_secrets_are_secret,
    load_secrets,
    preview_stand_ins,
)
from components.switch.component import SpectrumSwitch, SpectrumSwitchArgs
from components.vsphere.fabric import RoceFabric, RoceFabricArgs
from components.vsphere.vms import VM_TYPE, LabVms, LabVmsArgs, vcenter_connection


def main() -> None:
    try:
        config = program_config()
        check_secrets_are_secret(config, pulumi.runtime.is_config_secret)
        lab = load_lab(gpu_lab_sections(config))
        # A preview may go without the helper key and the switch passwords (it runs no Command);
        # `up` may not (components/secrets.py, preview_stand_ins).
        secrets = preview_stand_ins(load_secrets(), pulumi.runtime.is_dry_run(), [s.name for s in lab.switches])
        check_required_secrets(lab.required_secrets(), secrets)
        check_secret_formats(lab.secret_format_rules())
        vcenter = vcenter_connection(pulumi.Config("vsphere"), secrets) if lab.vsphere is not None else None
        if lab.addons.any_enabled and lab.addons.mpi_operator.enabled:
            operator_manifest()  # a modified shipped manifest stops the run before anything registers
    except (ConfigError, MissingSecretError, ManifestError) as err:
        raise pulumi.RunError(str(err)) from None
    plan = lab.plan  # the facts the sections share, derived once

    # Its check refuses, during the preview `pulumi up` starts with, an edit a running lab cannot take;
    # guard_deployed refuses it too before anything registers, where --target or --replace skip the check.
    identity = identity_of(lab)
    deployed = read_deployed_state()
    guard_deployed("lab-identity", identity, deployed)
    LabIdentity("lab-identity", identity, pulumi.ResourceOptions(provider=explicit_provider(GUARD)))
    pulumi.export(IDENTITY_OUTPUT, identity_digest(identity))

    openshift = None
    if plan.cluster is not None:
        openshift = OpenShiftUpi("openshift", OpenShiftUpiArgs(
            cluster=plan.cluster, secrets=secrets, protect=lab.lifecycle.protect))

    # the cluster the node rolls drain through and the add-ons go to: this stack's install, or one it is given
    kubeconfig = openshift.kubeconfig if openshift else secrets.kubeconfig
    vms = None
    if plan.roce_fabric is not None and plan.lab_vms is not None and vcenter is not None:  # set with lab.vsphere
        pyvmomi = pulumi.ResourceOptions(providers=[vcenter_provider(vcenter)])  # see explicit_provider
        fabric = RoceFabric("roce", RoceFabricArgs(
            plan=plan.roce_fabric, lossless=plan.rdma_lossless,
            protect=lab.lifecycle.protect), pyvmomi)
        vms = LabVms("vms", LabVmsArgs(
            plan=plan.lab_vms,
            fabric=fabric,
            roll_provider=node_roll_provider(vcenter, kubeconfig, plan.oc),
            extra_config=openshift.vm_extra_config if openshift else {},
            protect=lab.lifecycle.protect,
            drain_timeout_s=plan.drain_timeout_s,
            deployed_vms=deployed.names_of(VM_TYPE),
        ), pyvmomi)
        pulumi.export("hosts", fabric.host_summary)
        pulumi.export("hostsPendingReboot", fabric.pending_reboot)
        pulumi.export("vms", vms.vm_summary)

    nodes = None
    if openshift is not None and plan.cluster is not None:
        nodes = ClusterNodes("openshift-nodes", ClusterNodesArgs(
            cluster=plan.cluster, install=openshift, machines=vms.machines if vms else {}))

    for switch in plan.switches:
        SpectrumSwitch(switch.name, SpectrumSwitchArgs(
            switch=switch, password=secrets.switch_password(switch.name)))

    if lab.addons.any_enabled:
        ClusterAddons("addons", ClusterAddonsArgs(
            addons=plan.addons,
            secrets=secrets,
            kubeconfig=kubeconfig,
            # Deleted before the nodes are drained and the VMs go.
            after=[r for r in (nodes, vms) if r is not None],
            nodes={name: [step] for name, step in nodes.node_steps.items()} if nodes is not None
            else {name: [vm] for name, vm in vms.machines.items()} if vms is not None else {},
        ))


if __name__ == "__main__":
    main()
