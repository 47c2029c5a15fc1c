"""Broken stack files through the real entry point (`python -m tools.plan` in a subprocess).

Each mistake a user can make in Pulumi.<stack>.yaml must end in exit 2 before anything is
planned, with the key path (or file:line:column), the value given and what is allowed. None
may pass silently (exit 0) or crash (exit 1, a traceback).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import builders
import pytest

REPO = Path(__file__).resolve().parents[2]
# The test lab as a user would write its stack file (tests/builders.py).
LAB = builders.stack_yaml(builders.lab_stack())


def lab_with(old: str, new: str) -> str:
    assert old in LAB, old
    return LAB.replace(old, new, 1)


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line holding `needle` (where a YAML error is reported)."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def lab_data(change) -> str:
    config = builders.lab_stack()
    change(config)
    return builders.stack_yaml(config)


def renamed(old: str, new: str):
    """A change that renames a config key, keeping its value."""
    return lambda c: c.__setitem__(new, c.pop(old))


def added(key: str, value):
    return lambda c: c.__setitem__(key, value)


VSPHERE, SWITCH, OPENSHIFT = "gpu-lab:vsphere", "gpu-lab:switches", "gpu-lab:openshift"
UNCLOSED = lab_with("hosts: [1/1, 1/2, 1/3, 1/4]", "hosts: [1/1, 1/2")
TABBED = lab_with("    datacenter: dc1", "\tdatacenter: dc1")
TWICE = lab_with("    cluster: gpu-cluster\n", "    cluster: gpu-cluster\n    cluster: other\n")

# (id, stack file text, fragments every one of which must be in the error output)
CASES = [
    ("section-typo-switch", lab_data(renamed("gpu-lab:switches", "gpu-lab:switch")),
     ["switch: unknown section", "allowed: vsphere, openshift, switches, addons, lifecycle", "did you mean switches?"]),
    ("section-typo-addon", lab_data(renamed("gpu-lab:addons", "gpu-lab:addon")),
     ["addon: unknown section", "did you mean addons?"]),
    ("section-typo-vsphre", lab_data(renamed("gpu-lab:vsphere", "gpu-lab:vsphre")),
     ["vsphre: unknown section", "did you mean vsphere?"]),
    ("secret-key-typo", lab_data(added("gpu-lab:pullSecrt", {"secure": "AAAA"})),
     ["pullSecrt: unknown section", "did you mean pullSecret?"]),
    ("empty-file", "", ["the file is empty", "config:"]),
    ("only-comments", "# nothing here yet\n", ["the file is empty", "config:"]),
    ("top-key-typo", LAB.replace("config:\n", "confg:\n", 1),
     ["confg: unknown top-level key", "config, secretsprovider, encryptionsalt, encryptedkey",
      "did you mean config?"]),
    ("config-is-a-list", "config:\n  - gpu-lab:vsphere\n", ["config: ['gpu-lab:vsphere']", "must be a mapping"]),
    ("config-without-gpu-lab", "config:\n  vsphere:user: administrator@vsphere.local\n",
     ["gpu-lab: no configuration", "gpu-lab:vsphere, gpu-lab:openshift, gpu-lab:switches, gpu-lab:addons"]),
    ("namespace-typo", lab_data(renamed("gpu-lab:addons", "gpu-lb:addons")),
     ["config.gpu-lb:addons: unknown namespace", "gpu-lab, vsphere, pulumi, kubernetes, command",
      "did you mean gpu-lab?"]),
    ("key-without-namespace", lab_data(added("datacenter", "dc1")),
     ["config.datacenter:", "namespace:key", "allowed namespaces: gpu-lab"]),
    # the parser stops at the line after the unclosed one
    ("yaml-unclosed-bracket", UNCLOSED, [f"Pulumi.broken.yaml:{line_of(UNCLOSED, 'hosts: [1/1, 1/2') + 1}:",
                                         "not valid YAML"]),
    ("yaml-tab-indent", TABBED,
     [f"Pulumi.broken.yaml:{line_of(TABBED, chr(9))}:1", "not valid YAML", "'\\t'", "never tabs"]),
    ("yaml-duplicate-key", TWICE,
     [f"Pulumi.broken.yaml:{line_of(TWICE, 'cluster: other')}:5", "key 'cluster' is given twice"]),
    ("plaintext-vcenter-password", lab_data(added("vsphere:password", "hunter2")),
     ["vsphere:password: is in plain text", "pulumi config set --secret vsphere:password <value>"]),
    ("plaintext-switch-password", lab_data(added("gpu-lab:switchPasswords", {builders.SWITCH: "admin"})),
     [f"gpu-lab:switchPasswords.{builders.SWITCH}: is in plain text",
      f"pulumi config set --secret --path 'gpu-lab:switchPasswords.{builders.SWITCH}' <value>"]),
    ("plaintext-pull-secret", lab_data(added("gpu-lab:pullSecret", '{"auths": {}}')),
     ["gpu-lab:pullSecret: is in plain text", "pulumi config set --secret gpu-lab:pullSecret <value>"]),
    ("cpus-four", lab_data(lambda c: c[VSPHERE]["workers"]["sizing"].update(cpus="four")),
     ["vsphere.workers.sizing.cpus: 'four'", "valid integer"]),
    ("bad-address", lab_data(lambda c: c[VSPHERE]["bootstrap"].update(managementAddress="192.168.0.300")),
     ["vsphere.bootstrap.managementAddress: '192.168.0.300'", "not a valid IPv4 address"]),
    ("bad-first-address", lab_data(lambda c: c[VSPHERE].update(vmkAddresses={"first": "192.168.0.300"})),
     ["vsphere.vmkAddresses.first: '192.168.0.300'", "IPv4 address"]),
    ("unknown-key-lacpp", lab_data(lambda c: c[VSPHERE]["vds"].update(lacpp=c[VSPHERE]["vds"].pop("lacp"))),
     ["vsphere.vds.lacpp: unknown key", "allowed here: name, version, mtu, lacp", "did you mean lacp?"]),
    ("unknown-nested-key", lab_data(lambda c: c[OPENSHIFT]["helper"].update(adress=c[OPENSHIFT]["helper"].pop("address"))),
     ["openshift.helper.adress: unknown key", "address", "did you mean address?"]),
    # two entries reaching one switch at the same SSH address and port: its items applied and undone twice
    ("two-switches-one-ssh-endpoint",
     lab_data(lambda c: c[SWITCH].append({**c[SWITCH][0], "name": "sw02"})),
     ["switches: management address", "is given to more than one switch"]),
    ("switch-os-literal", lab_data(lambda c: c[SWITCH][0].update(os="onix")),
     ["switches[0].os: 'onix'", "'onyx' or 'cumulus'"]),
    ("pfc-priority-range", lab_data(lambda c: c[VSPHERE]["networks"]["rdma"].update(pfcPriority=9)),
     ["vsphere.networks.rdma.pfcPriority: 9", "less than or equal to 7"]),
    ("section-wrong-type", lab_data(lambda c: c.update({SWITCH: builders.SWITCH})),
     [f"switches: '{builders.SWITCH}'", "valid list"]),
    ("worker-hosts-mapping", lab_data(lambda c: c[VSPHERE].update(workerHosts={"name": builders.WORKER_HOSTS[0]})),
     [f"vsphere.workerHosts: {{'name': '{builders.WORKER_HOSTS[0]}'}}", "valid list"]),
    ("empty-section", lab_data(lambda c: c.update({"gpu-lab:switches": None})),
     ["switches: the section is empty", "remove gpu-lab:switches"]),
    ("duplicate-address", lab_data(lambda c: c[VSPHERE]["bootstrap"].update(managementAddress="172.16.7.12")),
     ["vsphere.controlPlane.managementAddresses.first: management address 172.16.7.12",
      f"{builders.BOOTSTRAP} (vsphere.bootstrap.managementAddress)",
      f"{builders.CONTROL_PLANE[1]} (vsphere.controlPlane.managementAddresses.first)"]),
    ("duplicate-vm-name", lab_data(lambda c: c[VSPHERE]["workers"]["names"].__setitem__(3, builders.WORKERS[0])),
     [f"vsphere.workers.names[3]: name '{builders.WORKERS[0]}'", "vsphere.workers.names[0]", "names must be unique"]),
    ("two-control-plane-vms", lab_data(lambda c: c[VSPHERE]["controlPlane"].update(names=builders.CONTROL_PLANE[:2])),
     ["vsphere.controlPlane.names: 2 control-plane node(s)", "at least 3"]),
    ("helper-host-key-not-a-key", lab_data(lambda c: c[OPENSHIFT]["helper"].update(hostKey="ssh-ed25519 AAAA")),
     ["openshift.helper.hostKey: 'ssh-ed25519 AAAA' is not an OpenSSH public key (the key data is truncated)",
      "ssh-keyscan -t ed25519 <address>"]),
    ("switch-host-key-private-key", lab_data(lambda c: c[SWITCH][0].update(
        hostKey="-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----")),
     ["switches[0].hostKey: is a private key; a host key is the host's public key", "'ssh-ed25519 AAAA...'"]),
    ("switch-host-key-two-lines", lab_data(lambda c: c[SWITCH][0].update(
        hostKey="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC8wDKIPxTD+BPx9yKrkMAGoDRrmSxLth9xr0wbOTtcO\nssh-rsa AAAA")),
     ["switches[0].hostKey: is 2 lines, not one key line"]),
    ("several-mistakes", lab_data(lambda c: (
        c.__setitem__("gpu-lab:addon", c.pop("gpu-lab:addons")),
        c["gpu-lab:vsphere"]["vds"].update(lacp=True),
        c["gpu-lab:switches"][0]["roce"].update(ecnMinKb=2000),
        c["gpu-lab:vsphere"]["workers"]["sizing"].update(cpus=2),
    )), ["4 problem(s)", "addon: unknown section", "vsphere.vds.lacp:", "switches[0].roce.ecnMinKb",
         "vsphere.workers.sizing.cpus: 2 is below"]),
    ("structure-error-does-not-hide-other-sections", lab_data(lambda c: (
        c["gpu-lab:addons"]["jobs"].update(nodes=5),
        c["gpu-lab:vsphere"]["vds"].update(lacp=True),
        c["gpu-lab:switches"][0]["roce"].update(ecnMinKb=2000),
    )), ["3 problem(s)", "addons.jobs.nodes: 5", "vsphere.vds.lacp", "switches[0].roce.ecnMinKb"]),
]


def test_at_least_25_broken_stacks():
    assert len(CASES) >= 25 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("text,fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_broken_stack_exits_2_with_path_value_and_what_is_allowed(tmp_path, text, fragments):
    stack_file = tmp_path / "Pulumi.broken.yaml"
    stack_file.write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "tools.plan", "--stack", "broken", "--stack-file", str(stack_file),
         "--out", str(tmp_path / "out")],
        cwd=REPO, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out, out
    for fragment in fragments:
        assert fragment in proc.stderr, (fragment, proc.stderr)
    assert not (tmp_path / "out" / "plan.json").exists()


# ---------------------------------------------------------------- the program's own view (under mocks)


def test_program_config_sees_every_key_the_engine_hands_over():
    """components.config.program_config lists the keys of PULUMI_CONFIG, as the engine sets it and as
    tools/mockrun.py does for `make plan`; pulumi.Config sees the same values, secrets marked."""
    import pulumi

    from components.config import program_config
    from tools.mockrun import engine_config

    with engine_config({"gpu-lab:switch": "[]", "vsphere:user": "u", "vsphere:password": "p"}, ["vsphere:password"]):
        assert {"gpu-lab:switch", "vsphere:user", "vsphere:password"} <= set(program_config())
        assert pulumi.Config("vsphere").get("user") == "u"
        assert pulumi.runtime.is_config_secret("vsphere:password")
        assert not pulumi.runtime.is_config_secret("vsphere:user")
    assert "vsphere:user" not in program_config()  # the environment as it was


def run_with(config: dict, **kwargs):
    from tools.mockrun import run_program

    with pytest.raises(Exception) as err:
        run_program(config, **kwargs)
    assert type(err.value).__name__ == "RunError", err.value
    return str(err.value)


def test_program_names_a_misspelt_section_instead_of_dropping_it():
    config = builders.lab_stack()
    config["gpu-lab:switch"] = config.pop("gpu-lab:switches")
    message = run_with(config)
    assert "switch: unknown section" in message and "did you mean switches?" in message


def test_program_without_any_section_is_an_error_not_zero_resources():
    message = run_with({"vsphere:user": "administrator@vsphere.local"})
    assert "gpu-lab: no configuration" in message


def test_program_refuses_a_credential_the_engine_did_not_mark_secret():
    from tools.mockrun import placeholder_secrets

    config = builders.lab_stack()
    config["vsphere:password"] = "hunter2"
    secrets = placeholder_secrets(config)
    del secrets["vsphere:password"]  # the stack's plain value reaches the program unmarked
    message = run_with(config, secrets=secrets)
    assert "vsphere:password: is in plain text" in message and "hunter2" not in message
    assert "pulumi config set --secret vsphere:password <value>" in message


@pytest.mark.parametrize("value, fragment", [
    ("dXNlcjpwYXNzd29yZA==", "gpu-lab:registryAuth: is not JSON"),
    ('{"auths": {}}', 'gpu-lab:registryAuth: needs a non-empty "auths" object'),
])
def test_program_refuses_a_registry_auth_that_is_not_dockerconfigjson(value, fragment):
    """Before the API server would (it refuses a .dockerconfigjson that is not JSON), and without its value."""
    from tools.stackfile import offline_secrets

    config = builders.lab_stack()
    secrets = offline_secrets(config)
    secrets["gpu-lab:registryAuth"] = value
    message = run_with(config, secrets=secrets)
    assert fragment in message and value not in message
    assert message.startswith("1 problem(s) in the lab secrets (values not shown)")
