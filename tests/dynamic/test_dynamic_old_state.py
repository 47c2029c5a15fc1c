"""Stacks built before components/dynamic/ keep working: each resource's `__provider` input is its
provider pickled by module and class name, so the old names must still unpickle, to the new classes.

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
