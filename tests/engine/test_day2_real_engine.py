"""Day 2 on a lab that runs, under the real engine and the real pulumi-command plugin (tests/engine/day2_engine.py).

One lab, one sequence, as a lab engineer's weeks go: build it, then add a worker, remove one from
the middle, rotate the pull secret, switch the bootstrap node off; after each `pulumi up` a
`pulumi preview --expect-no-changes` must pass, and before it `pulumi preview --json` must show
exactly the intended steps. openshift-install must have run once at the end of all of it.

The pulumi-command plugin is built from source by hand (docs/engine.md), so this skips without it,
in CI too (`built_by_hand`).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from day2_engine import (
    CACHE,
    ROOT,
    CumulusStandIn,
    Day2Lab,
    HelperNode,
    VcenterSim,
    copy_tree,
    openshift_section,
    sim_lab_config,
    standins,
)
from required_tools import require_tool

from tools import releases
from tools.diff import Planned, snapshot, steps_between
from tools.mockrun import run_program

PULL = '{"auths":{"registry.example":{"auth":"Zmlyc3Q="}}}'
ROTATED_PULL = '{"auths":{"registry.example":{"auth":"c2Vjb25k"}}}'
# an ed25519 key of 32 bytes 0x01: no sshd here has it
WRONG_HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB"
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOfQ8wJX6kH3b6dJkh6rSQyk8p0m2Q7FaHqWb2WwqkDs core@day2"


def _plugin_installed(name: str) -> bool:
    want = version(f"pulumi-{name}")
    return (CACHE / "home" / "plugins" / f"resource-{name}-v{want}" / f"pulumi-resource-{name}").is_file()


def _ops(steps) -> dict[str, str]:
    ops = {s.name: s.op for s in steps}
    print(f"preview: {len(ops)} steps: {ops}")
    return ops


def _preview_agrees_with_make_diff(lab, before: dict, before_secrets: dict) -> dict[str, str]:
    """The real preview's steps, checked resource by resource against `make diff`'s for the same edit."""
    real = _ops(lab.preview())
    offline = lab.offline_ops(before, before_secrets)
    assert offline == real, f"make diff {offline} != preview {real}"
    return real


def _snapshot(lab) -> tuple[dict, dict]:
    return copy.deepcopy(lab.config), dict(lab.secrets)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not (CACHE / "bin" / "pulumi").exists():
        pytest.skip(f"no Pulumi engine in {CACHE}: run make setup-pulumi")
    if not _plugin_installed("command"):
        pytest.skip("the pulumi-command plugin is not installed (built by hand: docs/engine.md)")
    sshd = require_tool("sshd", "run scripts/install-switch-test-tools.sh")
    require_tool("dnsmasq")
    require_tool("haproxy")
    work = tmp_path_factory.mktemp("day2")
    tools, log = work / "tools", work / "log"
    standins(tools, log)
    # every server stops and the stack goes, however the tests end (last in, first out)
    with contextlib.ExitStack() as cleanup:
        helper = cleanup.enter_context(HelperNode.start(work / "helper", sshd))
        config = {"gpu-lab:openshift": openshift_section(helper, work / "install", tools)}
        secrets = {"gpu-lab:pullSecret": PULL, "gpu-lab:sshPublicKey": SSH_KEY,
                   "gpu-lab:helperSshPrivateKey": helper.client_key.read_text()}
        lab = Day2Lab.create(work, config, secrets, tools, {"FAKE_OC_NODES": "cp-0 cp-1 cp-2 dgx-0 dgx-1 dgx-2 dgx-3"})
        cleanup.callback(_destroy_unless_kept, lab)
        lab.helper, lab.log_dir = helper, log  # type: ignore[attr-defined]
        yield lab


def _destroy_unless_kept(lab) -> None:
    """The stack's resources go (unless DAY2_KEEP=1 or a test already destroyed it); the log is printed."""
    try:
        if os.environ.get("DAY2_KEEP") != "1" and not getattr(lab, "destroyed", False):
            lab.destroy()
    finally:
        print("\n".join(lab.log))


def _nodes(lab) -> list[dict]:
    return lab.config["gpu-lab:openshift"]["nodes"]


