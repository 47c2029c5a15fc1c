"""No secret where it does not belong: every secret gets a value of its own (a sentinel), and each
must show up only in the inputs whose purpose is to carry it, marked secret, and in no rendered file.

For every shipped stack (Pulumi.<stack>.yaml) and every stack of the tests (tests/builders.py),
the program runs under mocks with the sentinels as its secrets. Then:

- every string input of every resource (scripts, environment, stdin, triggers, manifests, ...,
  found by walking the recorded inputs, whatever the resources are named) is searched for each
  sentinel, as is and base64-encoded at any offset. A hit is allowed only at a carrier of that
  secret (resource type and input path, CARRIERS), under the engine's secret marker. A Command's
  script (create, update, delete) or a plain environment value is never a carrier;
- the stack's plain outputs hold none;
- `make render` (tools/render.py, with the same secrets) writes no file holding any: the files that
  carry secrets (install-config, Kubernetes Secrets) show them redacted per key.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import builders
import pytest

from components.addons.bitfusion import TOKEN_FILES
from components.secrets import SECRET_KEYS
from tools import render
from tools.mockrun import REPO, Run, run_program
from tools.sdk_access import is_secret_value
from tools.stackfile import bitfusion_token_archive, load_stack_config

SECRET = "kubernetes:core/v1:Secret"
REMOTE = ("command:remote:Command", "command:remote:CopyToRemote")
# Each secret's sentinel: a word found nowhere else, in the form the program parses the secret in.
WORD = {
    "vsphere:password": "SentinelVcenterPassword",
    "gpu-lab:pullSecret": "SentinelPullSecret",
    "gpu-lab:sshPublicKey": "SentinelSshPublicKey",
    "gpu-lab:helperSshPrivateKey": "SentinelHelperPrivateKey",
    "gpu-lab:kubeconfig": "SentinelKubeconfig",
    "gpu-lab:nvidiaLicenseToken": "SentinelLicenseToken",
    "gpu-lab:griddConf": "SentinelGriddConf",
    "gpu-lab:registryAuth": "SentinelRegistryAuth",
    "gpu-lab:bitfusionClientToken": "SentinelBitfusionToken",
    "gpu-lab:switchPasswords": "SentinelSwitchPassword",
}
# Where each secret may be: (resource type, input path). Paths are the recorded inputs' keys,
# list indexes as [n]; a pattern matches the whole path.
CARRIERS: dict[str, set[tuple[str, str]]] = {
    # our dynamic resources log in to vCenter with the login their explicit providers hold (components/dynamic/)
    "vsphere:password": {("pulumi:providers:pulumi-python", "vcenter:password"), ("pulumi:providers:vsphere", "password")},
    # install-config, on openshift-install's stdin
    "gpu-lab:pullSecret": {("command:local:Command", "stdin")},
    "gpu-lab:sshPublicKey": {("command:local:Command", "stdin")},
    "gpu-lab:helperSshPrivateKey": {(kind, "connection.privateKey") for kind in REMOTE},
    "gpu-lab:switchPasswords": {("command:remote:Command", "connection.password")},
    # the add-ons' provider, and the node rolls' provider, whose rolls drain a node before its power-off
    "gpu-lab:kubeconfig": {("pulumi:providers:kubernetes", "kubeconfig"),
                           ("pulumi:providers:pulumi-python", "cluster:kubeconfig")},
    "gpu-lab:nvidiaLicenseToken": {(SECRET, "stringData.client_configuration_token.tok")},
    "gpu-lab:griddConf": {(SECRET, "stringData.gridd.conf")},
    "gpu-lab:registryAuth": {(SECRET, "stringData..dockerconfigjson")},
    "gpu-lab:bitfusionClientToken": {(SECRET, f"stringData.{name}") for name in TOKEN_FILES},
}


def test_every_secret_key_has_a_sentinel_and_carriers():
    keys = {f"{namespace}:{key}" for _, namespace, key, _ in SECRET_KEYS}
    assert set(WORD) == keys == set(CARRIERS)
    assert len(set(WORD.values())) == len(WORD)


def switch_word(name: str) -> str:
    """Each switch's password is a sentinel of its own: it may reach that switch only."""
    return WORD["gpu-lab:switchPasswords"] + re.sub(r"[^A-Za-z0-9]", "", name)


