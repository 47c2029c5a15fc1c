"""OpenShiftUpi and ClusterNodes: the OpenShift guide's UPI install as resources, for a cluster
that runs for years.

OpenShiftUpi runs openshift-install once per cluster (a second run would be a new cluster CA,
kubeconfig and kubeadmin), deploys DNS, HAProxy, PXE and the ignition files to the helper node,
patches rotated credentials into the running cluster and hands each vSphere VM its ignition.
ClusterNodes gives each node a Command that approves its CSRs as it joins and drains it as it
leaves. What each step runs, and why: docs/parts.md, "How the OpenShift steps run".
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
from pulumi_command import local, remote

from components.openshift.files.cluster_nodes import render_csr_script, render_remove_node_script
from components.openshift.files.common import file_bundle
from components.openshift.files.haproxy import load_balancer_intent
from components.openshift.files.helper_steps import (
    helper_files,
    ignition_files,
    render_helper_step,
    render_httpd_access_step,
    render_ignition_publish,
)
from components.openshift.files.httpd import render_ignition_access
from components.openshift.files.ignition import network_kargs, render_pointer_ignition, vm_extra_config
from components.openshift.files.install_config import masters_schedulable, render_install_config
from components.openshift.files.installer import (
    install_dir_bundle,
    parse_ignition_stdout,
    render_ignition_script,
    render_wait_script,
)
from components.openshift.files.patches import (
    patch_bundle,
    pull_secret_patches,
    render_patch_script,
    ssh_key_patches,
    vcenter_credential_patches,
)
from components.openshift.plan import ClusterPlan
from components.secrets import LabSecrets, secret_output
from components.ssh.host_key import host_key_check
from labrules.openshift import API_PORT
from labrules.types import CLUSTER_NODES as NODES_TYPE
from labrules.types import OPENSHIFT_UPI as TYPE

DIAL_ERROR_LIMIT = 10
PER_DIAL_TIMEOUT_S = 30

HELPER_PLACE = ["delete", "connection.host", "connection.port", "connection.user"]
"""What says where a helper step installed: its delete (the paths, sudo or not) and the login."""

RUN_ONCE = ["create", "update", "delete", "stdin", "triggers", "environment", "logging", "dir", "interpreter",
            "addPreviousOutputInEnv", "assetPaths", "archivePaths"]
"""Every input of a local Command: a step that must run once per cluster ignores all of them after create
(a changed script, install-config or installer reaches a new cluster only; docs/parts.md)."""


@dataclass(frozen=True)
class OpenShiftUpiArgs:
    cluster: ClusterPlan
    """The resolved cluster: the openshift section with the vSphere VMs as nodes (plan.plan())."""
    secrets: LabSecrets
    """pull_secret, ssh_public_key and helper_ssh_private_key are required (vcenter_password with platform vsphere)."""
    protect: bool = False
    """lifecycle.protect: the engine refuses to delete or replace the install."""
    install_dir: str | None = None
    """Overrides openshift.installDir; default build/<stack>/openshift-install."""


class OpenShiftUpi(pulumi.ComponentResource):
    vm_extra_config: dict[str, pulumi.Input[dict[str, str]]]
    """VM name -> extra_config (ignition and network kernel arguments) for each vSphere node."""
    kubeconfig: pulumi.Output[str]
    """Secret: the installer's auth/kubeconfig, once the ignition step has run."""
    install_files: pulumi.Output[str]
    """Secret: the kept install assets as the lifecycle scripts read them on stdin (file_bundle)."""
    helper_steps: list[pulumi.Resource]
    """The helper node's services and published ignition: what a node needs to boot and join."""
    api_url: str
    install_dir: str

    def __init__(self, name: str, args: OpenShiftUpiArgs, opts: pulumi.ResourceOptions | None = None):
        p = args.cluster
        run = p.lifecycle
        super().__init__(TYPE, name, {
            "clusterName": p.cluster_name,
            "baseDomain": p.base_domain,
            "controlPlaneCount": len(p.of_role("control-plane")),
            "singleNode": p.single_node,
            "bootstrap": p.bootstrap,
            # Also once the node is gone, so the policy pack can spot a stale backend.
            "bootstrapNode": p.configured_bootstrap_name,
            "loadBalancer": load_balancer_intent(p),
        }, opts)

        secrets = args.secrets
        pull = secrets.require("pull_secret", "openshift is configured and install-config needs the pull secret")
        ssh_key = secrets.require("ssh_public_key",
                                  "openshift is configured and install-config needs the core user's key")
        helper_key = secrets.require("helper_ssh_private_key",
                                     "openshift deploys DNS, HAProxy and ignition to the helper node")
        vcenter_password = (
            secrets.require("vcenter_password", "openshift platform vsphere puts it in install-config")
            if p.platform == "vsphere" else None
        )

        self.install_dir = args.install_dir or run.install_dir or f"build/{pulumi.get_stack()}/openshift-install"
        self.api_url = f"https://api.{p.domain}:{API_PORT}"

        install_config = secret_output(pulumi.Output.all(pull, ssh_key, vcenter_password).apply(
            lambda v: render_install_config(p, v[0], v[1], v[2])))
        ignition = local.Command(
            f"{name}-ignition",
            create=render_ignition_script(self.install_dir, run.installer, p.single_node, masters_schedulable(p)),
            stdin=install_config,
            delete=f"rm -rf {shlex.quote(self.install_dir)}",
            # stdout carries the ignition files, the kubeconfig and the kubeadmin password
            logging=local.Logging.STDERR,
            opts=pulumi.ResourceOptions(
                parent=self, additional_secret_outputs=["stdout"], delete_before_replace=True,
                # Once per cluster: a second run would be a new cluster (module docstring).
                ignore_changes=RUN_ONCE, protect=args.protect),
        )
        generated = secret_output(ignition.stdout).apply(parse_ignition_stdout)
        self.kubeconfig = generated.apply(lambda f: f.get("kubeconfig", ""))
        self.install_files = generated.apply(functools.partial(install_dir_bundle, single_node=p.single_node))
        self.vm_extra_config = self._vm_extra_config(p, generated)

        self.helper_steps = self._deploy_helper(name, p, helper_key, generated)
        self._credentials(name, p, ignition, pull, ssh_key, vcenter_password)
        if run.wait_for_bootstrap and p.bootstrap:
            local.Command(
                f"{name}-wait-bootstrap",
                create=render_wait_script(self.install_dir, run.installer, "bootstrap-complete"),
                stdin=self.install_files,
                opts=pulumi.ResourceOptions(parent=self, depends_on=self.helper_steps, ignore_changes=RUN_ONCE),
            )

        self.register_outputs({
            "apiUrl": self.api_url,
            "installDir": self.install_dir,
            "kubeconfig": self.kubeconfig,
            "nodes": [n.name for n in p.nodes],
        })

    @staticmethod
    def _vm_extra_config(p: ClusterPlan, generated: pulumi.Output[dict]) -> dict[str, pulumi.Input[dict[str, str]]]:
        extra: dict[str, pulumi.Input[dict[str, str]]] = {}
        for node in p.nodes:
            if node.platform != "vsphere":
                continue
            kargs = network_kargs(p, node)
            if node.role == "bootstrap" or (p.single_node and node.role == "control-plane"):
                # Too big for guestinfo: a pointer to the full file on the helper's HTTP server.
                extra[node.name] = vm_extra_config(render_pointer_ignition(p, node.role), kargs)
            else:
                extra[node.name] = generated.apply(functools.partial(_extra_config_of, node.ignition, kargs))
        return extra

    def _deploy_helper(self, name: str, p: ClusterPlan, private_key: pulumi.Output[str],
                       generated: pulumi.Output[dict]) -> list[pulumi.Resource]:
        helper = p.helper
        conn = remote.ConnectionArgs(
            host=helper.address,
            port=helper.port,
            user=helper.user,
            private_key=pulumi.Output.secret(private_key),
            host_key=helper.host_key,
            dial_error_limit=DIAL_ERROR_LIMIT,
            per_dial_timeout=PER_DIAL_TIMEOUT_S,
        )
        # With a pinned key, a local check that the helper presents it comes first: a mismatch stops
        # the update before anything is sent, naming both fingerprints (pulumi-command then checks
        # the key itself on every connection). It runs again when its own text changes.
        checked: list[pulumi.Resource] = []
        if helper.host_key is not None:
            checked.append(host_key_check(
                f"{name}-helper-host-key", helper.address, helper.port, helper.host_key,
                setting="openshift.helper.hostKey", attempts=DIAL_ERROR_LIMIT, timeout_seconds=PER_DIAL_TIMEOUT_S,
                opts=pulumi.ResourceOptions(parent=self)))
        # A step that would install somewhere else (other paths, another helper, another login)
        # first takes back what it installed where it was: a replace, old delete first.
        moved = pulumi.ResourceOptions(replace_on_changes=HELPER_PLACE, delete_before_replace=True,
                                       parent=self, depends_on=checked)
        done: list[pulumi.Resource] = []
        for step, files in helper_files(p).items():
            done.append(remote.Command(
                f"{name}-{step}",
                connection=conn,
                create=render_helper_step(p, step, "install"),
                delete=render_helper_step(p, step, "remove"),
                # A changed file is an update, which installs again; the service restarts only when
                # a file of its own changed (an update that changes no file restarts nothing).
                stdin=file_bundle(files),
                opts=moved,
            ))
        # Who may fetch which ignition file: in place before any file is published.
        access = remote.Command(
            f"{name}-ignition-access",
            connection=conn,
            create=render_httpd_access_step(p, "install"),
            delete=render_httpd_access_step(p, "remove"),
            stdin=file_bundle({"access.conf": render_ignition_access(p)}),
            opts=moved,
        )
        done.append(access)

        # The ignition files exist only once the installer has run: during a first preview they are
        # unknown, which a Command's stdin takes (pulumi-command's CopyToRemote refuses an unknown
        # source at check). One Command per file, so a file that leaves (bootstrap.ign with the
        # bootstrap node) is withdrawn by its own delete.
        for key, file in ignition_files(p).items():
            slug = _slug(file)
            done.append(remote.Command(
                f"{name}-publish-{slug}",
                connection=conn,
                create=render_ignition_publish(p, file, "install"),
                delete=render_ignition_publish(p, file, "remove"),
                stdin=generated.apply(functools.partial(_file_of, key)),
                logging=remote.Logging.STDERR,
                # gpu-lab 0.1 staged each file under this name and published them all in one step.
                opts=pulumi.ResourceOptions.merge(moved, pulumi.ResourceOptions(
                    depends_on=[access], aliases=[pulumi.Alias(name=f"{name}-stage-{slug}")])),
            ))
        return done

    def _credentials(self, name: str, p: ClusterPlan, ignition: local.Command,
                     pull: pulumi.Output[str], ssh_key: pulumi.Output[str],
                     vcenter_password: pulumi.Output[str] | None) -> None:
        """One local Command per credential the running cluster holds; only an update runs it."""
        rotations: dict[str, pulumi.Output] = {
            "pull-secret": pulumi.Output.from_input(pull).apply(pull_secret_patches),
            "ssh-key": pulumi.Output.from_input(ssh_key).apply(ssh_key_patches),
        }
        if vcenter_password is not None and p.vcenter is not None:
            server, user = p.vcenter.server, p.vcenter.user
            rotations["vcenter-credentials"] = pulumi.Output.from_input(vcenter_password).apply(
                lambda password: vcenter_credential_patches(server, user, password))
        for role, patches in rotations.items():
            local.Command(
                f"{name}-{role}",
                # No create: the installer put the first value in place.
                update=render_patch_script(p.lifecycle.oc, _patch_targets(role, p.vcenter.server if p.vcenter else "")),
                stdin=secret_output(pulumi.Output.all(self.kubeconfig, patches).apply(
                    lambda v: patch_bundle(v[0], v[1]))),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[ignition]),
            )


