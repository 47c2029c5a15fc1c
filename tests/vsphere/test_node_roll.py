"""Disruptive changes to cluster nodes' VMs roll (components/dynamic/roll.py): one node at a time,
drained before the power-off, uncordoned once Ready, stopping at the first failure.

Against lab-vcsim started with -method-delay on the power and reconfigure calls (so two power
cycles that were not serialised would overlap in vSphere's own event log), four of its VMs as four
workers, and a stand-in `oc` on PATH that logs each call and answers like a cluster with one node
per VM. The power calls are marked in the same log, so each test reads one timeline.

The engine runs node N+1's update only once node N's finished, and none after a failed one: each
NodeRoll depends on the previous (tests/vsphere/test_vsphere_program.py asserts the chain);
`roll_in_order` plays that here, update after update, stopping at the first error.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pulumi
import pytest
from conftest import running_lab_vcsim, vm_named
from pyVmomi import vim

from components.dynamic import hostops
from components.dynamic import roll as r

KUBECONFIG = "apiVersion: v1\nkind: Config\n# test kubeconfig\n"
WORKERS = ["DC0_C0_RP0_VM0", "DC0_C0_RP0_VM1", "DC0_H0_VM0", "DC0_H0_VM1"]
METHOD_DELAY = "PowerOnVM_Task:150,PowerOffVM_Task:150,ReconfigVM_Task:100"

# Answers as oc 4.x does for the calls a roll makes. A node reports boot id boot-1 until its VM was
# powered on by the roll (a "vsphere power-on <vm>" line in the log), then boot-2.
FAKE_OC = '''#!{python}
import json, os, sys, time
from pathlib import Path
log = Path(os.environ["FAKE_OC_LOG"])
args = sys.argv[1:]
line = " ".join(args)
with log.open("a") as out:
    out.write("oc " + line + "\\n")
fail = os.environ.get("FAKE_OC_FAIL", "")
if fail and line.startswith(fail):
    sys.stderr.write(os.environ.get("FAKE_OC_ERROR", "error: failed") + "\\n")
    sys.exit(1)
if args[:2] == ["get", "nodes"]:
    print("\\n".join("node/" + n for n in os.environ["FAKE_OC_NODES"].split()))
elif args[0] == "get" and "bootID" in line:
    node = args[1].split("/", 1)[1]
    powered = [l for l in log.read_text().splitlines() if l == "vsphere power-on " + node]
    print("boot-2" if powered else "boot-1")
elif args[:3] == ["get", "--raw", "/readyz"]:
    print(os.environ.get("FAKE_OC_READYZ", "ok"))
elif args[:2] == ["get", "clusteroperator"]:
    degraded = os.environ.get("FAKE_OC_DEGRADED", "")
    items = [{{"metadata": {{"name": n}}, "status": {{"conditions": [
        {{"type": "Available", "status": "True"}},
        {{"type": "Degraded", "status": "True" if n == degraded else "False"}}]}}}} for n in args[2:-2]]
    print(json.dumps({{"items": items}}))
'''


@pytest.fixture(scope="module")
def delayed_vcsim(tmp_path_factory: pytest.TempPathFactory):
    """lab-vcsim whose power and reconfigure calls take a while, as vCenter's do."""
    with running_lab_vcsim(tmp_path_factory, "vcsim-delay", "-method-delay", METHOD_DELAY) as sim:
        yield sim


@pytest.fixture(scope="module")
def dsi(delayed_vcsim):
    with hostops.session(delayed_vcsim.server, delayed_vcsim.user, delayed_vcsim.password,
                         port=delayed_vcsim.port, insecure=True) as service:
        yield service


@pytest.fixture
def conn(delayed_vcsim) -> dict:
    return {"server": delayed_vcsim.server, "user": delayed_vcsim.user, "password": delayed_vcsim.password,
            "insecure": True, "port": delayed_vcsim.port}


