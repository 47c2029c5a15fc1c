"""docs/day2.md, the OpenShift rows: each change planned before and after under mocks, and what the
engine would do to a running lab, as tools.diff tells it from the providers' rules (pulumi-command:
only `triggers` replaces, an update runs `update` else `create`; pulumi-vsphere's ForceNew inputs
and reboot list; our own dynamic providers' diff and check), each cited in tools/diff/rules.py.

`steps(base, new)` is {name: (op, effects)} of every resource that is not left as it is.
"""

from __future__ import annotations

import builders
import pytest

from tools.diff import changes, refusals
from tools.mockrun import Run, placeholder_secrets, run_program

INSTALL = "openshift-ignition"


def steps(base: Run, new: Run) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {c["name"]: (c["op"], tuple(c["effects"])) for c in changes(base, new)}


def run(config: dict, secrets: dict | None = None, stack: str = "lab") -> Run:
    return run_program(config, stack=stack, secrets=secrets)


def edited(config: dict, path: str, value) -> dict:
    return builders.with_value(config, path, value)


UPDATED = ("update", ())
RERUN = ("update", ("rerun",))


@pytest.fixture(scope="module")
def lab() -> tuple[dict, Run]:
    config = builders.lab_stack()
    return config, run(config)


@pytest.fixture(scope="module")
def baremetal() -> tuple[dict, Run]:
    config = builders.baremetal_stack()
    return config, run(config, stack="openshift")


def test_add_a_worker_vm(lab):
    config, base = lab
    found = steps(base, run(edited(config, "gpu-lab:vsphere.workers.names", [*builders.WORKERS, "w05"])))
    assert {name: step for name, step in found.items() if not name.startswith("addons-")} == {
        "vms-w05": ("create", ()),  # the stored worker ignition, no installer
        "vms-w05-roll": ("create", ()),  # gives the new VM its vGPU: no cluster node yet, nothing to drain
        "openshift-nodes-w05": ("create", ("rerun",)),  # approves w05's CSRs only
        "openshift-dns": RERUN, "openshift-lb": RERUN, "openshift-ignition-access": RERUN,
        "lab-identity": UPDATED, "openshift": UPDATED, "openshift-nodes": UPDATED, "vms": UPDATED,
    }
    # the add-ons: a job for the new GPU, the networks' node lists; the benchmarks spanning every
    # worker are replaced, and so run again with it; nothing else is touched
    addons = {name: step for name, step in found.items() if name.startswith("addons-")}
    assert addons["addons-job-nvidia-smi-w05"] == ("create", ())
    assert {name for name, (op, _) in addons.items() if op == "replace"} == {
        f"addons-mpijob-{job}" for job in ("horovod-resnet50-rdma", "horovod-resnet50-tcp", "nccl-allreduce-rdma",
                                           "nccl-allreduce-tcp")}
    # updated in place, as docs/day2.md's row says: the pool's node list and per-node block size; the
    # device plugin's DaemonSet selects nodes by NFD's label, so it does not change
    assert {name for name, (op, _) in addons.items() if op == "update"} == {"addons-ippool-rdma-pool"}
    assert refusals(base, run(edited(config, "gpu-lab:vsphere.workers.names", [*builders.WORKERS, "w05"]))) == []


def test_add_a_bare_metal_node(baremetal):
    config, base = baremetal
    node = {"name": "dgx-2", "role": "worker", "platform": "baremetal", "address": "10.33.3.99",
            "mac": "0c:42:a1:00:00:99"}
    new = run(edited(config, "gpu-lab:openshift.nodes", [*config["gpu-lab:openshift"]["nodes"], node]),
              stack="openshift")
    assert steps(base, new) == {
        "openshift-nodes-dgx-2": ("create", ("rerun",)),
        "openshift-dns": RERUN, "openshift-lb": RERUN, "openshift-pxe": RERUN, "openshift-ignition-access": RERUN,
        "lab-identity": UPDATED, "openshift": UPDATED, "openshift-nodes": UPDATED,
    }


def test_remove_a_middle_worker_positionally_is_refused(lab):
    config, base = lab
    new = run(edited(config, "gpu-lab:vsphere.workers.names", ["w01", "w03", "w04"]))
    (refused,) = refusals(base, new)
    assert refused.startswith("lab-identity: vsphere: the edit adds or removes a node")
    assert "w03: managementAddress 172.16.7.53 -> 172.16.7.52" in refused