def _installer_calls(lab) -> list[str]:
    return (lab.log_dir / "installer-calls").read_text().splitlines()


@pytest.mark.built_by_hand
def test_a_week_of_changes_on_a_running_lab(lab):
    helper: HelperNode = lab.helper
    # a pinned key the helper does not have: nothing is sent to it, the error names both fingerprints
    pinned = lab.config["gpu-lab:openshift"]["helper"]["hostKey"]
    lab.config["gpu-lab:openshift"]["helper"]["hostKey"] = WRONG_HOST_KEY
    lab.write_config()
    refused = lab.pulumi("up", "--yes", "--skip-preview", check=False)
    assert refused.returncode != 0
    message = refused.stdout + refused.stderr
    assert f"SSH host key mismatch for 127.0.0.1:{helper.port}" in message and "openshift.helper.hostKey pins" in message
    assert message.count("SHA256:") >= 2
    assert not (helper.root / "etc").exists()  # no helper step ran
    lab.config["gpu-lab:openshift"]["helper"]["hostKey"] = pinned
    lab.write_config()
    # day 1
    lab.up()
    lab.expect_no_changes()
    assert [c.split()[-1] for c in _installer_calls(lab)] == ["manifests", "ignition-configs"]
    assert "www/bootstrap.ign" in helper.files() and "etc/haproxy/haproxy.cfg" in helper.files()
    assert not (helper.root / "staging").exists() or not any((helper.root / "staging").iterdir())
    lab.up()  # twice in a row with no edit: nothing
    lab.expect_no_changes()

    # add a worker
    before = _snapshot(lab)
    _nodes(lab).append({"name": "dgx-3", "role": "worker", "address": "127.0.10.23", "mac": "52:54:00:00:0a:23"})
    lab.write_config()
    ops = _preview_agrees_with_make_diff(lab, *before)
    assert ops == {"lab-identity": "update", "openshift": "update", "openshift-dns": "update",
                   "openshift-lb": "update", "openshift-pxe": "update", "openshift-ignition-access": "update",
                   "openshift-nodes": "update", "openshift-nodes-dgx-3": "create"}, ops
    lab.up()
    lab.expect_no_changes()

    # remove a worker from the middle: only it goes, drained first
    before = _snapshot(lab)
    lab.config["gpu-lab:openshift"]["nodes"] = [n for n in _nodes(lab) if n["name"] != "dgx-1"]
    lab.write_config()
    ops = _preview_agrees_with_make_diff(lab, *before)
    assert ops == {"lab-identity": "update", "openshift": "update", "openshift-dns": "update",
                   "openshift-lb": "update", "openshift-pxe": "update", "openshift-ignition-access": "update",
                   "openshift-nodes": "update", "openshift-nodes-dgx-1": "delete"}, ops
    lab.up()
    lab.expect_no_changes()
    oc_calls = (lab.log_dir / "oc-calls").read_text().splitlines()
    assert [c for c in oc_calls if c.startswith(("adm", "delete"))] == [
        "adm cordon dgx-1", "adm drain dgx-1 --ignore-daemonsets --delete-emptydir-data --timeout=900s",
        "delete node dgx-1"]

    # rotate the pull secret: the running cluster's secret is patched, nothing else runs
    before = _snapshot(lab)
    lab.secrets["gpu-lab:pullSecret"] = ROTATED_PULL
    lab.write_config()
    ops = _preview_agrees_with_make_diff(lab, *before)
    assert ops == {"openshift-pull-secret": "update"}, ops
    lab.up()
    lab.expect_no_changes()
    (patch,) = [json.loads(line) for line in (lab.log_dir / "patches").read_text().splitlines()]
    assert patch["target"] == "secret/pull-secret -n openshift-config --type=merge"

    # bootstrap done: its ignition leaves the web server, its backends and records go
    before = _snapshot(lab)
    lab.config["gpu-lab:openshift"]["bootstrap"] = False
    lab.write_config()
    ops = _preview_agrees_with_make_diff(lab, *before)
    assert ops == {"openshift": "update", "openshift-dns": "update", "openshift-lb": "update",
                   "openshift-pxe": "update", "openshift-ignition-access": "update",
                   "openshift-publish-bootstrap-ign": "delete"}, ops
    lab.up()
    lab.expect_no_changes()
    assert "www/bootstrap.ign" not in helper.files() and "www/master.ign" in helper.files()

    # an edit a running cluster cannot take is refused by the preview, naming it
    lab.config["gpu-lab:openshift"]["clusterName"] = "day3"
    lab.write_config()
    refused = lab.pulumi("preview", check=False)
    assert refused.returncode != 0
    assert "openshift.clusterName: 'day2' -> 'day3': the cluster is installed once" in refused.stdout + refused.stderr
    lab.config["gpu-lab:openshift"]["clusterName"] = "day2"
    lab.write_config()
    lab.expect_no_changes()

    # the installer ran once through all of it
    assert [c.split()[-1] for c in _installer_calls(lab)] == ["manifests", "ignition-configs"]

    # taking the lab down leaves the helper as it was: only its own boot loaders
    lab.destroy()
    assert helper.files() == ["tftpboot/grubx64.efi", "tftpboot/pxelinux.0"]
    assert (helper.dir / "apachectl-calls").read_text().count("configtest") >= 1
    assert not Path(lab.config["gpu-lab:openshift"]["installDir"]).exists()
    lab.destroyed = True  # type: ignore[attr-defined]