@pytest.fixture
def workers(dsi):
    """Four running workers with 1 vCPU, 32 MB and a grid_v100-16c vGPU each, as day 1 left them."""
    vms = [vm_named(dsi, name) for name in WORKERS]
    for vm in vms:
        hostops.power_off(vm) if hostops.is_powered_on(vm) else None
        hostops.reconfigure_for_roll(vm, {"cpus": 1, "memoryMb": 32, "vgpuProfile": "grid_v100-16c"})
        hostops.power_on(vm)
    return vms


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in oc on PATH, and the vSphere power calls marked in its log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    oc = bin_dir / "oc"
    oc.write_text(FAKE_OC.format(python=sys.executable))
    oc.chmod(oc.stat().st_mode | stat.S_IXUSR)
    path = tmp_path / "oc.log"
    path.touch()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_OC_LOG", str(path))
    monkeypatch.setenv("FAKE_OC_NODES", " ".join(WORKERS))
    monkeypatch.setattr(r, "_POLL_S", 0.05)
    monkeypatch.setattr("components.dynamic.vgpu._REBOOT_POLL_S", 0.05)
    for verb, original in (("power-off", hostops.power_off), ("power-on", hostops.power_on),
                           ("reconfigure", hostops.reconfigure_for_roll)):
        def marked(vm, *args, _verb=verb, _original=original, **kwargs):
            with path.open("a") as out:
                out.write(f"vsphere {_verb} {vm.name}\n")
            return _original(vm, *args, **kwargs)
        monkeypatch.setattr(hostops, verb.replace("-", "_") if verb != "reconfigure" else "reconfigure_for_roll",
                            marked)
    return path


@pytest.fixture
def said(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    messages: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda m, *a, **k: messages.append(m))
    monkeypatch.setattr(pulumi.log, "info", lambda m, *a, **k: None)
    return messages


def props(conn: dict, vm, *, cpus=1, memory=32, profile="grid_v100-16c", **extra) -> dict:
    """A NodeRoll's inputs as the engine hands them over."""
    return {"__provider": "c2VyaWFsaXplZA==", "kind": r.KIND, **conn, "vmId": vm._moId, "vmName": vm.name,
            "nodeName": vm.name, "role": "worker", "cpus": cpus, "memoryMb": memory, "memoryReservationMb": None,
            "hardwareVersion": None, "vgpuProfile": profile, "poweredOn": True, "oc": "oc", "drainTimeoutS": 900,
            "kubeconfig": KUBECONFIG, **extra}


def roll_in_order(changes: list[tuple[dict, dict]]) -> list[str]:
    """The engine over the NodeRoll chain: each update after the previous finished, none after a failure.
    Returns the nodes updated; re-raises the first failure after recording it."""
    done: list[str] = []
    provider = r.NodeRollProvider()
    for old, new in changes:
        assert provider.diff("id", old, new).changes
        provider.update("id", old, new)
        done.append(new["vmName"])
    return done


def calls(log: Path) -> list[str]:
    """The timeline without the boot-id reads, which poll."""
    return [line for line in log.read_text().splitlines() if "bootID" not in line]


def power_windows(si, vms) -> list[tuple[str, float, float]]:
    """Per VM, from vSphere's event log: when its power-off began and when it was powered on again."""
    manager = si.RetrieveContent().eventManager
    windows = []
    for vm in vms:
        events = manager.QueryEvents(vim.event.EventFilterSpec(
            entity=vim.event.EventFilterSpec.ByEntity(entity=vm, recursion="self")))
        events = sorted(events, key=lambda e: (e.createdTime, e.key))
        off = [e.createdTime.timestamp() for e in events if isinstance(e, vim.event.VmStoppingEvent)]
        on = [e.createdTime.timestamp() for e in events if isinstance(e, vim.event.VmPoweredOnEvent)]
        if off:
            windows.append((vm.name, off[-1], max(t for t in on if t >= off[-1])))
    return windows


