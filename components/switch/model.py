"""The `switches` section as the stack file says it: NVIDIA Spectrum switches configured for RoCE.

Defaults are the DeepOps RoCE guide's on the RDG lab's SN2700: ECN on traffic class 3 with
absolute thresholds 150 KB / 1500 KB, DSCP trust, jumbo MTU. The guide's switch runs ECN only
("lossy"); PFC on priority 3 (lossless) is the default here because the lab's hosts enable PFC on
that priority, and `pfcMode: lossy` gives the guide's exact setup. Multi-rail designs put each host
NIC on its own rail: one VLAN and one subnet per rail, no LACP.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from components.model import Cidr, HostName, IPv4, Model, SshPublicKey, matches
from labrules.commands import DIAL_ERROR_LIMIT, PER_DIAL_TIMEOUT_SECONDS
from labrules.roce import (
    DEFAULT_ECN_MAX_KB,
    DEFAULT_ECN_MIN_KB,
    DEFAULT_PFC_PRIORITY,
    DEFAULT_TRAFFIC_CLASS,
    ECN_MIN_KB_FLOOR,
    ETHERNET_MTU,
    PFC_PRIORITY_MAX,
    PFC_PRIORITY_MIN,
    SWITCH_MAX_MTU,
)

# The SN2700's shared packet buffer (16 MB); the guide's QoS numbers are in labrules.roce.
SN2700_BUFFER_KB = 16 * 1024

# Values end up unquoted on a switch CLI or in a shell line: keep them to safe characters.
Token = Annotated[str, matches(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$",
    "must be 1-32 letters, digits, '.', '_' or '-', starting with a letter or digit",
)]


class Rail(Model):
    """One rail of a multi-rail fabric: one VLAN, one subnet, the switch ports of its host NICs."""

    vlan: int | None = Field(
        default=None, ge=1, le=4094,
        description="access VLAN of the rail's ports; default 111 for the first rail, 112 for the second, ...",
    )
    subnet: Cidr = Field(description="the rail's IP subnet (one subnet per rail, one NIC per subnet on each host)")
    ports: list[str] = Field(min_length=1, description="switch ports facing the hosts' NICs on this rail")
    host_interface: Token | None = Field(
        default=None, description="bare-metal nodes' interface on this rail (e.g. enp5s0), for hosts-baremetal.sh"
    )


class SwitchPorts(Model):
    """Switch ports by role; a port has exactly one role."""

    hosts: list[str] = Field(
        default_factory=list,
        description="ports facing hosts' RoCE NICs on the switch's existing VLAN (RoCE QoS and MTU only)",
    )
    rails: list[Rail] = Field(default_factory=list, description="multi-rail: ports grouped per rail VLAN")


class RoceSettings(Model):
    """QoS for RoCE; defaults are the guide's."""

    traffic_class: int = Field(default=DEFAULT_TRAFFIC_CLASS, ge=PFC_PRIORITY_MIN, le=PFC_PRIORITY_MAX,
                               description="egress traffic class (queue) that carries RoCE and gets ECN marking")
    ecn_min_kb: int = Field(default=DEFAULT_ECN_MIN_KB, ge=ECN_MIN_KB_FLOOR,
                            description="queue depth (KB) where ECN marking starts")
    ecn_max_kb: int = Field(default=DEFAULT_ECN_MAX_KB, ge=ECN_MIN_KB_FLOOR,
                            description="queue depth (KB) where every ECN-capable packet is marked")
    pfc_mode: Literal["lossless", "lossy"] = Field(
        default="lossless", description="lossless: PFC + ECN; lossy: ECN only, as in the guide")
    pfc_priority: int = Field(default=DEFAULT_PFC_PRIORITY, ge=PFC_PRIORITY_MIN, le=PFC_PRIORITY_MAX,
                              description="802.1p priority that PFC protects (RoCE)")
    trust: Literal["dscp", "pcp"] = Field(default="dscp", description="what the switch classifies RoCE by")
    mtu: int = Field(default=SWITCH_MAX_MTU, ge=ETHERNET_MTU, le=SWITCH_MAX_MTU, description="MTU of the RoCE ports")
    buffer_kb: int = Field(default=SN2700_BUFFER_KB, ge=1,
                           description="shared packet buffer of the switch in KB (SN2700: 16 MB); "
                                       "ECN thresholds must fit")


class SwitchConfig(Model):
    """One NVIDIA Spectrum switch reached over SSH; its password is the secret gpu-lab:switchPasswords.<name>."""

    name: HostName
    os: Literal["onyx", "cumulus"] = Field(description="onyx (SN2700 in the guides) or cumulus (Cumulus Linux, NVUE)")
    management_address: IPv4 = Field(description="SSH address of the switch's management port")
    user: Token = Field(default="admin", description="SSH user (Onyx: admin; Cumulus: cumulus)")
    ssh_port: int = Field(default=22, ge=1, le=65535)
    host_key: SshPublicKey | None = Field(
        default=None, description="expected SSH host key ('ssh-ed25519 AAAA...', from ssh-keyscan); unset means any "
                                  "key is accepted and the policy pack reports it")
    connect_timeout_seconds: int = Field(default=10, ge=PER_DIAL_TIMEOUT_SECONDS[0], le=PER_DIAL_TIMEOUT_SECONDS[1],
                                         description="per attempt; an unreachable switch fails after "
                                                     "attempts x timeout")
    connect_attempts: int = Field(default=2, ge=DIAL_ERROR_LIMIT[0], le=DIAL_ERROR_LIMIT[1],
                                  description="SSH dial attempts before giving up")
    ports: SwitchPorts
    roce: RoceSettings = RoceSettings()
