"""Stacks built before components/dynamic/ keep working: each resource's `__provider` input is its
provider pickled by module and class name, so the old names must still unpickle, to the new classes.
And states written before the explicit providers held the vCenter connection keep working: the copy
each resource kept is ignored by diff, and dropped by a refresh.

old_state_providers.json holds the pickles the release v0.1.0 and main at 832b9fc wrote (its `how`
says how they were made).
"""

from __future__ import annotations

import base64
import json
import pickletools
import subprocess
import sys
from pathlib import Path

import dill
import pytest
from lab_vcsim import configured, vm_named
from pulumi.dynamic.dynamic import serialize_provider

from components.dynamic import guard, host_settings, roll, vgpu

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = json.loads((Path(__file__).parent / "old_state_providers.json").read_text())
OLD_PICKLES = {(state, name): pickled for state, providers in FIXTURE["states"].items()
               for name, pickled in providers.items()}
NEW_CLASSES = {
    "components.vsphere.dynamic.AdvancedOptionProvider": host_settings.AdvancedOptionProvider,
    "components.vsphere.dynamic.FirewallRulesetProvider": host_settings.FirewallRulesetProvider,
    "components.vsphere.dynamic.GraphicsTypeProvider": host_settings.GraphicsTypeProvider,
    "components.vsphere.dynamic.ModuleOptionsProvider": host_settings.ModuleOptionsProvider,
    "components.vsphere.dynamic.VgpuProfileProvider": vgpu.VgpuProfileProvider,
    "components.vsphere.roll.NodeRollProvider": roll.NodeRollProvider,
    "components.identity._IdentityProvider": guard._IdentityProvider,
}


def referenced(pickled: str) -> list[str]:
    """The module.name globals a pickle loads (its STACK_GLOBAL's two strings before it)."""
    strings, found = [], []
    for opcode, arg, _pos in pickletools.genops(base64.b64decode(pickled)):
        if isinstance(arg, str):
            strings.append(arg)
        if opcode.name == "STACK_GLOBAL":
            found.append(".".join(strings[-2:]))
    return found


def test_the_fixture_holds_every_provider_of_both_states():
    assert {name for _state, name in OLD_PICKLES} == set(NEW_CLASSES)
    for (_state, name), pickled in OLD_PICKLES.items():
        assert referenced(pickled) == [name]  # by reference: the class's old module and name, nothing else


@pytest.mark.parametrize("state, name", sorted(OLD_PICKLES))
def test_an_old_pickle_loads_the_new_class(state, name):
    provider = dill.loads(base64.b64decode(OLD_PICKLES[(state, name)]))
    assert type(provider) is NEW_CLASSES[name]


@pytest.mark.parametrize("name", sorted(NEW_CLASSES))
def test_an_old_pickle_loads_in_a_fresh_process(name):
    """As the engine's provider process does (`python -m pulumi.dynamic`): the old module imported first."""
    pickled = next(p for (_s, n), p in OLD_PICKLES.items() if n == name)
    script = ("import base64, sys, dill\n"
              "p = dill.loads(base64.b64decode(sys.argv[1]))\n"
              "print(type(p).__module__ + '.' + type(p).__qualname__)\n")
    done = subprocess.run([sys.executable, "-c", script, pickled], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    new = NEW_CLASSES[name]
    assert done.stdout.strip() == f"{new.__module__}.{new.__qualname__}"


def test_new_state_names_the_new_modules():
    for new in NEW_CLASSES.values():
        assert referenced(serialize_provider(new())) == [f"{new.__module__}.{new.__qualname__}"]
        assert new.__module__.startswith("components.dynamic.")


# ---------------------------------------------------------------- the inputs of an old state
#
# Before its explicit provider held the vCenter connection, each resource carried it in its inputs, and
# so in its outputs (the vGPU profiles the node's cluster access too): a state written by the previous
# release still has them. They are ignored: the connection is the provider's configuration only.

OLD_CONNECTION = {"server": "vc-old.lab.example", "user": "administrator@vsphere.local",
                  "password": "the-password-before", "insecure": False, "port": 443}
"""What a previous release kept in each resource; not lab-vcsim's, so a provider that used it would fail."""
RETIRED = {"server", "user", "password", "insecure", "port", "kubeconfig", "oc"}
NEW_SERIALIZED = "c2VyaWFsaXplZA=="


def old_states(si) -> list[tuple[type, str, dict, dict]]:
    """(provider class, id, the new program's inputs, the previous release's outputs) of one resource each."""
    vm = vm_named(si, "DC0_H0_VM1")
    pending = {"pendingReboot": None, "pendingSinceBoot": None}
    cases = [
        (host_settings.AdvancedOptionProvider, "DC0_H0:option:Net.PVRDMAVmknic",
         {"hostName": "DC0_H0", "key": "Net.PVRDMAVmknic", "value": ""}, {"original": ""}),
        (host_settings.FirewallRulesetProvider, "DC0_H0:firewall:pvrdma",
         {"hostName": "DC0_H0", "ruleset": "pvrdma", "enabled": False}, {"original": False}),
        (host_settings.GraphicsTypeProvider, "DC0_H0:graphics",
         {"hostName": "DC0_H0", "graphicsType": "shared", **pending}, {"original": "shared"}),
        (host_settings.ModuleOptionsProvider, "DC0_H0:module:nmlx5_core",
         {"hostName": "DC0_H0", "module": "nmlx5_core", "options": "", **pending}, {"original": ""}),
        (vgpu.VgpuProfileProvider, f"{vm._moId}:vgpu",
         {"vmId": vm._moId, "vmName": vm.name, "nodeName": "w01", "profile": ""},
         {"original": "", "kubeconfig": "apiVersion: v1\n", "oc": "/usr/local/bin/oc"}),
    ]
    out = []
    for cls, id_, inputs, kept in cases:
        news = {"__provider": NEW_SERIALIZED, "kind": cls.kind, "original": None, **inputs}
        olds = {"kind": cls.kind, **OLD_CONNECTION, **inputs, **kept}
        if "pendingReboot" in inputs:
            olds = {**olds, "pendingReboot": False, "pendingSinceBoot": None}
        out.append((cls, id_, news, olds))
    return out


def test_a_refresh_of_an_old_state_drops_the_connection_it_kept(si, conn_props):
    for cls, id_, _news, olds in old_states(si):
        read = configured(cls(), conn_props).read(id_, olds)  # logs in with the provider's connection only
        assert read.id == id_, cls.__name__
        assert not RETIRED & set(read.outs), (cls.__name__, sorted(RETIRED & set(read.outs)))
        # everything else the state held is still there, the setting as vSphere has it
        assert {k: v for k, v in olds.items() if k not in RETIRED} == read.outs, cls.__name__
        assert "the-password-before" not in repr(read.outs)


def test_an_old_state_diffs_as_no_change_against_inputs_without_the_connection(si, conn_props):
    """The first `up` of this release: the program's inputs have no connection any more, the state still has
    it. No update (it would only drop the copies; a refresh does) and no replace (the server was a target)."""
    for cls, id_, news, olds in old_states(si):
        diff = configured(cls(), conn_props).diff(id_, olds, news)
        assert (diff.changes, diff.replaces) == (False, []), cls.__name__
        # the same old state against a value that did change: an update, still no replace
        value_key = cls.value_key
        changed = {**news, value_key: "x" if not isinstance(news[value_key], bool) else not news[value_key]}
        diff = configured(cls(), conn_props).diff(id_, olds, changed)
        assert (diff.changes, diff.replaces) == (True, []), cls.__name__