def sizing(vm) -> tuple:
    s = hostops.get_roll_settings(vm)
    return s["cpus"], s["memoryMb"], s["vgpuProfile"], vm.runtime.powerState


def expected_node_steps(node: str) -> list[str]:
    return [
        f"oc adm cordon {node}",
        f"oc adm drain {node} --ignore-daemonsets --delete-emptydir-data --timeout=900s",
        f"vsphere power-off {node}",
        f"vsphere reconfigure {node}",
        f"vsphere power-on {node}",
        f"oc wait --for=condition=Ready node/{node} --timeout=1200s",
        f"oc adm uncordon {node}",
    ]


# ---------------------------------------------------------------- one node at a time


@pytest.mark.parametrize("change", ["sizing", "vgpu"])
def test_four_workers_roll_one_at_a_time_drained_first(dsi, conn, workers, log, said, change):
    new_settings = {"cpus": 2, "memory": 64} if change == "sizing" else {"profile": "grid_v100-32c"}
    start = time.time()
    done = roll_in_order([(props(conn, vm), props(conn, vm, **new_settings)) for vm in workers])

    assert done == WORKERS
    wanted = (2, 64, "grid_v100-16c") if change == "sizing" else (1, 32, "grid_v100-32c")
    assert [sizing(vm) for vm in workers] == [(*wanted, "poweredOn")] * 4
    timeline = [c for c in calls(log) if not c.startswith("oc get nodes")]
    # each node: cordon, drain, power-off, reconfigure, power-on, Ready, uncordon; the next only after
    assert timeline == [step for node in WORKERS for step in expected_node_steps(node)]
    # vSphere's own events: no VM was powered off while another was off
    windows = sorted((w for w in power_windows(dsi, workers) if w[1] >= start - 1), key=lambda w: w[1])
    assert [w[0] for w in windows] == WORKERS
    for (a, _, a_on), (b, b_off, _) in zip(windows, windows[1:], strict=False):
        assert a_on <= b_off, f"{b} was powered off before {a} was on again"
    assert said == []


def test_a_failure_on_the_second_of_four_stops_the_roll_and_leaves_it_running_on_its_old_settings(
        dsi, conn, workers, log, said, monkeypatch):
    """The reconfigure went through but the VM does not power on with it (admission control, a host
    without room): the roll puts the old settings back, powers it on, uncordons, and goes no further."""
    power_on = hostops.power_on
    refused = []

    def refuse_the_new_sizing(vm):
        if vm.name == WORKERS[1] and hostops.get_roll_settings(vm)["cpus"] == 2:
            refused.append(vm.name)
            raise vim.fault.InsufficientResourcesFault(msg="Insufficient resources to satisfy configured failover "
                                                          "level for vSphere HA")
        power_on(vm)

    monkeypatch.setattr(hostops, "power_on", refuse_the_new_sizing)
    changes = [(props(conn, vm), props(conn, vm, cpus=2, memory=64)) for vm in workers]
    with pytest.raises(r.RollStepError) as failed:
        roll_in_order(changes)

    assert failed.value.node == WORKERS[1] and failed.value.step == "power-on"
    message = str(failed.value)
    assert message.startswith(f"node {WORKERS[1]}: the roll stopped at step power-on: InsufficientResourcesFault")
    assert "put back on its old settings" in message and "resumes the roll with this node" in message
    assert refused == [WORKERS[1]]
    first, second, third, fourth = (sizing(vm) for vm in workers)
    assert first == (2, 64, "grid_v100-16c", "poweredOn")
    assert second == (1, 32, "grid_v100-16c", "poweredOn")  # old settings, running
    assert third == fourth == (1, 32, "grid_v100-16c", "poweredOn")
    timeline = calls(log)
    assert not [c for c in timeline if WORKERS[2] in c or WORKERS[3] in c]  # untouched, not even cordoned
    assert timeline[-1] == f"oc adm uncordon {WORKERS[1]}"

    # The next `up`: the failed node's state still holds the old inputs, so it and the later ones roll.
    monkeypatch.setattr(hostops, "power_on", power_on)
    log.write_text("")
    assert roll_in_order(changes[1:]) == WORKERS[1:]
    assert [sizing(vm) for vm in workers] == [(2, 64, "grid_v100-16c", "poweredOn")] * 4