def sentinel_secrets(config: dict[str, Any]) -> dict[str, Any]:
    """A value for every secret key, each holding its sentinel, in the form the program checks."""
    ed25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC8wDKIPxTD+BPx9yKrkMAGoDRrmSxLth9xr0wbOTtcO"
    return {
        "vsphere:password": WORD["vsphere:password"],
        "gpu-lab:pullSecret": json.dumps({"auths": {"cloud.openshift.com": {
            "auth": WORD["gpu-lab:pullSecret"], "email": "ops@lab.invalid"}}}),
        "gpu-lab:sshPublicKey": f"{ed25519} {WORD['gpu-lab:sshPublicKey']}",
        "gpu-lab:helperSshPrivateKey": "-----BEGIN OPENSSH PRIVATE KEY-----\n"
                                       f"{WORD['gpu-lab:helperSshPrivateKey']}\n-----END OPENSSH PRIVATE KEY-----\n",
        "gpu-lab:kubeconfig": f"apiVersion: v1\nkind: Config\ncurrent-context: {WORD['gpu-lab:kubeconfig']}\n",
        "gpu-lab:nvidiaLicenseToken": WORD["gpu-lab:nvidiaLicenseToken"],
        "gpu-lab:griddConf": f"ServerAddress=nls.lab.invalid\n# {WORD['gpu-lab:griddConf']}\n",
        "gpu-lab:registryAuth": json.dumps({"auths": {"registry.lab.invalid:5000": {
            "auth": WORD["gpu-lab:registryAuth"]}}}),
        "gpu-lab:bitfusionClientToken": bitfusion_token_archive(
            {name: f"{WORD['gpu-lab:bitfusionClientToken']}\n" for name in TOKEN_FILES}),
        "gpu-lab:switchPasswords": {sw["name"]: switch_word(sw["name"])
                                    for sw in config.get("gpu-lab:switches") or []},
    }


def forms(word: str) -> list[str]:
    """The word as it shows inside any text: as is, and inside base64 at each of the 3 byte offsets
    (the characters that encode its bytes alone; the neighbours' bytes change the ones at the edges)."""
    found = [word]
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + word.encode()).decode()
        first = -(-offset // 3)  # the first 3-byte group made of the word's bytes only
        last = (offset + len(word)) // 3  # one past the last
        found.append(encoded[4 * first:4 * last])
    return found


def words_in(text: str, words: dict[str, str]) -> list[str]:
    """The names of the words (word name -> word) the text holds in any form."""
    return [name for name, word in words.items() if any(form in text for form in forms(word))]


def strings(value: Any, path: str = "", secret: bool = False) -> Iterator[tuple[str, str, bool]]:
    """(path, text, marked secret) of every string in recorded inputs."""
    if is_secret_value(value):
        yield from strings(value["value"], path, True)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(item, f"{path}.{key}" if path else str(key), secret)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from strings(item, f"{path}[{i}]", secret)
    elif isinstance(value, str):
        yield path, value, secret


def all_words(config: dict[str, Any]) -> dict[str, str]:
    """Sentinel name -> word: one per secret key, one per switch password."""
    words = {key: word for key, word in WORD.items() if key != "gpu-lab:switchPasswords"}
    for sw in config.get("gpu-lab:switches") or []:
        words[f"gpu-lab:switchPasswords.{sw['name']}"] = switch_word(sw["name"])
    return words


def misplaced(run: Run, config: dict[str, Any]) -> list[str]:
    """Every sentinel found outside its carriers, or at a carrier without the secret marker."""
    words = all_words(config)
    switch_hosts = {f"gpu-lab:switchPasswords.{sw['name']}": sw["managementAddress"]
                    for sw in config.get("gpu-lab:switches") or []}
    found = []
    for r in run.resources:
        host = (run_plain(r.inputs).get("connection") or {}).get("host")
        for path, text, secret in strings(r.inputs):
            for name in words_in(text, words):
                key = name.split(".")[0]
                carried = any(kind == r.type and re.fullmatch(pattern, path) for kind, pattern in CARRIERS[key])
                if name in switch_hosts:  # a switch's password goes to that switch only
                    carried = carried and host == switch_hosts[name]
                if not carried or not secret:
                    found.append(f"{name} in {r.type} {r.name!r} input {path}"
                                 f"{'' if secret else ' (not marked secret)'}")
    for output, value in run.outputs.items():
        for name in words_in(json.dumps(value), words):
            found.append(f"{name} in the stack output {output!r}")
    return found


def run_plain(inputs: dict[str, Any]) -> dict[str, Any]:
    from tools.mockrun import unwrap_secrets

    return unwrap_secrets(inputs)


# Every shipped stack by its file, and the tests' own stacks; the add-ons without OpenShift take
# the kubeconfig secret, Bitfusion its token archive.
TEST_STACKS = {
    "tests-lab": builders.lab_stack,
    "tests-baremetal": builders.baremetal_stack,
    "tests-bitfusion": lambda: builders.with_value(builders.lab_stack(), "gpu-lab:addons.bitfusion",
                                                   {"enabled": True, "clientImage": "registry.lab.local:5000/bf:1"}),
    "tests-addons-without-openshift": lambda: {k: v for k, v in builders.lab_stack().items()
                                               if k != "gpu-lab:openshift"},
}
SHIPPED = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in REPO.glob("Pulumi.*.yaml"))


