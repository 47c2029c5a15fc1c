"""SpectrumSwitch: one NVIDIA Spectrum switch configured for RoCE over SSH, changed as a difference.

The switch's configuration is a list of undo items (components/switch/files.py): each sets one
thing and knows how to undo exactly that. The component registers pulumi-command remote.Commands:

- `<switch>-apply` applies the whole configuration. `create` is the apply script, `triggers` its
  sha256, `update` a read-only login check, no `delete`. A changed setting changes the script and
  so replaces the Command; the replacement is create-the-new-then-delete-the-old (no
  delete-before-replace), so the new script is applied over the old configuration with nothing
  undone first, and deleting the old Command runs nothing. The script is idempotent (Onyx lines
  set absolute values; on Cumulus nothing is applied when NVUE sees no difference). Any other
  input change (a rotated password, a new address or timeout) is an Update, which runs `update`:
  it proves the new credentials work and applies nothing.
- One Command per undo item, `<switch>-undo-<key>`, with neither `create` nor `update` and
  `delete` = that item's undo script. Creating it, and any later input change, runs nothing on
  the switch; when the item leaves the configuration (a port removed, another PFC priority, a
  VLAN dropped) the engine deletes its Command and exactly that undo runs, after the new apply.
  The first item, the switch's anchor (Onyx: the saved rollback file; Cumulus: RoCE mode), is
  named `<switch>-config`: see "Upgrading" below.
- Each undo Command depends on the one before it in apply order, the first on `<switch>-apply`.
  So they are created after the apply succeeded (a failed apply records no undo for settings it
  never made, and stops the update before any removed item is undone), and when the switch
  leaves the stack the engine deletes them newest first, one at a time; the apply Command goes
  last and runs nothing. Removed items that are not neighbours in that chain may be deleted in
  parallel (the engine orders deletes by direct dependencies only); the Cumulus scripts take a
  lock on the switch, so their NVUE changes still run one after the other.

Facts from pulumi-command v1.2.1 (github.com/pulumi/pulumi-command, tag v1.2.1) this relies on:
provider/pkg/provider/common/inputs.go: `triggers` is the only input that replaces, and create,
update and delete are all optional; provider/pkg/provider/remote/commandController.go: Create runs
nothing (and dials nothing) without `create`, Update runs `update`, else `create`, else nothing,
and stores the new inputs, Delete runs the stored `delete` if there is one;
provider/pkg/provider/remote/commandOutputs.go: `environment` and the previous output go through
SSH setenv, which switch sshds refuse (no AcceptEnv) and Onyx's CLI could not use, hence no
environment and addPreviousOutputInEnv off.

Upgrading a lab built when one Command per switch, `<switch>-config`, applied on create and
reverted everything on delete (with delete-before-replace and the scripts' hash as trigger): its
state still holds that full revert, and deleting or replacing it would run it. The anchor item
keeps that name, with `ignore_changes=["triggers"]` so the old trigger never forces a
replacement: the upgrade is an Update of `<switch>-config` that runs nothing (no create, no
update) and stores the anchor's narrow undo in place of the full revert.

With a pinned `hostKey`, a local Command (`<switch>-host-key`, components/ssh/host_key.py) first
checks that the switch presents that key, and `<switch>-apply` waits for it: a mismatch stops the
update before the password is sent, naming the switch and both keys' fingerprints. It runs again
whenever the apply does (same trigger) or its own text changes (address, port, key).
pulumi-command then verifies the key itself on every connection.

The password stays a secret Output; the Commands log nothing and their stdout/stderr are secret
outputs. An unreachable switch fails after connectAttempts x connectTimeoutSeconds, with the
error attached to the Command; on Cumulus the script itself names the switch on failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_command import remote

from components.facts import HostRoce
from components.ssh.host_key import host_key_check
from components.switch.config import SwitchConfig
from components.switch.files import apply_digest, render_apply, render_login_check, render_undo, undo_items

TYPE = "gpu-lab:switch:SpectrumSwitch"


@dataclass(frozen=True)
class SpectrumSwitchArgs:
    switch: SwitchConfig
    """The switch's validated configuration."""
    hosts: HostRoce
    """The hosts' PFC priority, trust and MTU the switch must match (switch.config.host_side)."""
    password: pulumi.Input[str]
    """SSH password (secret Output from LabSecrets.switch_password)."""


