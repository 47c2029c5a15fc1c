"""Remote command rules (pulumi-command): bounded connection attempts, pinned host keys."""

from __future__ import annotations

from pulumi_policy import PolicyConfigSchema

from labrules.commands import DIAL_ERROR_LIMIT, PER_DIAL_TIMEOUT_SECONDS
from labrules.types import OPENSHIFT_UPI, SPECTRUM_SWITCH

from .declare import ADVISORY, resource_policy
from .props import UNKNOWN, as_int, props_of, reveal, settings, under_component

REMOTE_TYPES = ("command:remote:Command", "command:remote:CopyToRemote", "command:remote:CopyFile")

TIMEOUT_SCHEMA = PolicyConfigSchema(properties={
    "minPerDialTimeout": {"type": "integer", "minimum": 1, "default": PER_DIAL_TIMEOUT_SECONDS[0],
                          "description": "shortest allowed connection.perDialTimeout, seconds"},
    "maxPerDialTimeout": {"type": "integer", "minimum": 1, "default": PER_DIAL_TIMEOUT_SECONDS[1],
                          "description": "longest allowed connection.perDialTimeout, seconds"},
    "minDialErrorLimit": {"type": "integer", "minimum": 1, "default": DIAL_ERROR_LIMIT[0],
                          "description": "fewest allowed connection attempts (connection.dialErrorLimit)"},
    "maxDialErrorLimit": {"type": "integer", "minimum": 1, "default": DIAL_ERROR_LIMIT[1],
                          "description": "most allowed connection attempts; -1 (retry forever) is never allowed"},
})


def check_connect_timeout(args, report_violation) -> None:
    """Remote commands (switch configuration, helper-node and OpenShift steps) set connection.perDialTimeout and
    connection.dialErrorLimit within the configured bounds. The guides configure switches and helper hosts over SSH
    (the DeepOps RoCE guide, the OpenShift guide); an unbounded dial against an unreachable lab machine stalls the
    whole update instead of failing it."""
    if args.resource_type not in REMOTE_TYPES:
        return
    conn = reveal(props_of(args).get("connection"))
    if conn is UNKNOWN or not isinstance(conn, dict):
        return
    cfg = settings(args, TIMEOUT_SCHEMA)
    host = reveal(conn.get("host"))
    where = f"connection to {host}" if isinstance(host, str) else "connection"
    for key, low, high, unit in (
        ("perDialTimeout", int(cfg["minPerDialTimeout"]), int(cfg["maxPerDialTimeout"]), " s"),
        ("dialErrorLimit", int(cfg["minDialErrorLimit"]), int(cfg["maxDialErrorLimit"]), ""),
    ):
        value = as_int(conn.get(key))
        if value is UNKNOWN:
            continue
        if value is None:
            report_violation(f"{where} does not set {key}; set it between {low} and {high}{unit} so an unreachable "
                             "machine fails the update instead of stalling it")
        elif not low <= value <= high:
            report_violation(f"{where} sets {key} to {value}; keep it between {low} and {high}{unit}")


connect_timeout = resource_policy("command-connect-timeout", ADVISORY, check_connect_timeout, TIMEOUT_SCHEMA,
                                  types=REMOTE_TYPES)


# The components whose remote commands the program registers, and the setting that pins each one's host.
PINNED_BY = ((OPENSHIFT_UPI, "openshift.helper.hostKey"),
             (SPECTRUM_SWITCH, "switches[].hostKey of the switch at that address"))
SSH_DEFAULT_PORT = 22


def check_host_key_pinned(args, report_violation) -> None:
    """Remote commands and copies (switch configuration, the OpenShift helper node's services and ignition) pin
    the host's SSH key in connection.hostKey. The guides reach switches and the helper over SSH (the DeepOps RoCE
    guide, the OpenShift guide) with a password or a private key, and send them configuration, certificates and the
    pull secret; without a pinned key pulumi-command accepts any host key (OpenSSH's StrictHostKeyChecking=no), so
    whoever answers at the address receives all of it. Advisory here; the up workflow makes it mandatory
    (policies/config.up.json)."""
    if args.resource_type not in REMOTE_TYPES:
        return
    conn = reveal(props_of(args).get("connection"))
    if conn is UNKNOWN or not isinstance(conn, dict):
        return
    key = reveal(conn.get("hostKey"))
    if key is UNKNOWN or (isinstance(key, str) and key.strip()):
        return
    host = reveal(conn.get("host"))
    port = as_int(conn.get("port"))
    port = SSH_DEFAULT_PORT if port is None or port is UNKNOWN else port
    address = f"{host}:{port}" if isinstance(host, str) else "its host"
    setting = next((s for component, s in PINNED_BY if under_component(args.urn, component)),
                   "the hostKey of the helper or switch at that address")
    scan = f"ssh-keyscan -t ed25519 -p {port} {host}" if isinstance(host, str) else "ssh-keyscan -t ed25519 <address>"
    report_violation(f"connection to {address} does not pin the host's SSH key (connection.hostKey), so any key is "
                     "accepted and whoever answers at that address receives the credentials and what is sent; run "
                     f"`{scan}` (from a network you trust, or compare with the host's console), then set {setting} "
                     "to the key line it prints after the address")


host_key_pinned = resource_policy("command-ssh-host-key-pinned", ADVISORY, check_host_key_pinned, types=REMOTE_TYPES)


POLICIES = [connect_timeout, host_key_pinned]
