"""Remote command rules (pulumi-command): bounded connection attempts."""

from __future__ import annotations

from pulumi_policy import PolicyConfigSchema

from labrules.commands import DIAL_ERROR_LIMIT, PER_DIAL_TIMEOUT_SECONDS

from .declare import ADVISORY, resource_policy
from .props import UNKNOWN, as_int, props_of, reveal, settings

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


POLICIES = [connect_timeout]
