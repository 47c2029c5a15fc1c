"""SpectrumSwitch: one NVIDIA Spectrum switch configured for RoCE over SSH.

One pulumi-command remote.Command per switch: create runs the apply script, delete runs the
revert script. The sha256 of both scripts is the Command's only trigger and there is no update
command, so a configuration change replaces the Command; delete-before-replace makes that
"revert the old configuration, then apply the new one" (the default create-first order would
apply the new settings and then revert the shared ones). Input changes that leave the scripts
alone (a rotated password, a new timeout) re-run the idempotent apply script.

With a pinned `hostKey`, a local Command (`<switch>-host-key`, components/ssh/host_key.py) first
checks that the switch presents that key, and the switch's Command waits for it: a mismatch
stops the update before the password is sent, naming the switch and both keys' fingerprints.
It runs again whenever the scripts change (same trigger) or its own text does (address, port,
key). pulumi-command then verifies the key itself on every connection.

The password stays a secret Output; the Command logs nothing and its stdout/stderr are secret
outputs. An unreachable switch fails after connectAttempts x connectTimeoutSeconds, with the
error attached to `<switch>-config`; on Cumulus the script itself names the switch on failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_command import remote

from components.facts import HostRoce
from components.ssh.host_key import host_key_check
from components.switch.config import SwitchConfig
from components.switch.files import config_digest, render_apply, render_revert

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


class SpectrumSwitch(pulumi.ComponentResource):
    """A Spectrum switch's RoCE configuration (Onyx CLI or Cumulus NVUE), applied and reverted over SSH."""

    config_sha256: pulumi.Output[str]
    """sha256 of the apply and revert scripts (the Command's trigger)."""
    command: remote.Command

    def __init__(self, name: str, args: SpectrumSwitchArgs, opts: pulumi.ResourceOptions | None = None):
        sw = args.switch
        super().__init__(TYPE, name, intent_properties(sw, args.hosts), opts)
        digest = config_digest(sw)
        checked: list[pulumi.Resource] = []
        if sw.host_key is not None:
            checked.append(host_key_check(
                f"{name}-host-key", str(sw.management_address), sw.ssh_port, sw.host_key,
                setting=f"the hostKey of switch {sw.name}", attempts=sw.connect_attempts,
                timeout_seconds=sw.connect_timeout_seconds, triggers=[digest],
                opts=pulumi.ResourceOptions(parent=self)))
        self.command = remote.Command(
            f"{name}-config",
            connection=connection_args(sw, args.password),
            create=render_apply(sw),
            delete=render_revert(sw),
            triggers=[digest],
            logging=remote.Logging.NONE,
            add_previous_output_in_env=False,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=checked,
                delete_before_replace=True,
                additional_secret_outputs=["stdout", "stderr"],
            ),
        )
        self.config_sha256 = pulumi.Output.from_input(digest)
        self.register_outputs({
            "configSha256": self.config_sha256,
            "managementAddress": str(sw.management_address),
            "commandId": self.command.id,
        })
