"""Secrets rules: credentials reach resources only as Pulumi secrets.

The pack sees secret-ness because ``props.keep_secret_markers`` keeps the engine's secret
markers (see props.py). Messages name the property, never its value. A value that is unknown
during preview is not judged: its secret-ness is settled when it is known.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pulumi_policy import PolicyConfigSchema

from .declare import MANDATORY, resource_policy
from .props import UNKNOWN, is_secret, is_unknown, props_of, settings

K8S_SECRET = "kubernetes:core/v1:Secret"

CREDENTIAL_SCHEMA = PolicyConfigSchema(properties={
    "credentialKeyPattern": {
        "type": "string", "minLength": 1,
        "default": "(password|passwd|passphrase|token|pullsecret|privatekey|secretkey|apikey|licen[cs]ekey)$",
        "description": (
            "regular expression matched against property names (lower-case, without '_' and '-') and "
            "environment variable names; matching values must be secrets"
        ),
    },
})


def _normal(key: str) -> str:
    return re.sub(r"[_\-.]", "", str(key)).lower()


def plain_credentials(props: dict, pattern: re.Pattern, skip_top: tuple = ()) -> Iterator[str]:
    """Paths of non-empty plain-text strings under credential-looking names (secrets are skipped)."""
    def walk(node, path):
        if is_secret(node) or is_unknown(node) or node is UNKNOWN:
            return
        if isinstance(node, dict):
            env_name = node.get("name")
            if isinstance(env_name, str) and "value" in node and pattern.search(_normal(env_name)):
                if _plain_text(node["value"]):
                    yield f"{path}value (environment variable {env_name})"
            for key, value in node.items():
                if not path and (key in skip_top or key.startswith("__")):
                    continue
                if pattern.search(_normal(key)):
                    values = value if isinstance(value, list) else [value]
                    if any(_plain_text(v) for v in values):
                        yield f"{path}{key}"
                        continue
                yield from walk(value, f"{path}{key}.")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                yield from walk(value, f"{path.rstrip('.')}[{i}].")
    yield from walk(props, "")


def _plain_text(v) -> bool:
    return isinstance(v, str) and v != "" and not is_unknown(v)


def check_credentials_secret(args, report_violation) -> None:
    """Passwords, private keys, pull secrets and licence tokens reach resources only as Pulumi secrets: connection
    passwords and keys of remote commands, the vCenter password of the pyvmomi resources, and any property or
    environment variable whose name looks like a credential. The guides' deployments carry vCenter, switch, NVIDIA
    licence and OpenShift pull-secret credentials (the RDG, the DeepOps RoCE guide, the OpenShift guide); in plain
    text they end up in the state file and the logs."""
    pattern = re.compile(settings(args, CREDENTIAL_SCHEMA)["credentialKeyPattern"], re.IGNORECASE)
    skip = ("data", "stringData") if args.resource_type == K8S_SECRET else ()
    for path in plain_credentials(props_of(args), pattern, skip):
        report_violation(
            f"{path} reaches the resource as plain text; pass it as a Pulumi secret (a LabSecrets output, "
            "`pulumi config set --secret`, or pulumi.Output.secret) so it is encrypted in state and masked in logs"
        )


credentials_secret = resource_policy("secrets-credentials-are-secret", MANDATORY,
                                     check_credentials_secret, CREDENTIAL_SCHEMA)


def check_k8s_secret_data(args, report_violation) -> None:
    """The data and stringData of a Kubernetes Secret are Pulumi secrets. The add-ons of the guides (NVIDIA
    licence token for the GPU operator, registry credentials; the RDG, the OpenShift guide) travel as Kubernetes
    Secrets; their values must not sit in the Pulumi state as plain text."""
    if args.resource_type != K8S_SECRET:
        return
    p = props_of(args)
    for field in ("data", "stringData"):
        value = p.get(field)
        if value is None or is_secret(value) or value is UNKNOWN:
            continue
        if isinstance(value, dict):
            plain_keys = sorted(k for k, v in value.items() if _plain_text(v))
            if plain_keys:
                report_violation(
                    f"Secret {args.name!r} {field} keys {plain_keys} are plain text; build them from Pulumi "
                    "secrets (pulumi.Output.secret) so the values stay encrypted in state"
                )


k8s_secret_data = resource_policy("secrets-k8s-secret-data-is-secret", MANDATORY, check_k8s_secret_data,
                                  types=(K8S_SECRET,))


POLICIES = [credentials_secret, k8s_secret_data]