# the last release of release/releases.txt (0.1.0), by name: its tag, else the listed commit
PREVIOUS_RELEASE = releases.resolve_release(releases.releases()[-1].tag)


@pytest.fixture
def previous_release(tmp_path):
    """A checkout of the previous release, as `git worktree` makes it."""
    tree = tmp_path / "previous"
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), PREVIOUS_RELEASE], cwd=ROOT, check=True,
                   capture_output=True)
    yield tree
    subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)


@pytest.mark.built_by_hand
def test_upgrading_a_running_lab_from_the_previous_release_never_reinstalls(tmp_path, previous_release):
    if not (CACHE / "bin" / "pulumi").exists() or not _plugin_installed("command"):
        pytest.skip("needs the engine and the pulumi-command plugin built by hand (docs/engine.md)")
    sshd = require_tool("sshd", "run scripts/install-switch-test-tools.sh")
    tools, log = tmp_path / "tools", tmp_path / "log"
    standins(tools, log)
    with contextlib.ExitStack() as cleanup:
        helper = cleanup.enter_context(HelperNode.start(tmp_path / "helper", sshd))
        _upgrade_from_the_previous_release(cleanup, tmp_path, previous_release, helper, tools, log)


def _upgrade_from_the_previous_release(cleanup, tmp_path, previous_release, helper, tools, log) -> None:
    section = openshift_section(helper, tmp_path / "install", tools)
    for key in ("httpGroup", "hostKey"):  # 0.1.0 does not know them
        section["helper"].pop(key)
    dropped_path = section["helper"]["paths"].pop("httpdDropIn")
    secrets = {"gpu-lab:pullSecret": PULL, "gpu-lab:sshPublicKey": SSH_KEY,
               "gpu-lab:helperSshPrivateKey": helper.client_key.read_text()}
    lab = Day2Lab.create(tmp_path / "lab", {"gpu-lab:openshift": section}, secrets, tools,
                         {"FAKE_OC_NODES": "cp-0 cp-1 cp-2 dgx-0 dgx-1 dgx-2"}, tree=previous_release)
    cleanup.callback(_destroy_unless_kept, lab)
    lab.up()
    # the test machine has no apache group; the key is pinned with the upgrade
    upgraded = lab.config["gpu-lab:openshift"]["helper"]
    upgraded.update(httpGroup="root", hostKey=helper.host_key_line)
    upgraded["paths"]["httpdDropIn"] = dropped_path
    lab.write_config()
    copy_tree(ROOT, lab.project)
    ops = _ops(lab.preview())
    # make diff's engine, with the previous release's program planned by this harness, agrees
    (previous_release / f"Pulumi.{lab.stack}.yaml").write_text(yaml.safe_dump({"config": {"gpu-lab:openshift": section}}))
    planned = subprocess.run([sys.executable, str(ROOT / "tools" / "plan_tree.py"), str(previous_release),
                              lab.stack], capture_output=True, text=True, cwd=previous_release)
    assert planned.returncode == 0, planned.stderr
    offline = steps_between([Planned.from_document(d) for d in json.loads(planned.stdout)],
                            snapshot(run_program(lab.config, stack=lab.stack)))
    assert {s.name: s.op for s in offline if s.op != "same"} == ops
    # the install, the one thing that must never run again, is not touched
    assert "openshift-ignition" not in ops
    replaced = sorted(name for name, op in ops.items() if op == "replace")
    assert replaced == ["openshift-dns", "openshift-lb", "openshift-publish-bootstrap-ign",
                        "openshift-publish-master-ign", "openshift-publish-worker-ign", "openshift-pxe"]
    assert ops["openshift-helper-host-key"] == "create" and ops["openshift-ignition-access"] == "create"
    lab.up()
    lab.expect_no_changes()
    assert [c.split()[-1] for c in _installer_calls_of(log)] == ["ignition-configs"]
    assert not [p for p in (helper.root / "staging").rglob("*") if p.is_file()]  # 0.1.0's staged copies