def test_remove_a_middle_worker_with_explicit_lists(lab):
    config, base = lab
    pinned = config
    for key, values in (("managementAddresses", [f"172.16.7.5{i}" for i in range(1, 5)]),
                        ("rdmaAddresses", [f"192.168.0.5{i}" for i in range(1, 5)]),
                        ("hosts", builders.WORKER_HOSTS)):
        pinned = edited(pinned, f"gpu-lab:vsphere.workers.{key}", values)
    before = run(pinned)
    assert refusals(base, before) == []  # writing today's places moves nobody
    removed = pinned
    for key in ("names", "managementAddresses", "rdmaAddresses", "hosts"):
        values = list(removed["gpu-lab:vsphere"]["workers"][key])
        del values[1]
        removed = edited(removed, f"gpu-lab:vsphere.workers.{key}", values)
    after = run(removed)
    assert refusals(before, after) == []
    found = steps(before, after)
    openshift_and_vsphere = {n: s for n, s in found.items() if not n.startswith("addons-")}
    assert openshift_and_vsphere == {
        "openshift-nodes-w02": ("delete", ("delete",)),  # drained and deleted from the cluster first
        # its roll goes with the VM (deleted_with), and the vGPU with the VM
        "vms-w02": ("delete", ("delete",)), "vms-w02-roll": ("delete", ()),
        # w02 was esx02's only worker: its DRS groups and rule go; no other worker's placement changes
        "vms-esx02-workers": ("delete", ("delete",)), "vms-esx02-host": ("delete", ("delete",)),
        "vms-esx02-placement": ("delete", ("delete",)),
        "openshift-dns": RERUN, "openshift-lb": RERUN, "openshift-ignition-access": RERUN,
        "lab-identity": UPDATED, "openshift": UPDATED, "openshift-nodes": UPDATED, "vms": UPDATED,
    }
    # the node Command goes before its VM: it depends on it
    node = before.named("openshift-nodes-w02")
    assert before.named("vms-w02").urn in node.dependencies


def test_rotate_the_pull_secret(lab):
    config, base = lab
    secrets = placeholder_secrets(config)
    rotated = {**secrets, "gpu-lab:pullSecret": '{"auths":{"registry.example":{"auth":"bmV3"}}}'}
    assert steps(run(config, secrets), run(config, rotated)) == {"openshift-pull-secret": RERUN}


def test_rotate_the_core_ssh_key(lab):
    config, _ = lab
    secrets = placeholder_secrets(config)
    rotated = {**secrets, "gpu-lab:sshPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOfQ8wJX6kH3b6dJkh6rSQyk8p0m2Q7F"
                                                  "aHqWb2WwqkDs new@lab"}
    assert steps(run(config, secrets), run(config, rotated)) == {"openshift-ssh-key": RERUN}


def test_rotate_the_vcenter_password_on_platform_vsphere(lab):
    config = edited(lab[0], "gpu-lab:openshift.platform", "vsphere")
    config = edited(config, "gpu-lab:openshift.vcenter", {"server": "vc1.lab.local", "user": "administrator@vsphere.local"})
    secrets = placeholder_secrets(config)
    found = steps(run(config, secrets), run(config, {**secrets, "vsphere:password": "rotated"}))
    assert found.pop("openshift-vcenter-credentials") == RERUN
    # the explicit providers of our dynamic resources hold the login: updated, no resource takes a step
    assert found == {"pyvmomi": UPDATED, "node-rolls": UPDATED}


def test_rotate_the_helpers_ssh_key(lab):
    config, _ = lab
    secrets = placeholder_secrets(config)
    found = steps(run(config, secrets), run(config, {**secrets, "gpu-lab:helperSshPrivateKey": "another key"}))
    # every helper step runs again with the new login; a service restarts only if a file changed
    assert found == {name: RERUN for name in ("openshift-dns", "openshift-lb", "openshift-ignition-access",
                                              "openshift-publish-bootstrap-ign", "openshift-publish-master-ign",
                                              "openshift-publish-worker-ign")}


def test_move_the_helpers_files(lab):
    config, base = lab
    helper = {**config["gpu-lab:openshift"]["helper"], "paths": {"haproxyCfg": "/etc/haproxy/conf.d/openshift.cfg"}}
    found = steps(base, run(edited(config, "gpu-lab:openshift.helper", helper)))
    # taken back where it was (the old delete first), then installed at the new path
    assert found == {"openshift-lb": ("replace", ("replace", "rerun"))}


def test_switch_the_bootstrap_node_off(lab):
    config, base = lab
    found = steps(base, run(edited(config, "gpu-lab:openshift.bootstrap", False)))
    assert found == {
        "openshift-publish-bootstrap-ign": ("delete", ("delete",)),  # bootstrap.ign leaves the web server
        "vms-bs01": ("delete", ("delete",)),
        "openshift-dns": RERUN, "openshift-lb": RERUN, "openshift-ignition-access": RERUN,
        "openshift": UPDATED, "vms": UPDATED,
    }