def test_a_failed_drain_stops_before_the_power_off(dsi, conn, workers, log, said, monkeypatch):
    monkeypatch.setenv("FAKE_OC_FAIL", f"adm drain {WORKERS[1]}")
    monkeypatch.setenv("FAKE_OC_ERROR", "error when evicting pods/\"train-0\" -n \"ml\": Cannot evict pod as it "
                                        "would violate the pod's disruption budget.")
    with pytest.raises(r.RollStepError) as failed:
        roll_in_order([(props(conn, vm), props(conn, vm, profile="grid_v100-32c")) for vm in workers])
    assert failed.value.step == "drain"
    assert "disruption budget" in str(failed.value) and "Its VM was not touched" in str(failed.value)
    assert [sizing(vm)[2] for vm in workers] == ["grid_v100-32c", "grid_v100-16c", "grid_v100-16c", "grid_v100-16c"]
    assert calls(log)[-2:] == [f"oc adm drain {WORKERS[1]} --ignore-daemonsets --delete-emptydir-data --timeout=900s",
                               f"oc adm uncordon {WORKERS[1]}"]
    assert not [c for c in calls(log) if c.startswith("vsphere") and WORKERS[1] in c]


def test_a_refused_reconfigure_powers_the_vm_on_again_on_its_old_settings(dsi, conn, workers, log, said,
                                                                          monkeypatch):
    reconfigure = hostops.reconfigure_for_roll

    def refused(vm, settings):
        with log.open("a") as out:
            out.write(f"vsphere reconfigure {vm.name}\n")
        raise vim.fault.InvalidState(msg="the host has no free vGPU of that profile")

    monkeypatch.setattr(hostops, "reconfigure_for_roll", refused)
    vm = workers[0]
    with pytest.raises(r.RollStepError, match="step reconfigure: wrong state: the host has no free vGPU"):
        r.NodeRollProvider().update("id", props(conn, vm), props(conn, vm, profile="grid_v100-32c"))
    monkeypatch.setattr(hostops, "reconfigure_for_roll", reconfigure)
    assert sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn")
    assert calls(log)[-2:] == [f"vsphere power-on {vm.name}", f"oc adm uncordon {vm.name}"]


def test_the_drain_timeout_comes_from_the_stack(dsi, conn, workers, log, said):
    vm = workers[0]
    r.NodeRollProvider().update("id", props(conn, vm), props(conn, vm, cpus=2, drainTimeoutS=120))
    assert f"oc adm drain {vm.name} --ignore-daemonsets --delete-emptydir-data --timeout=120s" in calls(log)


# ---------------------------------------------------------------- control plane


def test_a_control_plane_node_waits_for_etcd_and_the_api_server_before_and_after(dsi, conn, workers, log, said):
    vm = workers[0]
    cp = {"role": "control-plane"}
    r.NodeRollProvider().update("id", props(conn, vm, **cp), props(conn, vm, cpus=2, **cp))
    timeline = calls(log)
    health = [i for i, c in enumerate(timeline) if c in ("oc get --raw /readyz",)]
    operators = [i for i, c in enumerate(timeline) if c.startswith("oc get clusteroperator etcd kube-apiserver")]
    assert len(health) == len(operators) == 2
    assert operators[0] < timeline.index(f"oc adm cordon {vm.name}")
    assert timeline.index(f"oc wait --for=condition=Ready node/{vm.name} --timeout=1200s") < health[1] < \
        timeline.index(f"oc adm uncordon {vm.name}")