def intent_properties(sw: SwitchConfig, host: HostRoce) -> dict[str, Any]:
    """The component's registered inputs, as docs/resource-contract.md lists them for the policy pack."""
    # Host-role ports stay on the switch's default VLAN, untagged: vlan 0 as in the config's Vlan type.
    ports = [{"port": port, "role": "host", "vlan": 0} for port in sw.ports.hosts]
    for rail, vlan in zip(sw.ports.rails, sw.rail_vlans(), strict=True):
        ports += [{"port": port, "role": "rail", "vlan": vlan} for port in rail.ports]
    roce = sw.roce
    return {
        "switchName": sw.name,
        "os": sw.os,
        "trafficClass": roce.traffic_class,
        "ecnMinKb": roce.ecn_min_kb,
        "ecnMaxKb": roce.ecn_max_kb,
        "bufferKb": roce.buffer_kb,
        "pfcPriority": roce.pfc_priority,
        "hostPfcPriority": host.pfc_priority,
        "pfcMode": roce.pfc_mode,
        "trust": roce.trust,
        "mtu": roce.mtu,
        "hostMtu": host.mtu,
        "ports": ports,
    }


def connection_args(sw: SwitchConfig, password: pulumi.Input[str]) -> remote.ConnectionArgs:
    return remote.ConnectionArgs(
        host=str(sw.management_address),
        port=sw.ssh_port,
        user=sw.user,
        password=pulumi.Output.secret(password),
        host_key=sw.host_key,
        # Fail fast: a few short dials instead of the provider's 10 x 15 s.
        dial_error_limit=sw.connect_attempts,
        per_dial_timeout=sw.connect_timeout_seconds,
    )


def undo_command_name(switch: str, index: int, key: str) -> str:
    """`<switch>-config` for the anchor (the name the one-Command design used), else `<switch>-undo-<key>`."""
    return f"{switch}-config" if index == 0 else f"{switch}-undo-{key}"


class SpectrumSwitch(pulumi.ComponentResource):
    """A Spectrum switch's RoCE configuration (Onyx CLI or Cumulus NVUE), applied and undone per item over SSH."""

    config_sha256: pulumi.Output[str]
    """sha256 of the apply script (the apply Command's trigger)."""
    apply: remote.Command
    undo: list[remote.Command]
    """One Command per undo item, in apply order; the first is `<switch>-config`."""

    def __init__(self, name: str, args: SpectrumSwitchArgs, opts: pulumi.ResourceOptions | None = None):
        sw = args.switch
        super().__init__(TYPE, name, intent_properties(sw, args.hosts), opts)
        digest = apply_digest(sw)
        connection = connection_args(sw, args.password)
        checked: list[pulumi.Resource] = []
        if sw.host_key is not None:
            checked.append(host_key_check(
                f"{name}-host-key", str(sw.management_address), sw.ssh_port, sw.host_key,
                setting=f"the hostKey of switch {sw.name}", attempts=sw.connect_attempts,
                timeout_seconds=sw.connect_timeout_seconds, triggers=[digest],
                opts=pulumi.ResourceOptions(parent=self)))
        self.apply = remote.Command(
            f"{name}-apply",
            connection=connection,
            create=render_apply(sw),
            update=render_login_check(sw),
            triggers=[digest],
            logging=remote.Logging.NONE,
            add_previous_output_in_env=False,
            opts=pulumi.ResourceOptions(parent=self, depends_on=checked,
                                        additional_secret_outputs=["stdout", "stderr"]),
        )
        self.undo = []
        previous: pulumi.Resource = self.apply
        for index, item in enumerate(undo_items(sw)):
            command = remote.Command(
                undo_command_name(name, index, item.key),
                connection=connection,
                delete=render_undo(sw, item),
                logging=remote.Logging.NONE,
                add_previous_output_in_env=False,
                opts=pulumi.ResourceOptions(
                    parent=self,
                    depends_on=[previous],
                    additional_secret_outputs=["stdout", "stderr"],
                    # The anchor may carry the one-Command design's trigger in its state: keep it,
                    # so upgrading is an Update that runs nothing, never a replacement.
                    ignore_changes=["triggers"] if index == 0 else None,
                ),
            )
            self.undo.append(command)
            previous = command
        self.config_sha256 = pulumi.Output.from_input(digest)
        self.register_outputs({
            "configSha256": self.config_sha256,
            "managementAddress": str(sw.management_address),
            "commandId": self.apply.id,
            "undoItems": len(self.undo),
        })
