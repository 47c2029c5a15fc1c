"""A preview may go without the helper node's SSH key and the switch passwords; `up` may not.

The pull-request preview job is not given them (docs/security.md): pulumi-command runs no command
during a preview, so nothing would use them. The program plans the Commands with a stand-in secret
in their place, and only in a preview; the connection stays known, so the engine and the policy
pack still see its host and host key.
"""

from __future__ import annotations

import pytest
from builders import lab_stack

from components.secrets import PREVIEW_OPTIONAL, PREVIEW_STAND_IN, SECRET_KEYS
from tools.mockrun import placeholder_secrets, run_program
from tools.sdk_access import is_secret_value

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
        assert is_secret_value(connection), r.name  # pulumi-command marks `connection` secret as a whole
        given = full.by_urn(r.urn).plain()["connection"]
        seen = r.plain()["connection"]
        credential = "privateKey" if "privateKey" in given else "password"
        assert seen[credential] == PREVIEW_STAND_IN, r.name
        # everything else of the connection as with the secrets: host, port, user, hostKey, dial bounds
        assert {k: v for k, v in seen.items() if k != credential} == \
            {k: v for k, v in given.items() if k != credential}, r.name
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


def test_the_pack_still_sees_where_each_connection_goes_in_such_a_preview():
    from tools import plan, policy_check

    config = lab_stack()  # its hosts are pinned: unpin them, so the rule has something to say
    config["gpu-lab:openshift"]["helper"].pop("hostKey", None)
    for switch in config["gpu-lab:switches"]:
        switch.pop("hostKey", None)
    run = run_program(config, secrets=_secrets(config, WITHOUT), preview=True)
    report = policy_check.check(policy_check.parse_stack(plan.pack_input(run)), policy_check.PACK)
    pinned = [v.message for v in report.verdicts if v.policy == "command-ssh-host-key-pinned"]
    addresses = {str(s["managementAddress"]) for s in config["gpu-lab:switches"]}
    addresses.add(str(config["gpu-lab:openshift"]["helper"]["address"]))
    assert pinned
    assert {m.split("connection to ", 1)[1].split(":", 1)[0] for m in pinned} == addresses
    assert PREVIEW_STAND_IN not in "".join(v.message for v in report.verdicts)
