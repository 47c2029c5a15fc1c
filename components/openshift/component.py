"""OpenShiftUpi: the user-provisioned-infrastructure install of the OpenShift guide as resources.

1. `<name>-ignition` (local Command): install-config on stdin, `openshift-install create
   ignition-configs` in an install dir the stack owns; ignition files and kubeconfig come back
   on stdout, kept secret. Re-runs only when install-config changes.
2. The helper node (remote CopyToRemote + Command over SSH): dnsmasq, HAProxy, PXE menus and
   the ignition files (on a Command's stdin: they are unknown until the installer ran) are
   staged, checked and put in place; each service is restarted only when the hash of its files
   changes (the triggers, never secret).
3. Optional lifecycle: `wait-for bootstrap-complete`, CSR approval limited to the configured
   node names, `wait-for install-complete`.

vSphere nodes get their ignition through VM extra_config (`vm_extra_config`, consumed by
LabVms): the bootstrap VM a small pointer to the helper's HTTP server, the others the
installer's master/worker ignition, plus static ip= kernel arguments.
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass

import pulumi
from pulumi_command import local, remote

from components.openshift.config import ClusterPlan
from components.openshift.files import (
    ignition_files,
    load_balancer_intent,
    network_kargs,
    parse_ignition_stdout,
    render_csr_script,
    render_dns_install,
    render_ignition_install,
    render_ignition_script,
    render_install_config,
    render_lb_install,
    render_pointer_ignition,
    render_pxe_install,
    render_wait_script,
    sha256,
    staged_files,
    vm_extra_config,
)
from components.secrets import LabSecrets, secret_output
from labrules.openshift import API_PORT

TYPE = "gpu-lab:openshift:OpenShiftUpi"
DIAL_ERROR_LIMIT = 10
PER_DIAL_TIMEOUT_S = 30


@dataclass(frozen=True)
class OpenShiftUpiArgs:
    cluster: ClusterPlan
    """The resolved cluster: the openshift section with the vSphere VMs as nodes (openshift.config.plan)."""
    secrets: LabSecrets
    """pull_secret, ssh_public_key and helper_ssh_private_key are required (vcenter_password with platform vsphere)."""
    install_dir: str | None = None
    """Overrides openshift.installDir; default build/<stack>/openshift-install."""


class OpenShiftUpi(pulumi.ComponentResource):
    vm_extra_config: dict[str, pulumi.Input[dict[str, str]]]
    """VM name -> extra_config (ignition and network kernel arguments) for each vSphere node."""
    kubeconfig: pulumi.Output[str] | None
    """Secret: the installer's auth/kubeconfig, once the ignition step has run."""
    api_url: str
    install_dir: str

    def __init__(self, name: str, args: OpenShiftUpiArgs, opts: pulumi.ResourceOptions | None = None):
        p = args.cluster
        oc = p.config
        super().__init__(TYPE, name, {
            "clusterName": oc.cluster_name,
            "baseDomain": oc.base_domain,
            "controlPlaneCount": len(p.of_role("control-plane")),
            "singleNode": oc.single_node,
            "bootstrap": oc.bootstrap,
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
            if oc.platform == "vsphere" else None
        )

        self.install_dir = args.install_dir or oc.install_dir or f"build/{pulumi.get_stack()}/openshift-install"
        self.api_url = f"https://api.{p.domain}:{API_PORT}"

        install_config = secret_output(pulumi.Output.all(pull, ssh_key, vcenter_password).apply(
            lambda v: render_install_config(p, v[0], v[1], v[2])))
        ignition = local.Command(
            f"{name}-ignition",
            create=render_ignition_script(self.install_dir, oc.installer, oc.single_node),
            stdin=install_config,
            triggers=[trigger_hash(install_config)],
            delete=f"rm -rf {shlex.quote(self.install_dir)}",
            # stdout carries the ignition files and the kubeconfig
            logging=local.Logging.STDERR,
            opts=pulumi.ResourceOptions(
                parent=self, additional_secret_outputs=["stdout"], delete_before_replace=True),
        )
        generated = secret_output(ignition.stdout).apply(parse_ignition_stdout)
        self.kubeconfig = generated.apply(lambda f: f.get("kubeconfig", ""))
        self.vm_extra_config = self._vm_extra_config(p, generated)

        published = self._deploy_helper(name, p, helper_key, generated)
        self._lifecycle(name, p, ignition, published)

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
            if node.role == "bootstrap" or (p.config.single_node and node.role == "control-plane"):
                # Too big for guestinfo: a pointer to the full file on the helper's HTTP server.
                extra[node.name] = vm_extra_config(render_pointer_ignition(p, node.role), kargs)
            else:
                extra[node.name] = generated.apply(functools.partial(_extra_config_of, node.ignition, kargs))
        return extra

    def _deploy_helper(self, name: str, p: ClusterPlan, private_key: pulumi.Output[str],
                       generated: pulumi.Output[dict]) -> list[pulumi.Resource]:
        helper = p.config.helper
        staging = helper.paths.staging
        conn = remote.ConnectionArgs(
            host=str(helper.address),
            port=helper.port,
            user=helper.user,
            private_key=pulumi.Output.secret(private_key),
            host_key=helper.host_key,
            dial_error_limit=DIAL_ERROR_LIMIT,
            per_dial_timeout=PER_DIAL_TIMEOUT_S,
        )
        installs = {"dns": render_dns_install(p), "lb": render_lb_install(p)}
        if p.pxe_wanted:
            installs["pxe"] = render_pxe_install(p)

        done: list[pulumi.Resource] = []
        for step, files in staged_files(p).items():
            copies = [
                remote.CopyToRemote(
                    f"{name}-stage-{_slug(rel)}",
                    connection=conn,
                    source=pulumi.StringAsset(text),
                    remote_path=f"{staging}/{rel}",
                    triggers=[sha256(text)],
                    opts=pulumi.ResourceOptions(parent=self),
                )
                for rel, text in files.items()
            ]
            done.append(remote.Command(
                f"{name}-{step}",
                connection=conn,
                create=installs[step],
                # re-run (restart the service) only when a file of this step changed
                triggers=[sha256(text) for text in files.values()],
                opts=pulumi.ResourceOptions(parent=self, depends_on=copies),
            ))

        # The ignition files exist only once the installer has run: during a first preview they are
        # unknown. pulumi-command's CopyToRemote refuses an unknown source at check ("either asset or
        # archive must be set"), so each file goes to the helper on the stdin of a Command instead (a
        # secret string, unknown at preview is fine there), and every trigger is a plain hash.
        ign_copies = []
        ign_hashes = []
        for key, file in ignition_files(p).items():
            text = generated.apply(functools.partial(_file_of, key))
            ign_hashes.append(trigger_hash(text))
            ign_copies.append(remote.Command(
                f"{name}-stage-{_slug(file)}",
                connection=conn,
                create=stage_from_stdin_script(f"{staging}/{file}"),
                stdin=text,
                triggers=[ign_hashes[-1]],
                logging=remote.Logging.STDERR,
                opts=pulumi.ResourceOptions(parent=self),
            ))
        done.append(remote.Command(
            f"{name}-publish-ignition",
            connection=conn,
            create=render_ignition_install(p),
            triggers=ign_hashes,
            opts=pulumi.ResourceOptions(parent=self, depends_on=ign_copies),
        ))
        return done

    def _lifecycle(self, name: str, p: ClusterPlan, ignition: local.Command,
                   published: list[pulumi.Resource]) -> None:
        oc = p.config
        generation = trigger_hash(pulumi.Output.secret(ignition.stdout))
        after: list[pulumi.Resource] = list(published)
        if oc.wait_for_bootstrap and oc.bootstrap:
            after = [local.Command(
                f"{name}-wait-bootstrap",
                create=render_wait_script(self.install_dir, oc.installer, "bootstrap-complete"),
                triggers=[generation],
                opts=pulumi.ResourceOptions(parent=self, depends_on=after),
            )]
        if oc.approve_csrs:
            names = [n.name for n in p.nodes if n.role != "bootstrap"]
            after = [local.Command(
                f"{name}-approve-csrs",
                create=render_csr_script(p, oc.oc, f"{self.install_dir}/auth/kubeconfig"),
                triggers=[generation, *names],
                opts=pulumi.ResourceOptions(parent=self, depends_on=after),
            )]
        if oc.wait_for_install:
            local.Command(
                f"{name}-wait-install",
                create=render_wait_script(self.install_dir, oc.installer, "install-complete"),
                triggers=[generation],
                # its output ends with the kubeadmin password
                logging=local.Logging.NONE,
                opts=pulumi.ResourceOptions(
                    parent=self, depends_on=after, additional_secret_outputs=["stdout", "stderr"]),
            )


def trigger_hash(content: pulumi.Input[str]) -> pulumi.Output[str]:
    """A change detector for secret content: its SHA-256, not secret.

    A secret must not reach `triggers`: during a preview where the content is still unknown, a
    secret-wrapped unknown in that list stops pulumi-command ("malformed RPC secret: missing value
    for \"triggers\""), and a known one would keep the content in the state. The one-way hash of
    the content says when it changed and reveals nothing of it.
    """
    return pulumi.Output.unsecret(pulumi.Output.from_input(content).apply(lambda text: sha256(text or "")))


def stage_from_stdin_script(path: str) -> str:
    """Write stdin to ``path`` (owner-only: ignition holds certificates), replacing it atomically."""
    target = shlex.quote(path)
    return (f"set -eu\numask 077\nmkdir -p {shlex.quote(path.rsplit('/', 1)[0])}\n"
            f"cat > {target}.tmp\nmv -f {target}.tmp {target}\n")


def _slug(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")


def _file_of(name: str, files: dict[str, str]) -> str:
    """One generated file's text ("" until openshift-install has run)."""
    return files.get(name, "")


def _extra_config_of(ignition_name: str, kargs: str, files: dict[str, str]) -> dict[str, str]:
    return vm_extra_config(_file_of(ignition_name, files), kargs)
