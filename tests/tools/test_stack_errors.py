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

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
LAB = (REPO / "Pulumi.lab.yaml").read_text()


def lab_with(old: str, new: str) -> str:
    assert old in LAB, old
    return LAB.replace(old, new, 1)


def lab_data(change) -> str:
    data = yaml.safe_load(LAB)
    change(data["config"])
    return yaml.safe_dump(data, sort_keys=False)


# (id, stack file text, fragments every one of which must be in the error output)
CASES = [
    ("section-typo-switch", lab_with("gpu-lab:switches:", "gpu-lab:switch:"),
     ["switch: unknown section", "allowed: vsphere, openshift, switches, addons", "did you mean switches?"]),
    ("section-typo-addon", lab_with("gpu-lab:addons:", "gpu-lab:addon:"),
     ["addon: unknown section", "did you mean addons?"]),
    ("section-typo-vsphre", lab_with("gpu-lab:vsphere:", "gpu-lab:vsphre:"),
     ["vsphre: unknown section", "did you mean vsphere?"]),
    ("secret-key-typo", lab_with("config:\n", "config:\n  gpu-lab:pullSecrt: {secure: AAAA}\n"),
     ["pullSecrt: unknown section", "did you mean pullSecret?"]),
    ("empty-file", "", ["the file is empty", "config:"]),
    ("only-comments", "# nothing here yet\n", ["the file is empty", "config:"]),
    ("top-key-typo", LAB.replace("config:\n", "confg:\n", 1),
     ["confg: unknown top-level key", "config, secretsprovider, encryptionsalt, encryptedkey",
      "did you mean config?"]),
    ("config-is-a-list", "config:\n  - gpu-lab:vsphere\n", ["config: ['gpu-lab:vsphere']", "must be a mapping"]),
    ("config-without-gpu-lab", "config:\n  vsphere:user: administrator@vsphere.local\n",
     ["gpu-lab: no configuration", "gpu-lab:vsphere, gpu-lab:openshift, gpu-lab:switches, gpu-lab:addons"]),
    ("namespace-typo", lab_with("gpu-lab:addons:", "gpu-lb:addons:"),
     ["config.gpu-lb:addons: unknown namespace", "gpu-lab, vsphere, pulumi, kubernetes, command",
      "did you mean gpu-lab?"]),
    ("key-without-namespace", lab_with("config:\n", "config:\n  datacenter: SC2\n"),
     ["config.datacenter:", "namespace:key", "allowed namespaces: gpu-lab"]),
    ("yaml-unclosed-bracket", lab_with('hosts: ["1/1", "1/2", "1/3", "1/4"]', 'hosts: ["1/1", "1/2"'),
     ["Pulumi.broken.yaml:6", "not valid YAML"]),
    ("yaml-tab-indent", lab_with("    datacenter: SC2", "\tdatacenter: SC2"),
     ["Pulumi.broken.yaml:10:1", "not valid YAML", "'\\t'", "never tabs"]),
    ("yaml-duplicate-key", lab_with("    cluster: sc2-workload\n", "    cluster: sc2-workload\n    cluster: other\n"),
     ["Pulumi.broken.yaml:12:5", "key 'cluster' is given twice"]),
    ("plaintext-vcenter-password", lab_with("config:\n", "config:\n  vsphere:password: hunter2\n"),
     ["vsphere:password: is in plain text", "pulumi config set --secret vsphere:password <value>"]),
    ("plaintext-switch-password", lab_with("config:\n", "config:\n  gpu-lab:switchPasswords:\n    sc2sw01: admin\n"),
     ["gpu-lab:switchPasswords.sc2sw01: is in plain text",
      "pulumi config set --secret --path 'gpu-lab:switchPasswords.sc2sw01' <value>"]),
    ("plaintext-pull-secret", lab_with("config:\n", "config:\n  gpu-lab:pullSecret: '{\"auths\": {}}'\n"),
     ["gpu-lab:pullSecret: is in plain text", "pulumi config set --secret gpu-lab:pullSecret <value>"]),
    ("cpus-four", lab_with("sizing: {cpus: 4, memoryGb: 24, diskGb: 50}", "sizing: {cpus: four, memoryGb: 24, diskGb: 50}"),
     ["vsphere.workers.sizing.cpus: 'four'", "valid integer"]),
    ("bad-address", lab_with("managementAddress: 172.16.7.10", "managementAddress: 192.168.0.300"),
     ["vsphere.bootstrap.managementAddress: '192.168.0.300'", "not a valid IPv4 address"]),
    ("bad-first-address", lab_with("vmkAddresses: {first: 192.168.0.24}", "vmkAddresses: {first: 192.168.0.300}"),
     ["vsphere.vmkAddresses.first: '192.168.0.300'", "IPv4 address"]),
    ("unknown-key-lacpp", lab_with("      lacp: false", "      lacpp: false"),
     ["vsphere.vds.lacpp: unknown key", "allowed here: name, version, mtu, lacp", "did you mean lacp?"]),
    ("unknown-nested-key", lab_with("      address: 172.16.7.5", "      adress: 172.16.7.5"),
     ["openshift.helper.adress: unknown key", "address", "did you mean address?"]),
    ("switch-os-literal", lab_with("      os: onyx", "      os: onix"),
     ["switches[0].os: 'onix'", "'onyx' or 'cumulus'"]),
    ("pfc-priority-range", lab_with("        pfcPriority: 3\n        trust: dscp\n", "        pfcPriority: 9\n        trust: dscp\n"),
     ["vsphere.networks.rdma.pfcPriority: 9", "less than or equal to 7"]),
    ("section-wrong-type", lab_data(lambda c: c.update({"gpu-lab:switches": "sc2sw01"})),
     ["switches: 'sc2sw01'", "valid list"]),
    ("worker-hosts-mapping", lab_data(lambda c: c["gpu-lab:vsphere"].update(workerHosts={"name": "sc2esx24"})),
     ["vsphere.workerHosts: {'name': 'sc2esx24'}", "valid list"]),
    ("empty-section", lab_data(lambda c: c.update({"gpu-lab:switches": None})),
     ["switches: the section is empty", "remove gpu-lab:switches"]),
    ("duplicate-address", lab_with("managementAddress: 172.16.7.10", "managementAddress: 172.16.7.12"),
     ["vsphere.controlPlane.managementAddresses.first: management address 172.16.7.12",
      "sckubbs01 (vsphere.bootstrap.managementAddress)", "sckubm02 (vsphere.controlPlane.managementAddresses.first)"]),
    ("duplicate-vm-name", lab_with("names: [sckubw01, sckubw02, sckubw03, sckubw04]",
                                   "names: [sckubw01, sckubw02, sckubw03, sckubw01]"),
     ["vsphere.workers.names[3]: name 'sckubw01'", "vsphere.workers.names[0]", "names must be unique"]),
    ("two-control-plane-vms", lab_with("names: [sckubm01, sckubm02, sckubm03]", "names: [sckubm01, sckubm02]"),
     ["vsphere.controlPlane.names: 2 control-plane node(s)", "at least 3"]),
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


def test_program_config_sees_every_key_the_sdk_holds():
    """components.config.program_config reads the SDK's private CONFIG variable: fail loudly if it moves."""
    from contextvars import ContextVar

    import pulumi
    from pulumi.runtime import config as runtime_config

    from components.config import program_config

    assert isinstance(runtime_config.CONFIG, ContextVar), "pulumi.runtime.config.CONFIG changed; see program_config"
    pulumi.runtime.set_all_config({"gpu-lab:switch": "[]", "vsphere:user": "u"}, [])
    assert {"gpu-lab:switch", "vsphere:user"} <= set(program_config())


def run_with(config: dict, **kwargs):
    from tools.mockrun import run_program

    with pytest.raises(Exception) as err:
        run_program(config, **kwargs)
    assert type(err.value).__name__ == "RunError", err.value
    return str(err.value)


def test_program_names_a_misspelt_section_instead_of_dropping_it():
    from tools.mockrun import stack_config

    config = stack_config("lab")
    config["gpu-lab:switch"] = config.pop("gpu-lab:switches")
    message = run_with(config)
    assert "switch: unknown section" in message and "did you mean switches?" in message


def test_program_without_any_section_is_an_error_not_zero_resources():
    message = run_with({"vsphere:user": "administrator@vsphere.local"})
    assert "gpu-lab: no configuration" in message


def test_program_refuses_a_credential_the_engine_did_not_mark_secret():
    from tools.mockrun import placeholder_secrets, stack_config

    config = stack_config("lab")
    config["vsphere:password"] = "hunter2"
    secrets = placeholder_secrets(config)
    del secrets["vsphere:password"]  # the stack's plain value reaches the program unmarked
    message = run_with(config, secrets=secrets)
    assert "vsphere:password: is in plain text" in message and "hunter2" not in message
    assert "pulumi config set --secret vsphere:password <value>" in message