def _patch_targets(role: str, server: str) -> list:
    """A rotation's patches with empty values: the script names only their targets, so its text is the
    same for every value (the bodies come on stdin)."""
    if role == "pull-secret":
        return pull_secret_patches("")
    if role == "ssh-key":
        return ssh_key_patches("")
    return vcenter_credential_patches(server, "", "")


@dataclass(frozen=True)
class ClusterNodesArgs:
    cluster: ClusterPlan
    install: OpenShiftUpi
    """The install: its kubeconfig, install assets and helper services."""
    machines: Mapping[str, pulumi.Resource] = field(default_factory=dict)
    """vSphere node name -> its VM: a node's Command is created after its VM and deleted before it."""


class ClusterNodes(pulumi.ComponentResource):
    """Each node's place in the cluster: its CSRs approved on join, drained and deleted on leave."""

    def __init__(self, name: str, args: ClusterNodesArgs, opts: pulumi.ResourceOptions | None = None):
        p = args.cluster
        run = p.lifecycle
        install = args.install
        super().__init__(NODES_TYPE, name, {"nodes": [n.name for n in p.nodes if n.role != "bootstrap"]}, opts)
        kubeconfig: pulumi.Output[str] = pulumi.Output.secret(install.kubeconfig)
        self.node_steps: dict[str, pulumi.Resource] = {}
        """Node name -> its Command: what a resource bound to that node waits for and goes before."""
        for node in p.nodes:
            if node.role == "bootstrap":
                continue  # it never joins: it serves the control plane's first boot and goes
            machine = args.machines.get(node.name)
            self.node_steps[node.name] = (local.Command(
                f"{name}-{node.name}",
                # Only this node's CSRs: adding a node approves nothing for any other.
                create=render_csr_script(p, run.oc, [node.name]) if run.approve_csrs else None,
                delete=render_remove_node_script(p, run.oc, node.name, run.drain_timeout_s),
                stdin=kubeconfig,
                opts=pulumi.ResourceOptions(
                    parent=self, depends_on=[*install.helper_steps, *([machine] if machine is not None else [])]),
            ))
        joined = list(self.node_steps.values())
        if run.wait_for_install:
            local.Command(
                f"{install_name(name)}-wait-install",
                create=render_wait_script(install.install_dir, run.installer, "install-complete"),
                stdin=install.install_files,
                # its output ends with the kubeadmin password
                logging=local.Logging.NONE,
                opts=pulumi.ResourceOptions(
                    parent=self, depends_on=joined or list(install.helper_steps), ignore_changes=RUN_ONCE,
                    additional_secret_outputs=["stdout", "stderr"],
                    # gpu-lab 0.1 registered it under the install component.
                    aliases=[pulumi.Alias(parent=install)]),
            )
        self.register_outputs({"nodes": [n.name for n in p.nodes if n.role != "bootstrap"]})


def install_name(nodes_name: str) -> str:
    """The install component's name for the nodes component's (`openshift-nodes` -> `openshift`)."""
    return nodes_name.removesuffix("-nodes")


def _slug(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")


def _file_of(name: str, files: dict[str, str]) -> str:
    """One generated file's text ("" until openshift-install has run)."""
    return files.get(name, "")


def _extra_config_of(ignition_name: str, kargs: str, files: dict[str, str]) -> dict[str, str]:
    return vm_extra_config(_file_of(ignition_name, files), kargs)