@pytest.mark.parametrize("path, value", [
    ("gpu-lab:openshift.clusterName", "kub2"),
    ("gpu-lab:openshift.baseDomain", "lab.test"),
    ("gpu-lab:openshift.networks.serviceNetwork", "172.31.0.0/16"),
])
def test_a_new_cluster_identity_is_refused(lab, path, value):
    config, base = lab
    (refused,) = refusals(base, run(edited(config, path, value)))
    assert "the cluster is installed once and cannot take this change in place" in refused


def test_a_new_installer_reaches_the_next_cluster_only(lab):
    config, base = lab
    found = steps(base, run(edited(config, "gpu-lab:openshift.installer", "/opt/ocp/4.18/openshift-install")))
    assert INSTALL not in found and found == {}


def test_csr_approval_off_runs_nothing(lab):
    config, base = lab
    found = steps(base, run(edited(config, "gpu-lab:openshift.approveCsrs", False)))
    assert found == {f"openshift-nodes-{n}": UPDATED for n in [*builders.CONTROL_PLANE, *builders.WORKERS]}


def test_asking_for_the_install_wait_on_a_running_lab_runs_it_once(lab):
    config, base = lab
    found = steps(base, run(edited(config, "gpu-lab:openshift.waitForInstall", True)))
    assert found == {"openshift-wait-install": ("create", ("rerun",))}


@pytest.mark.parametrize("key, value", [("address", "172.16.7.6"), ("port", 2222), ("user", "core")])
def test_move_the_helper_is_refused(lab, key, value):
    config, base = lab
    helper = {**config["gpu-lab:openshift"]["helper"], key: value}
    (refused,) = refusals(base, run(edited(config, "gpu-lab:openshift.helper", helper)))
    # pulumi-command sends the whole `connection` as one secret, so replace_on_changes on
    # connection.host never fires: the steps would rerun on the new helper and nothing would undo the old
    assert refused.startswith(f"lab-identity: openshift.helper.{key}: ")
    assert "pulumi-command sends a Command's whole connection as one secret" in refused
    assert "bootstrap.ign" in refused and "rebuild the lab on purpose" in refused
    # the address is also every running node's nameserver, a first-boot kernel argument
    assert ("nameserver" in refused) == (key == "address")


def test_the_guard_holds_without_the_engines_check(lab):
    """`pulumi up --target <urn>` skips lab-identity's check (the engine stubs out Check for resources
    that are not targeted: pulumi/pulumi pkg/resource/deploy/step_generator.go), and `--replace` of
    lab-identity calls it without the old inputs. The program itself reads the deployed identity from
    the stack's state (here the mocks hand it the base run, as the engine's readStackResourceOutputs
    would) and stops before anything is registered, with every problem of a multi-key edit."""
    config, base = lab
    several = edited(edited(edited(config, "gpu-lab:openshift.clusterName", "kub2"),
                            "gpu-lab:openshift.helper", {**config["gpu-lab:openshift"]["helper"], "port": 2222}),
                     "gpu-lab:vsphere.workers.names", ["w01", "w03", "w04"])
    with pytest.raises(Exception) as refused:
        run_program(several, deployed=base)
    message = str(refused.value)
    assert type(refused.value).__name__ == "RunError" and message.startswith("a running lab cannot take this edit")
    for fragment in ("openshift.clusterName: 'kub1' -> 'kub2'", "openshift.helper.port: 22 -> 2222",
                     "vsphere: the edit adds or removes a node"):
        assert fragment in message
    # the same problems as the preview's check: make diff and the engine agree
    assert len(refusals(base, run(several))) == 3
    # an edit the lab can take passes, and nothing deployed yet passes
    assert run_program(edited(config, "gpu-lab:vsphere.workers.names", [*builders.WORKERS, "w05"]), deployed=base)
    assert run_program(several).resources


def test_a_guard_that_cannot_read_the_deployed_section_warns(lab):
    from components.dynamic.guard import _IdentityProvider
    from components.identity_rules import identity_problems, identity_warnings

    config, base = lab
    old = base.named("lab-identity").plain()
    old["vsphere"] = {**old["vsphere"], "retiredKey": True}  # a section an older gpu-lab wrote
    new = run(config).named("lab-identity").plain()
    assert identity_problems(old, new) == []
    (warning,) = identity_warnings(old, new)
    assert warning.startswith("vsphere: the deployed section was written by an older gpu-lab and cannot be read")
    assert "retiredKey" in warning
    # a deployment that recorded no helper yet (an older gpu-lab): said, not passed silently
    del old["helper"]
    assert any(w.startswith("openshift.helper address, port and user: the deployed lab was built by a gpu-lab "
                            "that did not record them") for w in identity_warnings(old, new))
    assert _IdentityProvider().warnings(old, new) == identity_warnings(old, new)