def test_a_degraded_etcd_keeps_the_control_plane_node_running(dsi, conn, workers, log, said, monkeypatch):
    monkeypatch.setenv("FAKE_OC_DEGRADED", "etcd")
    monkeypatch.setattr(r, "HEALTH_TIMEOUT_S", 0.2)
    vm = workers[0]
    cp = {"role": "control-plane"}
    with pytest.raises(r.RollStepError, match="step health before: not healthy within 0.2 s: ClusterOperator etcd "
                                              "Available=True Degraded=True"):
        r.NodeRollProvider().update("id", props(conn, vm, **cp), props(conn, vm, cpus=2, **cp))
    assert sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn")
    assert not [c for c in calls(log) if c.startswith(("oc adm", "vsphere"))]


# ---------------------------------------------------------------- a VM that should run, runs


def test_a_vm_that_is_off_is_a_change_and_the_update_powers_it_on(dsi, conn, workers, log, said, monkeypatch):
    vm = workers[2]
    hostops.power_off(vm)
    state = props(conn, vm)
    provider = r.NodeRollProvider()
    monkeypatch.setattr(r, "LIVE_DIFF", True)  # as in the engine's provider process
    assert provider.diff("id", state, state).changes  # preview --expect-no-changes fails
    # pulumi refresh reports it too
    assert provider.read("id", state).outs["poweredOn"] is False
    provider.update("id", state, state)
    assert sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn")
    assert calls(log)[-2:] == [f"oc wait --for=condition=Ready node/{vm.name} --timeout=1200s",
                               f"oc adm uncordon {vm.name}"]
    assert not provider.diff("id", state, state).changes


def test_offline_the_diff_does_not_reach_vcenter(conn, monkeypatch):
    """`make diff` and the program's tests call diff without a vCenter: only inputs count there."""
    monkeypatch.setattr(r, "LIVE_DIFF", False)
    state = {"kind": r.KIND, **conn, "port": 1, "vmId": "vm-1", "vmName": "w1", "cpus": 1, "poweredOn": True}
    assert not r.NodeRollProvider().diff("id", state, state).changes
    assert r.NodeRollProvider().diff("id", state, {**state, "cpus": 2}).replaces == []


def test_a_change_without_a_cluster_still_rolls_the_vm_alone(dsi, conn, workers, log, said):
    vm = workers[0]
    r.NodeRollProvider().update("id", props(conn, vm, kubeconfig=None), props(conn, vm, cpus=2, kubeconfig=None))
    assert sizing(vm) == (2, 32, "grid_v100-16c", "poweredOn")
    assert said == [f"node {vm.name}: no kubeconfig for the cluster; its VM changes without a drain"]


def test_an_update_that_changes_nothing_on_vsphere_powers_nothing(dsi, conn, workers, log, said):
    vm = workers[0]
    old = props(conn, vm, kubeconfig=None, password="old-password")
    r.NodeRollProvider().update("id", old, props(conn, vm))
    assert calls(log) == [] and sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn")


@pytest.mark.parametrize(("key", "value", "bound"), [("cpus", 769, "1 to 768 vCPUs"),
                                                     ("memoryMb", 24 * 1024 * 1024 + 1, "24 TB")])
def test_sizes_beyond_vsphere_8_are_refused_at_check(conn, key, value, bound):
    failures = r.NodeRollProvider().check({}, {"cpus": 2, "memoryMb": 1024, key: value}).failures
    assert [f.property for f in failures] == [key] and bound in failures[0].reason


def test_numbers_as_the_engine_sends_them_pass_the_check():
    """The engine hands a dynamic provider numbers as doubles (found on the real engine: 4 arrived as 4.0)."""
    assert r.NodeRollProvider().check({}, {"cpus": 4.0, "memoryMb": 16384.0}).failures == []
    assert [f.property for f in r.NodeRollProvider().check({}, {"cpus": 4.5, "memoryMb": 16384.0}).failures] == [
        "cpus"]
