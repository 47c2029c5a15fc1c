"""A preview may go without the helper node's SSH key and the switch passwords; `up` may not.

The pull-request preview job is not given them (docs/security.md): pulumi-command runs no command
during a preview, so nothing would use them. The program plans the Commands with the value unknown
(what the engine shows for a value known only at update time), and only in a preview.
"""

from __future__ import annotations

import pytest
from builders import lab_stack
from pulumi.output import Unknown

from components.secrets import PREVIEW_OPTIONAL, SECRET_KEYS
from tools.mockrun import placeholder_secrets, run_program

WITHOUT = {"gpu-lab:helperSshPrivateKey", "gpu-lab:switchPasswords"}


def _secrets(config, unset):
    values = placeholder_secrets(config)
    for key in unset:
        values[key] = None
    return values


def test_the_preview_optional_secrets_are_the_helper_key_and_the_switch_passwords():
    keys = {f"{n}:{k}" for a, n, k, _ in SECRET_KEYS if a in PREVIEW_OPTIONAL}
    assert keys == WITHOUT


def test_a_preview_without_the_helper_key_and_switch_passwords_plans_every_resource():
    config = lab_stack()
    full = run_program(config, secrets=_secrets(config, ()), preview=True)
    run = run_program(config, secrets=_secrets(config, WITHOUT), preview=True)
    assert sorted(r.urn for r in run.resources) == sorted(r.urn for r in full.resources)
    remote = [r for r in run.resources if r.type.startswith("command:remote:")]
    assert {r.parent_name for r in remote} >= {"openshift", *(s["name"] for s in config["gpu-lab:switches"])}
    for r in remote:
        connection = r.inputs["connection"]
        # pulumi-command marks `connection` secret as a whole: it stays a secret, with its value unknown
        assert connection["value"].__class__ is Unknown, r.name
    # what does not depend on them is planned as with them
    for r in run.resources:
        if not r.type.startswith("command:remote:"):
            assert r.inputs == full.by_urn(r.urn).inputs, r.name


@pytest.mark.parametrize("unset", [["gpu-lab:helperSshPrivateKey"], ["gpu-lab:switchPasswords"], sorted(WITHOUT)])
def test_up_still_refuses_to_run_without_them(unset):
    config = lab_stack()
    with pytest.raises(Exception, match="missing secrets") as caught:
        run_program(config, secrets=_secrets(config, unset), preview=False)
    for key in unset:
        assert f"{key} is not set" in str(caught.value)


@pytest.mark.parametrize("key", ["gpu-lab:pullSecret", "vsphere:password"])
def test_a_preview_still_needs_the_secrets_it_reads_or_compares(key):
    config = lab_stack()
    with pytest.raises(Exception, match=f"{key} is not set"):
        run_program(config, secrets=_secrets(config, [key]), preview=True)