def test_every_shipped_stack_is_checked():
    assert {"lab", "openshift", "sim"} <= set(SHIPPED)


@pytest.fixture(params=[*SHIPPED, *TEST_STACKS])
def stack(request, tmp_path) -> tuple[str, Path | None, dict[str, Any]]:
    """(stack name, stack file or None for the shipped one, its config)."""
    name = request.param
    if name in TEST_STACKS:
        path = builders.write_stack_file(tmp_path, TEST_STACKS[name](), name)
        return name, path, load_stack_config(name, path)
    return name, None, load_stack_config(name)


def test_each_secret_reaches_only_its_carriers(stack):
    name, path, config = stack
    run = run_program(config, stack=name, secrets=sentinel_secrets(config))
    assert misplaced(run, config) == []


def test_rendered_files_hold_no_secret(stack, tmp_path):
    name, path, config = stack
    out = tmp_path / "out"
    written = render.render(name, out, path, secrets=sentinel_secrets(config))
    assert len(written) > 1
    words = all_words(config)
    found = [f"{hit} in {p.relative_to(out)}" for p in written for hit in words_in(p.read_text(), words)]
    assert found == []


# ---------------------------------------------------------------- the check finds what it should


def test_forms_find_a_word_inside_base64_at_any_offset():
    for prefix in ("", "a", "ab", "abc"):
        text = base64.b64encode(f"{prefix}{WORD['gpu-lab:pullSecret']}!".encode()).decode()
        assert words_in(f"data: {text}", WORD) == ["gpu-lab:pullSecret"]
    assert words_in("nothing here", WORD) == []


def test_a_secret_in_a_script_or_a_plain_input_is_reported():
    config = builders.lab_stack()
    run = run_program(config, secrets=sentinel_secrets(config))
    command = next(r for r in run.resources if r.type == "command:remote:Command"
                   and run_plain(r.inputs)["connection"].get("password"))
    leak = WORD["gpu-lab:pullSecret"]
    command.inputs["create"] = f"echo {leak}"  # a script carrying it, even if the whole input were secret
    command.inputs["environment"] = {"TOKEN": base64.b64encode(f"x{leak}".encode()).decode()}
    found = misplaced(run, config)
    assert any(f"{command.name!r} input create" in f for f in found), found
    assert any(f"{command.name!r} input environment.TOKEN (not marked secret)" in f for f in found), found


def test_a_password_sent_to_another_host_is_reported():
    config = builders.lab_stack()
    run = run_program(config, secrets=sentinel_secrets(config))
    switch = next(r for r in run.resources if r.type == "command:remote:Command"
                  and run_plain(r.inputs)["connection"].get("password"))
    switch.inputs["connection"]["value"]["host"] = "172.16.31.99"
    assert misplaced(run, config) == [f"gpu-lab:switchPasswords.{builders.SWITCH} in command:remote:Command "
                                      f"{switch.name!r} input connection.password"]
