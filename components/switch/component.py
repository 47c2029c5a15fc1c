"""SpectrumSwitch: one NVIDIA Spectrum switch configured for RoCE over SSH, changed as a difference.

`<switch>-apply` applies the whole configuration (its trigger is the script's sha256; `update` is a
read-only login check); one Command per undo item (files.py), with only a `delete`, undoes exactly
that item when it leaves the configuration. Why each Command looks as it does, what pulumi-command
v1.2.1 does with it, and the upgrade from the one-Command design: docs/day2.md, "The switch's Commands".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_command import remote

from components.ssh.host_key import host_key_check
from components.switch.files import apply_digest, render_apply, render_login_check, render_undo, undo_items
from components.switch.plan import SwitchPlan
from labrules.types import SPECTRUM_SWITCH as TYPE


@dataclass(frozen=True)
class SpectrumSwitchArgs:
    switch: SwitchPlan
    """The switch's facts, with the hosts' side it must match."""
    password: pulumi.Input[str]
    """SSH password (secret Output from LabSecrets.switch_password)."""


def intent_properties(sw: SwitchPlan) -> dict[str, Any]:
    """The component's registered inputs, as docs/resource-contract.md lists them for the policy pack."""
    # Host-role ports stay on the switch's default VLAN, untagged: vlan 0 as in the config's Vlan type.
    ports = [{"port": port, "role": "host", "vlan": 0} for port in sw.host_ports]
    for rail in sw.rails:
        ports += [{"port": port, "role": "rail", "vlan": rail.vlan} for port in rail.ports]
    roce, host = sw.roce, sw.hosts
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


def connection_args(sw: SwitchPlan, password: pulumi.Input[str]) -> remote.ConnectionArgs:
    return remote.ConnectionArgs(
        host=sw.management_address,
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
        super().__init__(TYPE, name, intent_properties(sw), opts)
        digest = apply_digest(sw)
        connection = connection_args(sw, args.password)
        checked: list[pulumi.Resource] = []
        if sw.host_key is not None:
            checked.append(host_key_check(
                f"{name}-host-key", sw.management_address, sw.ssh_port, sw.host_key,
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
            "managementAddress": sw.management_address,
            "commandId": self.apply.id,
            "undoItems": len(self.undo),
        })