def _installer_calls_of(log: Path) -> list[str]:
    return (log / "installer-calls").read_text().splitlines()


LAB_VCSIM = Path(os.environ.get("VCSIM", ROOT / "build" / "bin" / "lab-vcsim")).resolve()
NVUE_ECN = "nv set qos congestion-control default-global traffic-class 3"


@pytest.mark.built_by_hand
def test_a_week_on_the_simulated_lab(tmp_path):
    """The whole lab on loopback: the vSphere half on lab-vcsim with the real pulumi-vsphere plugin,
    OpenShift on its VMs with the helper node on sshd, and a Cumulus switch stand-in."""
    if not (CACHE / "bin" / "pulumi").exists() or not all(map(_plugin_installed, ("command", "vsphere"))):
        pytest.skip("needs the engine and the pulumi-command and pulumi-vsphere plugins built by hand (docs/engine.md)")
    if not LAB_VCSIM.exists():
        pytest.skip(f"no lab-vcsim at {LAB_VCSIM}: run make simulator")
    sshd = require_tool("sshd", "run scripts/install-switch-test-tools.sh")
    tools, log = tmp_path / "tools", tmp_path / "log"
    standins(tools, log)
    switch_password = f"sw-{os.urandom(6).hex()}"
    # every server stops (and the stack goes) however the test ends: last in, first out
    with contextlib.ExitStack() as cleanup:
        vcenter = cleanup.enter_context(VcenterSim.start(LAB_VCSIM, tmp_path / "vcsim"))
        helper = cleanup.enter_context(HelperNode.start(tmp_path / "helper", sshd))
        switch = cleanup.enter_context(CumulusStandIn.start(sshd, switch_password))
        settings_before = vcenter.host_settings()
        vms_before = vcenter.vm_names()
        networks_before = vcenter.network_names()
        config = sim_lab_config(vcenter, helper, switch, tmp_path / "install", tools)
        secrets = {"vsphere:password": vcenter.password, "gpu-lab:pullSecret": PULL, "gpu-lab:sshPublicKey": SSH_KEY,
                   "gpu-lab:helperSshPrivateKey": helper.client_key.read_text(),
                   "gpu-lab:switchPasswords.simsw01": switch_password}
        nodes = "simcp01 simcp02 simcp03 simw01 simw02 simw03 simw04"
        lab = Day2Lab.create(tmp_path / "lab", config, secrets, tools, {"FAKE_OC_NODES": nodes}, stack="sim")
        cleanup.callback(_destroy_unless_kept, lab)
        workers = lab.config["gpu-lab:vsphere"]["workers"]
        # day 1, then nothing to do
        print("day 1:", lab.up())
        lab.expect_no_changes()
        second = lab.up()
        assert set(second) == {"same"}, second  # twice in a row with no edit: nothing
        lab.expect_no_changes()
        assert any(c.startswith(NVUE_ECN) for c in switch.box.received())

        # add a worker at the end of the list
        before = _snapshot(lab)
        workers["names"].append("simw04")
        lab.write_config()
        ops = _preview_agrees_with_make_diff(lab, *before)
        assert ops["vms-simw04"] == "create" and not [n for n, op in ops.items() if op in ("replace", "delete")]
        lab.up()
        lab.expect_no_changes()

        # tune ECN on the switch: applied over the old configuration, nothing undone first
        before = _snapshot(lab)
        received = len(switch.box.received())
        lab.config["gpu-lab:switches"][0]["roce"]["ecnMinKb"] = 200
        lab.write_config()
        ops = _preview_agrees_with_make_diff(lab, *before)
        assert ops.get("simsw01-apply") == "replace" and not [n for n in ops if "undo" in n or n == "simsw01-config"]
        lab.up()
        lab.expect_no_changes()
        sent = switch.box.received()[received:]
        assert not [c for c in sent if c.startswith("nv unset")], sent

        # rotate the switch password: the Commands store it, only a read-only login check runs
        before = _snapshot(lab)
        received = len(switch.box.received())
        switch_password = f"sw-{os.urandom(6).hex()}"
        CumulusStandIn.set_password(switch_password)
        lab.secrets["gpu-lab:switchPasswords.simsw01"] = switch_password
        lab.write_config()
        _preview_agrees_with_make_diff(lab, *before)
        lab.up()
        lab.expect_no_changes()
        assert [c for c in switch.box.received()[received:] if not c.startswith("nv show")] == []

        # a new template reaches new VMs only
        before = _snapshot(lab)
        lab.config["gpu-lab:vsphere"]["template"] = "DC0_H0_VM1"
        lab.write_config()
        ops = _preview_agrees_with_make_diff(lab, *before)
        assert not [n for n in ops if n.startswith("vms-sim") and "vgpu" not in n], ops
        lab.up()
        lab.expect_no_changes()

        # remove a worker from the middle: refused with positional forms, fine with the lists
        before = _snapshot(lab)
        workers["names"] = ["simw01", "simw03", "simw04"]
        lab.write_config()
        refused = lab.pulumi("preview", check=False)
        assert refused.returncode != 0 and "would move running nodes" in refused.stdout + refused.stderr
        workers["names"] = ["simw01", "simw02", "simw03", "simw04"]
        workers.update(managementAddresses=[f"198.51.100.5{i}" for i in range(1, 5)],
                       rdmaAddresses=[f"203.0.113.5{i}" for i in range(1, 5)],
                       hosts=["DC0_C0_H0", "DC0_C0_H1", "DC0_C0_H2", "DC0_C0_H0"])
        lab.write_config()
        assert not [n for n, op in _preview_agrees_with_make_diff(lab, *before).items()
                    if n.startswith(("vms-simw", "openshift")) and op != "update"]
        lab.up()
        lab.expect_no_changes()
        before = _snapshot(lab)
        for key in ("names", "managementAddresses", "rdmaAddresses", "hosts"):
            del workers[key][1]
        lab.write_config()
        ops = _preview_agrees_with_make_diff(lab, *before)
        assert ops["vms-simw02"] == "delete" and ops["openshift-nodes-simw02"] == "delete"
        assert not [n for n, op in ops.items() if op == "replace"], ops
        lab.up()
        lab.expect_no_changes()

        # rotate the pull secret; switch the bootstrap node off
        before = _snapshot(lab)
        lab.secrets["gpu-lab:pullSecret"] = ROTATED_PULL
        lab.write_config()
        assert _preview_agrees_with_make_diff(lab, *before) == {"openshift-pull-secret": "update"}
        lab.up()
        lab.expect_no_changes()
        before = _snapshot(lab)
        lab.config["gpu-lab:openshift"]["bootstrap"] = False
        lab.write_config()
        ops = _preview_agrees_with_make_diff(lab, *before)
        assert ops["vms-simbs01"] == "delete" and ops["openshift-publish-bootstrap-ign"] == "delete"
        lab.up()
        lab.expect_no_changes()
        assert [c.split()[-1] for c in _installer_calls_of(log)] == ["manifests", "ignition-configs"]

        # down: everything as it was found
        print("destroy:", lab.destroy())
        lab.destroyed = True  # type: ignore[attr-defined]
        assert vcenter.host_settings() == settings_before
        assert vcenter.vm_names() == vms_before
        assert vcenter.network_names() == networks_before  # the vDS and its port groups, uplinks too
        assert helper.files() == ["tftpboot/grubx64.efi", "tftpboot/pxelinux.0"]
        assert switch.box.state.applied == type(switch.box.state)().applied
