"""Every secret the lab uses, read once at the edge as Pulumi secret Outputs.

The pydantic model never sees these values: components receive them as Outputs, so Pulumi
keeps them encrypted in state and masked in logs. Keys (all set with
`pulumi config set --secret ...`, docs/runbook.md, step 6):

| attribute | config key | used by |
|---|---|---|
| vcenter_password | `vsphere:password` | vSphere provider, the dynamic resources' providers (`pyvmomi`, `node-rolls`) |
| switch_passwords | `gpu-lab:switchPasswords` (object: switch name -> password) | switch Commands |
| pull_secret | `gpu-lab:pullSecret` | OpenShift install-config |
| ssh_public_key | `gpu-lab:sshPublicKey` | OpenShift install-config (core user) |
| helper_ssh_private_key | `gpu-lab:helperSshPrivateKey` | deploys to the OpenShift helper node |
| kubeconfig | `gpu-lab:kubeconfig` | add-ons and the node rolls' provider, without an OpenShift install here |
| nvidia_license_token | `gpu-lab:nvidiaLicenseToken` | vGPU guest licensing (client_configuration_token.tok) |
| gridd_conf | `gpu-lab:griddConf` | vGPU guest licensing (gridd.conf) |
| registry_auth | `gpu-lab:registryAuth` | pulling the vGPU guest driver image (dockerconfigjson) |
| bitfusion_client_token | `gpu-lab:bitfusionClientToken` | Bitfusion client (tokens archive, base64) |
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import pulumi

from components.model import ConfigError, Problem

T = TypeVar("T")

# (attribute, namespace, key, is an object)
SECRET_KEYS: tuple[tuple[str, str, str, bool], ...] = (
    ("vcenter_password", "vsphere", "password", False),
    ("switch_passwords", "gpu-lab", "switchPasswords", True),
    ("pull_secret", "gpu-lab", "pullSecret", False),
    ("ssh_public_key", "gpu-lab", "sshPublicKey", False),
    ("helper_ssh_private_key", "gpu-lab", "helperSshPrivateKey", False),
    ("kubeconfig", "gpu-lab", "kubeconfig", False),
    ("nvidia_license_token", "gpu-lab", "nvidiaLicenseToken", False),
    ("gridd_conf", "gpu-lab", "griddConf", False),
    ("registry_auth", "gpu-lab", "registryAuth", False),
    ("bitfusion_client_token", "gpu-lab", "bitfusionClientToken", False),
)


@dataclass(frozen=True)
class LabSecrets:
    """Secret Outputs; None where the stack does not set the key."""

    vcenter_password: pulumi.Output[str] | None = None
    switch_passwords: pulumi.Output[dict[str, str]] | None = None
    pull_secret: pulumi.Output[str] | None = None
    ssh_public_key: pulumi.Output[str] | None = None
    helper_ssh_private_key: pulumi.Output[str] | None = None
    kubeconfig: pulumi.Output[str] | None = None
    nvidia_license_token: pulumi.Output[str] | None = None
    gridd_conf: pulumi.Output[str] | None = None
    registry_auth: pulumi.Output[str] | None = None
    bitfusion_client_token: pulumi.Output[str] | None = None

    def require(self, attribute: str, why: str) -> pulumi.Output[Any]:
        """The secret, or a clear error naming the config key to set."""
        value = getattr(self, attribute)
        if value is None:
            namespace, key = next((n, k) for a, n, k, _ in SECRET_KEYS if a == attribute)
            raise MissingSecretError(
                f"{namespace}:{key} is not set but {why}; "
                f"set it with: pulumi config set --secret {namespace}:{key} <value>"
            )
        return value

    def switch_password(self, switch_name: str) -> pulumi.Output[str]:
        passwords = self.require("switch_passwords", f"switch {switch_name} needs a password")
        return pulumi.Output.secret(passwords).apply(functools.partial(_switch_entry, switch_name=switch_name))


def _switch_entry(passwords: Mapping[str, str], switch_name: str) -> str:
    if switch_name not in passwords:
        raise MissingSecretError(
            f"gpu-lab:switchPasswords has no entry for switch {switch_name!r}; set it with: "
            f"pulumi config set --secret --path 'gpu-lab:switchPasswords.{switch_name}' <password>"
        )
    return passwords[switch_name]


def secret_output(value: pulumi.Output[T]) -> pulumi.Output[T]:
    """pulumi.Output.secret for an Output, keeping its type: the SDK's Input[T] signature leaves type
    checkers with Output[Never] for a typed Output."""
    return cast(pulumi.Output[T], pulumi.Output.secret(cast(Any, value)))


class MissingSecretError(ValueError):
    pass


# Secrets that only log in to a machine pulumi-command runs a command on: the helper node (its SSH
# key) and the switches (their passwords). A preview runs no Command, so it never uses them; a
# preview job is not given them (docs/security.md).
PREVIEW_OPTIONAL: frozenset[str] = frozenset({"helper_ssh_private_key", "switch_passwords"})


# What a preview's Commands carry in place of a PREVIEW_OPTIONAL secret the stack does not set.
PREVIEW_STAND_IN = "(not given to previews)"


def preview_stand_ins(secrets: LabSecrets, dry_run: bool, switch_names: Sequence[str] = ()) -> LabSecrets:
    """During a preview, each unset secret of PREVIEW_OPTIONAL gets a stand-in secret value (one
    entry per switch for the switch passwords); the Commands that would use it are planned, not
    run. The stand-in is a known value, not an unknown one: pulumi-command's schema makes a whole
    `connection` secret, and one unknown field would make the whole connection unknown to the
    engine and to the policy pack, which then could not see its host or host key. Outside a
    preview (``pulumi up``'s update, destroy) nothing changes: a missing secret is still the clear
    error of check_required_secrets, before any resource is registered.
    """
    if not dry_run:
        return secrets
    stand_ins: dict[str, Any] = {
        "helper_ssh_private_key": PREVIEW_STAND_IN,
        "switch_passwords": dict.fromkeys(switch_names, PREVIEW_STAND_IN),
    }
    missing = {a: pulumi.Output.secret(stand_ins[a]) for a in sorted(PREVIEW_OPTIONAL) if getattr(secrets, a) is None}
    return dataclasses.replace(secrets, **missing) if missing else secrets


def load_secrets() -> LabSecrets:
    """Read every secret key the stack sets (call from __main__ only)."""
    values: dict[str, Any] = {}
    for attribute, namespace, key, is_object in SECRET_KEYS:
        config = pulumi.Config(namespace)
        values[attribute] = config.get_secret_object(key) if is_object else config.get_secret(key)
    return LabSecrets(**values)


def check_required_secrets(needed: Sequence[tuple[str, str]], secrets: LabSecrets) -> None:
    """Fail before any resource is registered when a secret the lab needs is missing.

    needed: (LabSecrets attribute, why) for each secret the configured sections need
    (LabConfig.required_secrets).
    """
    problems = []
    for attribute, why in needed:
        try:
            secrets.require(attribute, why)
        except MissingSecretError as err:
            problems.append(str(err))
    if problems:
        raise MissingSecretError("missing secrets:\n  - " + "\n  - ".join(problems))


def _is_ciphertext(value: Any) -> bool:
    """A stack file's encrypted value: `{secure: <ciphertext>}`."""
    return isinstance(value, Mapping) and set(value) == {"secure"}


def plaintext_secret_problems(config: Mapping[str, Any],
                              is_secret: Callable[[str], bool] | None = None) -> list[Problem]:
    """Secret keys whose value is plain text, each with the command that stores it encrypted.

    ``config`` maps "ns:key" to values: a stack file's `config:` block (encrypted values are
    `{secure: ...}`), or, with ``is_secret`` (the engine's own marker), the program's config.
    The value itself never goes into the message.
    """
    problems = []
    for _, namespace, key, is_object in SECRET_KEYS:
        full = f"{namespace}:{key}"
        if full not in config or config[full] is None:
            continue
        value = config[full]
        if is_secret is not None:
            plain = [] if is_secret(full) else [full]
        elif is_object and isinstance(value, Mapping) and not _is_ciphertext(value):
            plain = [f"{full}.{entry}" for entry, v in value.items() if not _is_ciphertext(v)]
        else:
            plain = [] if _is_ciphertext(value) else [full]
        for where in plain:
            target = f"--path '{where}' <value>" if where != full else f"{full} <value>"
            problems.append(Problem(where, "is in plain text in the stack file; a credential must be a Pulumi "
                                           f"secret: delete the line and run `pulumi config set --secret {target}`"))
    return problems


def check_secrets_are_secret(config: Mapping[str, Any], is_secret: Callable[[str], bool]) -> None:
    """Refuse a credential the engine did not get as a secret (plain text in the stack file)."""
    problems = plaintext_secret_problems(config, is_secret)
    if problems:
        raise ConfigError(problems, source="the stack's secrets")


SecretRule = Callable[[str, str], list[Problem]]
"""(plain value, key path) -> problems; the messages never quote the value."""


def check_secret_formats(rules: Mapping[str, SecretRule]) -> None:
    """Fail before any resource is registered when a secret a consumer parses is malformed.

    rules: gpu-lab key -> the consumer's check (LabConfig.secret_format_rules). Reads the plain
    values once, here, and never puts them in a message: openshift-install would echo a rejected
    pull secret whole into the Command's logged stderr.
    """
    config = pulumi.Config("gpu-lab")
    problems = []
    for key, rule in rules.items():
        value = config.get(key)
        if value is not None:
            problems += rule(value, f"gpu-lab:{key}")
    if problems:
        raise ConfigError(problems, "the lab secrets (values not shown)")
