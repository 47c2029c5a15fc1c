"""Disruptive changes to cluster nodes' VMs roll (components/dynamic/roll.py): one node at a time,
drained before the power-off, uncordoned once Ready, stopping at the first failure.

Against lab-vcsim started with -method-delay on the power and reconfigure calls (so two power
cycles that were not serialised would overlap in vSphere's own event log), four of its VMs as four
workers, and a stand-in `oc` on PATH that logs each call and answers like a cluster with one node
per VM. The power calls are marked in the same log, so each test reads one timeline.

The engine runs node N+1's update only once node N's finished, and none after a failed one: each
NodeRoll depends on the previous (tests/vsphere/test_vsphere_program.py asserts the chain);
`roll_in_order` plays that here, update after update, stopping at the first error.

The rolls reach vCenter and the cluster through their explicit provider's configuration, not their inputs:
`roll_provider` is a NodeRollProvider configured as the engine configures it (tests/lab_vcsim.py `configured`),
with the test kubeconfig and the stand-in oc unless a test says otherwise.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pulumi
import pytest
from lab_vcsim import configured, provider_config, running_lab_vcsim, vm_named
from pyVmomi import vim

from components.dynamic import hostops
from components.dynamic import roll as r
from components.dynamic.provider import NOT_CONFIGURED, RETIRED_INPUTS
from components.openshift.files.common import render_script
from tools.sdk_access import UNKNOWN

KUBECONFIG = "apiVersion: v1\nkind: Config\n# test kubeconfig\n"
WORKERS = ["DC0_C0_RP0_VM0", "DC0_C0_RP0_VM1", "DC0_H0_VM0", "DC0_H0_VM1"]
METHOD_DELAY = "PowerOnVM_Task:150,PowerOffVM_Task:150,ReconfigVM_Task:100"

# Answers as oc 4.x does for the calls a roll makes, keeping what a cluster keeps (cordons, annotations) in
# a JSON file beside the log. A node reports boot id boot-N, N one more than the power-ons of its VM the
# log shows ("vsphere power-on <vm>" lines), as a kubelet reports a new one after each boot.
# FAKE_OC_FAIL: a prefix of the calls that fail with FAKE_OC_ERROR; FAKE_OC_HANG: one that never answers.
FAKE_OC = """#!{python}
import json, os, sys, time
from pathlib import Path
log = Path(os.environ["FAKE_OC_LOG"])
state_file = log.with_suffix(".state.json")
args = [a for a in sys.argv[1:] if not a.startswith("--request-timeout=")]
line = " ".join(args)
with log.open("a") as out:
    out.write("oc " + line + "\\n")
hang = os.environ.get("FAKE_OC_HANG", "")
if hang and line.startswith(hang):
    time.sleep(3600)
fail = os.environ.get("FAKE_OC_FAIL", "")
if fail and line.startswith(fail):
    sys.stderr.write(os.environ.get("FAKE_OC_ERROR", "error: failed") + "\\n")
    sys.exit(1)
state = json.loads(state_file.read_text()) if state_file.exists() else {{}}
nodes = os.environ["FAKE_OC_NODES"].split()
def node_of(arg):
    return arg.split("/", 1)[1] if arg.startswith("node/") else arg
def boot(node):
    booted = log.read_text().splitlines().count("vsphere power-on " + node)
    # FAKE_OC_STALE_BOOT_READS=N: the first N reads still show the boot before the last power-on (a kubelet
    # that has not posted yet)
    stale = int(os.environ.get("FAKE_OC_STALE_BOOT_READS", "0"))
    counter = log.with_suffix(".stale-reads")
    done = int(counter.read_text()) if counter.exists() else 0
    if booted and done < stale:
        counter.write_text(str(done + 1))
        booted -= 1
    return "boot-%d" % (1 + booted)
def save():
    state_file.write_text(json.dumps(state))
def ready(node):
    power = [l for l in log.read_text().splitlines() if l.startswith("vsphere power-") and l.endswith(" " + node)]
    return not power or power[-1].startswith("vsphere power-on")
if args[:2] == ["get", "nodes"] and args[-1] == "name":
    print("\\n".join("node/" + n for n in nodes if n not in state.get("deleted", [])))
elif args[:2] == ["get", "nodes"]:
    print(json.dumps({{"items": [{{
        "metadata": {{"name": n, "annotations": state.get("annotations", {{}}).get(n, {{}})}},
        "status": {{"conditions": [{{"type": "Ready", "status": "True" if ready(n) else "False"}}]}}}}
        for n in nodes]}}))
elif args[0] == "get" and "bootID" in line:
    print(boot(node_of(args[1])))
elif args[0] == "annotate":
    target = node_of([a for a in args if a.startswith("node/")][0])
    notes = state.setdefault("annotations", {{}}).setdefault(target, {{}})
    for pair in args[args.index("node/" + target) + 1:]:
        if pair.endswith("-"):
            notes.pop(pair[:-1], None)
        else:
            key, value = pair.split("=", 1)
            notes[key] = value
    save()
elif args[:2] == ["get", "node"] and args[-2:] == ["-o", "name"]:
    if args[2] not in nodes or args[2] in state.get("deleted", []):
        sys.stderr.write('Error from server (NotFound): nodes "%s" not found\\n' % args[2])
        sys.exit(1)
    print("node/" + args[2])
elif args[:2] == ["delete", "node"]:
    state["deleted"] = sorted({{*state.get("deleted", []), args[2]}})
    save()
elif args[:2] in (["adm", "cordon"], ["adm", "uncordon"]):
    cordoned = set(state.get("cordoned", []))
    (cordoned.add if args[1] == "cordon" else cordoned.discard)(args[2])
    state["cordoned"] = sorted(cordoned)
    save()
elif args[:3] == ["get", "--raw", "/readyz"]:
    print(os.environ.get("FAKE_OC_READYZ", "ok"))
elif args[:2] == ["get", "clusteroperator"]:
    degraded = os.environ.get("FAKE_OC_DEGRADED", "")
    progressing = os.environ.get("FAKE_OC_PROGRESSING", "")
    items = [{{"metadata": {{"name": n}}, "status": {{"conditions": [
        {{"type": "Available", "status": "True"}},
        {{"type": "Progressing", "status": "True" if n == progressing else "False"}},
        {{"type": "Degraded", "status": "True" if n == degraded else "False"}}]}}}} for n in args[2:-2]]
    print(json.dumps({{"items": items}}))
elif args[:2] == ["get", "pods"]:
    down = os.environ.get("FAKE_OC_ETCD_NOT_READY", "").split()
    members = os.environ.get("FAKE_OC_ETCD_NODES", os.environ["FAKE_OC_NODES"]).split()
    items = [{{"metadata": {{"name": "etcd-" + n}}, "spec": {{"nodeName": n}}, "status": {{"conditions": [
        {{"type": "Ready", "status": "False" if n in down else "True"}}]}}}} for n in members]
    print(json.dumps({{"items": items}}))
"""


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
    return delayed_vcsim.connection()


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
    monkeypatch.setattr(r, "HEALTH_DWELL_S", 0.1)
    monkeypatch.setattr(r, "_FAILED_IN_THIS_RUN", [])
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


def props(vm, *, cpus=1, memory=32, profile="grid_v100-16c", **extra) -> dict:
    """A NodeRoll's inputs as the engine hands them over: no connection, kubeconfig or oc (its provider's)."""
    return {"__provider": "c2VyaWFsaXplZA==", "kind": r.KIND, "vmId": vm._moId, "vmName": vm.name,
            "nodeName": vm.name, "role": "worker", "cpus": cpus, "memoryMb": memory, "memoryReservationMb": None,
            "hardwareVersion": None, "vgpuProfile": profile, "poweredOn": True, "drainTimeoutS": 900, **extra}


def roll_provider(conn: dict, *, kubeconfig: str | None = KUBECONFIG, oc: str = "oc") -> r.NodeRollProvider:
    """The rolls' provider as the engine's provider process has it: configured with vCenter and the cluster
    (``kubeconfig=None``: the stack names no cluster)."""
    return configured(r.NodeRollProvider(), conn, kubeconfig=kubeconfig, oc=oc)


def roll_in_order(conn: dict, changes: list[tuple[dict, dict]]) -> list[str]:
    """The engine over the NodeRoll chain: each update after the previous finished, none after a failure.
    Returns the nodes updated; re-raises the first failure after recording it."""
    done: list[str] = []
    provider = roll_provider(conn)
    r._FAILED_IN_THIS_RUN.clear()  # a new `up`, a new provider process
    for old, new in changes:
        assert provider.diff("id", old, new).changes
        provider.update("id", old, new)
        done.append(new["vmName"])
    return done


def calls(log: Path) -> list[str]:
    """The timeline without the boot-id reads, which poll."""
    return [line for line in log.read_text().splitlines() if "bootID" not in line]


def cluster_state(log: Path) -> dict:
    """What the stand-in cluster keeps: cordoned nodes, annotations."""
    path = log.with_suffix(".state.json")
    return json.loads(path.read_text()) if path.exists() else {}


def marks(log: Path) -> dict[str, str]:
    """The roll's marks left on nodes."""
    return {node: notes[r.ROLL_MARK] for node, notes in cluster_state(log).get("annotations", {}).items()
            if r.ROLL_MARK in notes}


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


def expected_node_steps(node: str, boot: str = "boot-1") -> list[str]:
    return [
        f"oc annotate --overwrite node/{node} {r.ROLL_MARK}={boot} {r.ROLL_PHASE}=cordoned",
        f"oc adm cordon {node}",
        f"oc adm drain {node} --ignore-daemonsets --delete-emptydir-data --timeout=900s",
        f"oc annotate --overwrite node/{node} {r.ROLL_MARK}={boot} {r.ROLL_PHASE}=down",
        f"vsphere power-off {node}",
        f"vsphere reconfigure {node}",
        f"vsphere power-on {node}",
        f"oc wait --for=condition=Ready node/{node} --timeout=1200s",
        f"oc adm uncordon {node}",
        f"oc annotate node/{node} {r.ROLL_MARK}- {r.ROLL_PHASE}-",
    ]


# ---------------------------------------------------------------- one node at a time


@pytest.mark.parametrize("change", ["sizing", "vgpu"])
def test_four_workers_roll_one_at_a_time_drained_first(dsi, conn, workers, log, said, change):
    new_settings = {"cpus": 2, "memory": 64} if change == "sizing" else {"profile": "grid_v100-32c"}
    start = time.time()
    done = roll_in_order(conn, [(props(vm), props(vm, **new_settings)) for vm in workers])

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
    changes = [(props(vm), props(vm, cpus=2, memory=64)) for vm in workers]
    with pytest.raises(r.RollStepError) as failed:
        roll_in_order(conn, changes)

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
    assert WORKERS[1] in marks(log)  # it went down: the next up checks it is Ready before it clears the mark
    record("power-on fails (no room)", "power-on",
           "stops; VM back on its old settings and running, node uncordoned; next up rolls it again")

    # The next `up`: the failed node's state still holds the old inputs, so it and the later ones roll.
    monkeypatch.setattr(hostops, "power_on", power_on)
    log.write_text("")
    assert roll_in_order(conn, changes[1:]) == WORKERS[1:]
    assert [sizing(vm) for vm in workers] == [(2, 64, "grid_v100-16c", "poweredOn")] * 4


def test_a_failed_drain_stops_before_the_power_off(dsi, conn, workers, log, said, monkeypatch):
    monkeypatch.setenv("FAKE_OC_FAIL", f"adm drain {WORKERS[1]}")
    monkeypatch.setenv("FAKE_OC_ERROR", "error when evicting pods/\"train-0\" -n \"ml\": Cannot evict pod as it "
                                        "would violate the pod's disruption budget.")
    with pytest.raises(r.RollStepError) as failed:
        roll_in_order(conn, [(props(vm), props(vm, profile="grid_v100-32c")) for vm in workers])
    assert failed.value.step == "drain"
    assert "disruption budget" in str(failed.value) and "Its VM was not touched" in str(failed.value)
    assert [sizing(vm)[2] for vm in workers] == ["grid_v100-32c", "grid_v100-16c", "grid_v100-16c", "grid_v100-16c"]
    assert calls(log)[-3:] == [f"oc adm drain {WORKERS[1]} --ignore-daemonsets --delete-emptydir-data --timeout=900s",
                               f"oc adm uncordon {WORKERS[1]}", f"oc annotate node/{WORKERS[1]} {r.ROLL_MARK}- {r.ROLL_PHASE}-"]
    assert cluster_state(log)["cordoned"] == [] and marks(log) == {}
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
        roll_provider(conn).update("id", props(vm), props(vm, profile="grid_v100-32c"))
    monkeypatch.setattr(hostops, "reconfigure_for_roll", reconfigure)
    assert sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn")
    assert calls(log)[-2:] == [f"vsphere power-on {vm.name}", f"oc adm uncordon {vm.name}"]
    record("reconfigure refused", "reconfigure",
           "stops; VM powered on again on its old settings, node uncordoned; next up rolls it again")


def test_the_drain_timeout_comes_from_the_stack(dsi, conn, workers, log, said):
    vm = workers[0]
    roll_provider(conn).update("id", props(vm), props(vm, cpus=2, drainTimeoutS=120))
    assert f"oc adm drain {vm.name} --ignore-daemonsets --delete-emptydir-data --timeout=120s" in calls(log)


# ---------------------------------------------------------------- control plane


def test_a_control_plane_node_waits_for_etcd_and_the_api_server_before_and_after(dsi, conn, workers, log, said):
    vm = workers[0]
    cp = {"role": "control-plane"}
    roll_provider(conn).update("id", props(vm, **cp), props(vm, cpus=2, **cp))
    timeline = calls(log)
    cordon = timeline.index(f"oc adm cordon {vm.name}")
    ready = timeline.index(f"oc wait --for=condition=Ready node/{vm.name} --timeout=1200s")
    uncordon = timeline.index(f"oc adm uncordon {vm.name}")
    # /readyz, the ClusterOperators and the etcd members, polled for the dwell time, before and after
    for check in ("oc get --raw /readyz", "oc get clusteroperator etcd kube-apiserver -o json",
                  "oc get pods -n openshift-etcd -l app=etcd -o json"):
        seen = [i for i, c in enumerate(timeline) if c == check]
        assert [i for i in seen if i < cordon] and [i for i in seen if ready < i < uncordon], check
        assert not [i for i in seen if cordon < i < ready], check


def test_a_degraded_etcd_keeps_the_control_plane_node_running(dsi, conn, workers, log, said, monkeypatch):
    monkeypatch.setenv("FAKE_OC_DEGRADED", "etcd")
    monkeypatch.setattr(r, "HEALTH_TIMEOUT_S", 0.2)
    vm = workers[0]
    cp = {"role": "control-plane"}
    with pytest.raises(r.RollStepError, match="step health before: not healthy within 0.2 s: ClusterOperator etcd "
                                              "Available=True Progressing=False Degraded=True"):
        roll_provider(conn).update("id", props(vm, **cp), props(vm, cpus=2, **cp))
    assert sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn")
    assert not [c for c in calls(log) if c.startswith(("oc adm", "vsphere"))]


# ---------------------------------------------------------------- a VM that should run, runs


def test_a_vm_that_is_off_is_a_change_and_the_update_powers_it_on(dsi, conn, workers, log, said, monkeypatch):
    vm = workers[2]
    hostops.power_off(vm)
    state = props(vm)
    provider = roll_provider(conn)
    monkeypatch.setattr(r, "LIVE_DIFF", True)  # as in the engine's provider process
    assert provider.diff("id", state, state).changes  # preview --expect-no-changes fails
    # pulumi refresh reports it too
    assert provider.read("id", state).outs["poweredOn"] is False
    provider.update("id", state, state)
    assert sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn")
    assert calls(log)[-3:] == [f"oc wait --for=condition=Ready node/{vm.name} --timeout=1200s",
                               f"oc adm uncordon {vm.name}", f"oc annotate node/{vm.name} {r.ROLL_MARK}- {r.ROLL_PHASE}-"]
    assert marks(log) == {}
    assert not provider.diff("id", state, state).changes


def test_offline_the_diff_does_not_reach_vcenter(conn, monkeypatch):
    """`make diff` and the program's tests call diff without a vCenter: only inputs count there."""
    monkeypatch.setattr(r, "LIVE_DIFF", False)
    state = {"kind": r.KIND, "vmId": "vm-1", "vmName": "w1", "cpus": 1, "poweredOn": True}
    unreachable = roll_provider({**conn, "port": 1})
    assert not unreachable.diff("id", state, state).changes
    assert unreachable.diff("id", state, {**state, "cpus": 2}).replaces == []


def test_a_change_without_a_cluster_still_rolls_the_vm_alone(dsi, conn, workers, log, said):
    vm = workers[0]
    roll_provider(conn, kubeconfig=None).update("id", props(vm), props(vm, cpus=2))
    assert sizing(vm) == (2, 32, "grid_v100-16c", "poweredOn")
    assert said == [f"node {vm.name}: the stack names no cluster for it; its VM changes without a drain"]


def test_an_update_that_changes_nothing_on_vsphere_powers_nothing(dsi, conn, workers, log, said, monkeypatch):
    """A state written by the previous release still carries the connection, the kubeconfig and oc in each roll
    (another password, a kubeconfig since renewed): they are no inputs any more, and nothing differs."""
    vm = workers[0]
    old = {**props(vm), **conn, "password": "old-password", "kubeconfig": "# the kubeconfig before its renewal\n",
           "oc": "/usr/local/bin/oc"}
    assert set(RETIRED_INPUTS) <= set(old)
    provider = roll_provider(conn)
    monkeypatch.setattr(r, "LIVE_DIFF", True)  # as in the engine's provider process: the VM runs
    assert provider.diff("id", old, props(vm)).changes is False
    provider.update("id", old, props(vm))
    # it only looks for a roll an earlier run left unfinished
    assert calls(log) == ["oc get nodes -o json"] and sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn")


def test_a_provider_without_a_vcenter_connection_says_to_run_up_once_and_touches_no_vm(dsi, workers, log, said):
    """A stack last deployed by the release that kept the connection in each roll: until one `pulumi up` records
    it in the rolls' provider, the provider process holds none, unconfigured or configured with no vCenter keys."""
    vm = workers[0]
    for provider in (r.NodeRollProvider(), configured(r.NodeRollProvider(), {})):
        with pytest.raises(r.VsphereOperationError) as failed:
            provider.update("id", props(vm), props(vm, cpus=2, memory=64))
        message = str(failed.value)
        assert message == NOT_CONFIGURED
        assert message.startswith("its provider holds no vCenter connection") and "Run `pulumi up` once" in message
    assert sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn") and calls(log) == [] and said == []
    assert r._FAILED_IN_THIS_RUN == []


def test_a_new_vms_roll_gives_it_its_vgpu_without_asking_a_cluster(dsi, conn, workers, log, said):
    """The deployment that creates a VM creates its roll: the VM boots its ignition and is no node yet, so
    the roll's create attaches its vGPU (the clone cannot) with no drain and no question to the cluster,
    which would not list it (and stop a roll of a running node)."""
    vm = workers[0]
    hostops.power_off(vm)
    hostops.reconfigure_for_roll(vm, {"vgpuProfile": ""})
    hostops.power_on(vm)
    open(log, "w").close()
    created = roll_provider(conn).create(props(vm, **{r.NEW_VM: True}))
    assert created.id == f"{vm._moId}:roll" and created.outs[r.NEW_VM] is True
    assert sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn")
    assert calls(log) == [f"vsphere power-off {vm.name}", f"vsphere reconfigure {vm.name}",
                          f"vsphere power-on {vm.name}"]
    assert said == []


def test_new_vms_get_their_vgpus_side_by_side(dsi, conn, workers, log, said):
    """Day 1 stays parallel: a new VM's create does not wait for the one-node-at-a-time lock the rolls of
    running nodes take (held here by the test, as a running node's roll would)."""
    vm = workers[1]
    hostops.power_off(vm)
    hostops.reconfigure_for_roll(vm, {"vgpuProfile": ""})
    hostops.power_on(vm)
    done: list[object] = []
    with r._ONE_AT_A_TIME:
        worker = threading.Thread(target=lambda: done.append(roll_provider(conn).create(
            props(vm, **{r.NEW_VM: True}))))
        worker.start()
        worker.join(timeout=60)
    assert done and sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn")


def test_a_roll_created_for_a_running_node_asks_its_cluster(dsi, conn, workers, log, said, monkeypatch):
    """Without NEW_VM (a lab's VM that runs, whose roll was dropped from the state, or built before rolls)
    the create is a roll: the cluster must list the node, else nothing changes."""
    vm = workers[2]
    monkeypatch.setenv("FAKE_OC_NODES", " ".join(w for w in WORKERS if w != vm.name))
    with pytest.raises(r.RollStepError, match="ask the cluster"):
        roll_provider(conn).create(props(vm, cpus=2))
    assert sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn")


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


# ================================================================ failing closed: the fault matrix
# A fault at any step stops the roll before the next node; no node the cluster holds is powered off
# undrained; never two are down at once; with the fault gone the next `up` finishes the node first and
# converges. The table under "The fault matrix" in docs/day2.md is what these tests find.

DAY2 = Path(__file__).resolve().parents[2] / "docs" / "day2.md"
NEW = {"cpus": 2, "memory": 64}
UNAUTHORIZED = "error: You must be logged in to the server (Unauthorized)"
FORBIDDEN = 'Error from server (Forbidden): nodes is forbidden: User "system:serviceaccount:ci:x" cannot list resource'
REFUSED = "The connection to the server api.lab.example:6443 was refused - did you specify the right host or port?"
MATRIX: dict[tuple[str, str], str] = {}
"""(fault, step) -> outcome, as the tests below find it; compared with docs/day2.md at the end."""


def record(fault: str, step: str, outcome: str) -> None:
    MATRIX[(fault, step)] = outcome


def down_at_once(log_path: Path) -> int:
    """The most VMs the timeline shows powered off at the same moment."""
    off: set[str] = set()
    most = 0
    for line in log_path.read_text().splitlines():
        if line.startswith("vsphere power-off "):
            off.add(line.split()[-1])
        elif line.startswith("vsphere power-on "):
            off.discard(line.split()[-1])
        most = max(most, len(off))
    return most


def undrained_power_offs(log_path: Path) -> list[str]:
    """VMs powered off without a successful drain of their node before it in the same run."""
    drained: set[str] = set()
    wrong = []
    for line in log_path.read_text().splitlines():
        if line.startswith("oc adm drain "):
            drained.add(line.split()[3])
        elif line.startswith("vsphere power-off "):
            vm = line.split()[-1]
            if vm not in drained:
                wrong.append(vm)
            drained.discard(vm)
    return wrong


def converged(workers_, log_path: Path, conn_) -> None:
    """The next `up` with the fault gone: the chain from the first node, every VM as the stack says and
    running, no node cordoned, no mark left, and a preview that finds nothing to do."""
    roll_in_order(conn_, [(props(vm), props(vm, **NEW)) for vm in workers_])
    assert [sizing(vm) for vm in workers_] == [(2, 64, "grid_v100-16c", "poweredOn")] * len(workers_)
    assert cluster_state(log_path).get("cordoned", []) == [] and marks(log_path) == {}
    provider = roll_provider(conn_)
    r.LIVE_DIFF, live_diff = True, r.LIVE_DIFF
    try:
        for vm in workers_:
            state = props(vm, **NEW)
            assert not provider.diff("id", state, state).changes  # preview --expect-no-changes
    finally:
        r.LIVE_DIFF = live_diff
    assert undrained_power_offs(log_path) == [] and down_at_once(log_path) <= 1


# ---------------------------------------------------------------- the cluster does not answer


@pytest.mark.parametrize(("fault", "env"), [
    ("401 Unauthorized", {"FAKE_OC_FAIL": "get nodes", "FAKE_OC_ERROR": UNAUTHORIZED}),
    ("403 Forbidden", {"FAKE_OC_FAIL": "get nodes", "FAKE_OC_ERROR": FORBIDDEN}),
    ("connection refused", {"FAKE_OC_FAIL": "get nodes", "FAKE_OC_ERROR": REFUSED}),
    ("timeout", {"FAKE_OC_HANG": "get nodes"}),
    ("node not listed", {"FAKE_OC_NODES": " ".join(WORKERS[1:])}),
])
def test_a_cluster_that_does_not_answer_stops_the_roll_before_any_power_off(
        dsi, conn, workers, log, said, monkeypatch, fault, env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(r, "_OC_GET_TIMEOUT_S", 1)
    with pytest.raises(r.RollStepError) as failed:
        roll_in_order(conn, [(props(vm), props(vm, **NEW)) for vm in workers])
    assert failed.value.node == WORKERS[0] and failed.value.step == "ask the cluster"
    assert "Nothing was changed" in str(failed.value) and r.CLUSTER_GONE in str(failed.value)
    assert not [c for c in calls(log) if c.startswith(("vsphere", "oc adm", "oc annotate"))]
    assert [sizing(vm) for vm in workers] == [(1, 32, "grid_v100-16c", "poweredOn")] * 4
    record(fault, "ask the cluster", "stops before any change; no node touched")
    for key in env:
        monkeypatch.delenv(key)
    monkeypatch.setenv("FAKE_OC_NODES", " ".join(WORKERS))
    converged(workers, log, conn)


def test_a_control_plane_node_without_a_kubeconfig_is_not_changed(dsi, conn, workers, log, said):
    vm = workers[0]
    cp = {"role": "control-plane"}
    with pytest.raises(r.RollStepError, match="step ask the cluster: a control-plane node and no kubeconfig"):
        roll_provider(conn, kubeconfig=None).update("id", props(vm, **cp), props(vm, cpus=2, **cp))
    assert sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn") and calls(log) == []
    record("no kubeconfig (control plane)", "ask the cluster", "stops before any change")


def test_a_kubeconfig_not_known_yet_holds_the_node_in_its_cluster_and_changes_nothing(dsi, conn, workers, log, said):
    """The kubeconfig is an output not yet known when the engine configures the provider (the wire's UNKNOWN):
    the stack names a cluster, so a worker is one of its nodes, and it does not change without asking it."""
    vm = workers[0]
    provider = roll_provider(conn, kubeconfig=UNKNOWN)
    worker = props(vm, cpus=2)
    assert provider.cluster.named and provider.cluster.kubeconfig is None
    assert r._member(worker, provider.cluster) is True
    with pytest.raises(r.RollStepError) as refused:
        with r._cluster(worker, vm.name, provider.cluster):
            pytest.fail("a node in a cluster whose kubeconfig is not known went on")
    assert refused.value.step == "ask the cluster" and refused.value.reason == "its cluster's kubeconfig is not known"
    assert "Nothing was changed" in str(refused.value)
    with pytest.raises(r.RollStepError, match="step ask the cluster: its cluster's kubeconfig is not known"):
        provider.update("id", props(vm), worker)
    assert sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn") and calls(log) == [] and said == []


def test_a_control_plane_node_listed_by_another_name_is_not_changed(dsi, conn, workers, log, said, monkeypatch):
    monkeypatch.setenv("FAKE_OC_NODES", "cp-0.lab.example cp-1.lab.example cp-2.lab.example")
    vm = workers[0]
    cp = {"role": "control-plane"}
    with pytest.raises(r.RollStepError, match="step ask the cluster: the cluster lists 3 node"):
        roll_provider(conn).update("id", props(vm, **cp), props(vm, cpus=2, **cp))
    assert sizing(vm) == (1, 32, "grid_v100-16c", "poweredOn")


def test_the_cluster_gone_setting_changes_vms_undrained_and_says_so(dsi, conn, workers, log, said, monkeypatch):
    monkeypatch.setenv("FAKE_OC_FAIL", "get nodes")
    monkeypatch.setenv(r.CLUSTER_GONE, "1")
    vm = workers[0]
    roll_provider(conn).update("id", props(vm), props(vm, **NEW))
    assert sizing(vm) == (2, 64, "grid_v100-16c", "poweredOn")
    assert not [c for c in calls(log) if c.startswith("oc")]
    assert said == [f"node {vm.name}: {r.CLUSTER_GONE}=1: its VM changes without asking the cluster (no drain, no "
                    "Ready wait, no quorum check)"]
    monkeypatch.setenv(r.CLUSTER_GONE, "yes")
    with pytest.raises(r.VsphereOperationError, match=f"{r.CLUSTER_GONE}='yes': set it to 1"):
        roll_provider(conn).update("id", props(vm), props(vm, cpus=3, memory=64))
    assert sizing(vm) == (2, 64, "grid_v100-16c", "poweredOn")


# ---------------------------------------------------------------- a step fails


@pytest.mark.parametrize("step", ["cordon", "drain", "Ready", "uncordon"])
@pytest.mark.parametrize(("fault", "error"), [("401 Unauthorized", UNAUTHORIZED), ("connection refused", REFUSED)])
def test_an_api_failure_at_a_step_stops_the_roll_at_that_node(dsi, conn, workers, log, said, monkeypatch,
                                                              step, fault, error):
    prefix = {"cordon": "adm cordon", "drain": "adm drain", "Ready": "wait", "uncordon": "adm uncordon"}[step]
    monkeypatch.setenv("FAKE_OC_FAIL", f"{prefix} {WORKERS[1]}" if step != "Ready" else prefix)
    monkeypatch.setenv("FAKE_OC_ERROR", error)
    with pytest.raises(r.RollStepError) as failed:
        roll_in_order(conn, [(props(vm), props(vm, **NEW)) for vm in workers])
    stopped_at = failed.value.node
    assert failed.value.step == step
    later = WORKERS[WORKERS.index(stopped_at) + 1:]
    assert not [c for c in calls(log) if any(n in c for n in later)]  # nothing after the first failure
    assert undrained_power_offs(log) == [] and down_at_once(log) <= 1
    state = cluster_state(log)
    went_down = f"vsphere power-off {stopped_at}" in calls(log)
    if went_down:
        assert stopped_at in marks(log)  # the next up finishes it first
        outcome = "stops; node stays cordoned and marked, VM on new settings; next up finishes it first"
    else:
        assert stopped_at not in state.get("cordoned", []) or step == "cordon"
        outcome = "stops; VM not touched, node uncordoned"
    record(fault, step, outcome)
    monkeypatch.delenv("FAKE_OC_FAIL")
    log.write_text(log.read_text() + "--- next up\n")
    converged(workers, log, conn)
    if went_down:
        after = log.read_text().split("--- next up\n", 1)[1].splitlines()
        assert f"vsphere power-off {stopped_at}" not in after  # finished, not rolled again


def test_a_pdb_that_blocks_the_drain_stops_with_the_node_uncordoned(dsi, conn, workers, log, said, monkeypatch):
    monkeypatch.setenv("FAKE_OC_FAIL", f"adm drain {WORKERS[0]}")
    monkeypatch.setenv("FAKE_OC_ERROR", 'error when evicting pods/"train-0" -n "ml" (will retry after 5s): Cannot '
                                        "evict pod as it would violate the pod's disruption budget.")
    with pytest.raises(r.RollStepError, match="step drain"):
        roll_in_order(conn, [(props(vm), props(vm, **NEW)) for vm in workers])
    assert cluster_state(log)["cordoned"] == [] and marks(log) == {}
    assert not [c for c in calls(log) if c.startswith("vsphere")]
    record("PodDisruptionBudget blocks", "drain", "stops; VM not touched, node uncordoned")


def test_a_lost_vcenter_session_before_the_reconfigure_leaves_one_node_down_and_the_next_up_finishes_it(
        dsi, conn, workers, log, said, monkeypatch):
    reconfigure = hostops.reconfigure_for_roll

    def session_gone(vm, settings):
        raise vim.fault.NotAuthenticated(msg="The session is not authenticated.")

    monkeypatch.setattr(hostops, "reconfigure_for_roll", session_gone)
    power_on = hostops.power_on
    monkeypatch.setattr(hostops, "power_on", session_gone)  # the session is gone for every call
    with pytest.raises(r.RollStepError, match="step reconfigure"):
        roll_in_order(conn, [(props(vm), props(vm, **NEW)) for vm in workers])
    monkeypatch.setattr(hostops, "reconfigure_for_roll", reconfigure)
    monkeypatch.setattr(hostops, "power_on", power_on)
    assert sizing(workers[0])[3] == "poweredOff" and WORKERS[0] in cluster_state(log)["cordoned"]
    assert WORKERS[0] in marks(log)
    assert [sizing(vm)[3] for vm in workers[1:]] == ["poweredOn"] * 3
    record("vCenter session ends", "reconfigure", "stops; node stays cordoned and marked, VM off; next up finishes it")
    converged(workers, log, conn)


def test_ready_never_comes_stops_with_the_node_cordoned(dsi, conn, workers, log, said, monkeypatch):
    monkeypatch.setenv("FAKE_OC_FAIL", f"wait --for=condition=Ready node/{WORKERS[0]}")
    monkeypatch.setenv("FAKE_OC_ERROR", f"error: timed out waiting for the condition on nodes/{WORKERS[0]}")
    with pytest.raises(r.RollStepError, match="step Ready"):
        roll_in_order(conn, [(props(vm), props(vm, **NEW)) for vm in workers])
    assert WORKERS[0] in cluster_state(log)["cordoned"] and WORKERS[0] in marks(log)
    assert not [c for c in calls(log) if WORKERS[1] in c]
    record("Ready never comes", "Ready", "stops; node stays cordoned and marked; next up waits again, uncordons")
    monkeypatch.delenv("FAKE_OC_FAIL")
    converged(workers, log, conn)


# ---------------------------------------------------------------- the run is killed


# A roll's update in a process of its own, to kill: argv holds the old and new inputs and its provider's
# configuration (tests/lab_vcsim.py `provider_config`), each as JSON.
KILLABLE = """
import json, os, sys, time
from pathlib import Path
from pulumi.dynamic import Config, ConfigureRequest
from components.dynamic import hostops
from components.dynamic import roll as r
log = Path(os.environ["FAKE_OC_LOG"])
pause_before = os.environ.get("PAUSE_BEFORE", "")
pause_after = os.environ.get("PAUSE_AFTER", "")
def pause():
    with log.open("a") as out:
        out.write("paused\\n")
    time.sleep(3600)
r._POLL_S = 0.05
r.HEALTH_DWELL_S = 0.1
for verb, name in (("power-off", "power_off"), ("power-on", "power_on"), ("reconfigure", "reconfigure_for_roll")):
    original = getattr(hostops, name)
    def marked(vm, *args, _verb=verb, _original=original, **kwargs):
        if _verb == pause_before:
            pause()
        with log.open("a") as out:
            out.write(f"vsphere {_verb} {vm.name}\\n")
        result = _original(vm, *args, **kwargs)
        if _verb == pause_after:
            pause()
        return result
    setattr(hostops, name, marked)
old, new, config = (json.loads(arg) for arg in sys.argv[1:4])
provider = r.NodeRollProvider()
provider.configure(ConfigureRequest(Config(config, "gpu-lab")))  # as the engine's provider process does
provider.update("id", old, new)
"""


def killable_config(conn: dict) -> str:
    """KILLABLE's provider configuration: the one `roll_provider` has."""
    return json.dumps(provider_config(conn, kubeconfig=KUBECONFIG, oc="oc"))


KILL_POINTS = {
    # where the run is when it is killed: (what pauses it, the step it is killed after)
    "after cordon": ({"FAKE_OC_HANG": "adm drain"}, "cordon"),
    "after drain": ({"PAUSE_BEFORE": "power-off"}, "drain"),
    "after power-off": ({"PAUSE_AFTER": "power-off"}, "power-off"),
    "after reconfigure": ({"PAUSE_AFTER": "reconfigure"}, "reconfigure"),
    "after power-on": ({"PAUSE_AFTER": "power-on"}, "power-on"),
    "waiting for Ready": ({"FAKE_OC_HANG": "wait --for=condition=Ready"}, "Ready"),
    "before uncordon": ({"FAKE_OC_HANG": "adm uncordon"}, "uncordon"),
}


KILLED_CHANGES = {
    # the change under way when the run is killed: (the node's role, the new settings)
    "sizing": ("worker", NEW),
    "vGPU profile": ("worker", {"profile": "grid_v100-32c"}),
    "control-plane sizing": ("control-plane", NEW),
}


@pytest.mark.parametrize(("point", "change"), [(point, "sizing") for point in KILL_POINTS] + [
    ("after power-off", "vGPU profile"), ("after reconfigure", "vGPU profile"),
    ("after power-off", "control-plane sizing"), ("waiting for Ready", "control-plane sizing")])
def test_a_run_killed_at_any_step_is_finished_by_the_next_up_before_the_next_node(
        dsi, conn, workers, log, said, monkeypatch, point, change):
    pause, step = KILL_POINTS[point]
    role, settings = KILLED_CHANGES[change]
    env = {**os.environ, **pause}
    roll_in_order(conn, [(props(workers[0]), props(workers[0], **NEW))])  # the chain's first, done
    vm = workers[1]
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE, json.dumps(props(vm, role=role)),
                             json.dumps(props(vm, role=role, **settings)), killable_config(conn)], env=env,
                            cwd=Path(__file__).resolve().parents[2])
    deadline = time.monotonic() + 60
    hang = pause.get("FAKE_OC_HANG", "")
    try:
        while time.monotonic() < deadline:
            lines = log.read_text().splitlines()
            if "paused" in lines or (hang and any(line.startswith(f"oc {hang}") and WORKERS[1] in line
                                                  for line in lines)):
                break
            assert proc.poll() is None, f"the run ended before {point}: exit {proc.returncode}"
            time.sleep(0.05)
        else:
            pytest.fail(f"the run never reached {point}")
        time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)  # what kill -9 of the engine does to its provider process
    finally:
        proc.wait(timeout=30)
    # the oc stand-in the run left hanging (a child of the killed process) must not answer later
    subprocess.run(["pkill", "-9", "-f", f"{log.parent}/bin/oc"], check=False)
    monkeypatch.delenv("FAKE_OC_HANG", raising=False)
    assert WORKERS[1] in marks(log), f"killed {point}: the node carries the roll's mark"
    assert undrained_power_offs(log) == []
    log.write_text(log.read_text() + "--- next up\n")
    # The next up: the state still holds the old inputs for this node and the ones after it
    if change == "sizing":
        converged(workers, log, conn)
    else:
        roll_in_order(conn, [(props(vm, role=role), props(vm, role=role, **settings))])
        expected = {"vGPU profile": (1, 32, "grid_v100-32c"), "control-plane sizing": (2, 64, "grid_v100-16c")}
        assert sizing(vm) == (*expected[change], "poweredOn")
        assert cluster_state(log).get("cordoned", []) == [] and marks(log) == {}
    after = log.read_text().split("--- next up\n", 1)[1].splitlines()
    if change != "sizing":
        converged(workers, log, conn)
    finished = [c for c in after if WORKERS[1] in c and not c.startswith("oc get")]
    others = [i for i, c in enumerate(after) if WORKERS[2] in c]
    assert not others or after.index(f"oc adm uncordon {WORKERS[1]}") < others[0]  # finished before the next
    rolled_again = f"vsphere power-off {WORKERS[1]}" in after
    assert rolled_again == (point in ("after cordon", "after drain")), finished
    record(f"process killed (SIGKILL), {change}", step, "next up finishes this node first" + (
        " (drains again, then rolls)" if rolled_again else " without a second power cycle"))


def test_a_resume_after_the_power_on_waits_for_the_new_boot_however_late_the_kubelet_says_so(
        dsi, conn, workers, log, said, monkeypatch):
    """Killed right after the power-on: the node may still show its old boot id and Ready (a node stays Ready
    for some 40 s after its machine stops; found with the real engine and a node that lagged its VM). The
    mark's phase says the VM went down, so the resume waits for a new boot id before it uncordons."""
    vm = workers[1]
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE, json.dumps(props(vm)), json.dumps(props(vm, **NEW)),
                             killable_config(conn)], env={**os.environ, "PAUSE_AFTER": "power-on"},
                            cwd=Path(__file__).resolve().parents[2])
    try:
        deadline = time.monotonic() + 60
        while "paused" not in log.read_text().splitlines():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert cluster_state(log)["annotations"][WORKERS[1]][r.ROLL_PHASE] == "down"
    log.write_text(log.read_text() + "--- next up\n")
    monkeypatch.setenv("FAKE_OC_STALE_BOOT_READS", "3")  # its kubelet has not posted the new boot yet
    roll_provider(conn).update("id", props(vm), props(vm, **NEW))
    after = log.read_text().split("--- next up\n", 1)[1].splitlines()
    reads = [i for i, c in enumerate(after) if "bootID" in c and WORKERS[1] in c]
    uncordon = after.index(f"oc adm uncordon {WORKERS[1]}")
    assert len([i for i in reads if i < uncordon]) >= 4  # three stale answers, then the new boot
    assert not [c for c in after if c.startswith("vsphere")]  # no second power cycle
    assert marks(log) == {} and cluster_state(log)["cordoned"] == []
    record("process killed (SIGKILL), kubelet late", "power-on",
           "next up waits for the new boot id before it uncordons; no second power cycle")


def test_a_new_run_waits_for_the_roll_a_killed_run_left_running(dsi, conn, workers, log, said, monkeypatch):
    """kill -9 of the CLI leaves its dynamic provider running the roll it was in (found with the real engine):
    a new `up` started meanwhile has a process of its own, so the roll takes a lock on the machine too. The
    new run's roll waits for the old one, then finds that node out of service and stops."""
    infos: list[str] = []
    monkeypatch.setattr(pulumi.log, "info", lambda m, *a, **k: infos.append(m))
    old_run = subprocess.Popen([sys.executable, "-c", KILLABLE, json.dumps(props(workers[1])),
                                json.dumps(props(workers[1], **NEW)), killable_config(conn)],
                               env={**os.environ, "PAUSE_AFTER": "power-off"}, cwd=Path(__file__).resolve().parents[2])
    outcome: list[BaseException | None] = []

    def new_run() -> None:
        try:
            roll_provider(conn).update("id", props(workers[0]), props(workers[0], **NEW))
            outcome.append(None)
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome.append(error)

    try:
        deadline = time.monotonic() + 60
        while "paused" not in log.read_text().splitlines():
            assert old_run.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        thread = threading.Thread(target=new_run)
        thread.start()
        time.sleep(1.5)
        assert thread.is_alive() and not outcome  # waiting for the old run's roll
        assert any("waiting for a roll another process runs" in m for m in infos)
        assert not [c for c in calls(log) if WORKERS[0] in c]
    finally:
        os.kill(old_run.pid, signal.SIGKILL)
        old_run.wait(timeout=30)
    thread.join(timeout=60)
    assert isinstance(outcome[0], r.RollStepError)
    assert f"another node is out of service: {WORKERS[1]} (an unfinished roll)" in str(outcome[0])
    assert sizing(workers[0]) == (1, 32, "grid_v100-16c", "poweredOn")


def test_a_node_left_down_by_a_killed_run_stops_any_other_node_from_going_down(
        dsi, conn, workers, log, said, monkeypatch):
    """A change to a node earlier in the chain than the one a killed run left off: one node at a time
    holds across runs. The mark and the Ready condition say which node is out; `--target` finishes it."""
    first, second = workers[0], workers[1]
    provider = roll_provider(conn)
    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
        # stands for the kill, after the power-off and reconfigure
        patched.setattr(hostops, "power_on", lambda vm: (_ for _ in ()).throw(KeyboardInterrupt()))
        provider.update("id", props(second), props(second, **NEW))
    assert sizing(second)[3] == "poweredOff" and WORKERS[1] in marks(log)
    with pytest.raises(r.RollStepError) as failed:
        provider.update("id", props(first), props(first, cpus=3, memory=64))
    assert failed.value.step == "health before"
    assert f"another node is out of service: {WORKERS[1]} (an unfinished roll)" in str(failed.value)
    assert sizing(first) == (1, 32, "grid_v100-16c", "poweredOn")
    record("another node left down", "health before", "stops before any change; the other node is named")
    assert r._FAILED_IN_THIS_RUN == [WORKERS[0]]
    with pytest.raises(r.RollStepError, match=f"the roll of {WORKERS[0]} failed earlier in this run"):
        provider.update("id", props(second), props(second, **NEW))
    r._FAILED_IN_THIS_RUN.clear()  # the next up
    provider.update("id", props(second), props(second, **NEW))  # pulumi up --target <its roll>
    provider.update("id", props(first), props(first, cpus=3, memory=64))
    assert sizing(first)[0] == 3 and sizing(second) == (2, 64, "grid_v100-16c", "poweredOn") and marks(log) == {}


# ---------------------------------------------------------------- a node that leaves


def remove(vm_name: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """components/openshift/scripts/remove-node.sh as the node's Command deletes it, with the stand-in oc."""
    script = render_script("remove-node.sh", {"OC": "oc", "NODE_NAMES": vm_name, "DRAIN_TIMEOUT_S": 60})
    return subprocess.run(["sh", "-c", script], input=KUBECONFIG, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize(("fault", "env", "step"), [
    ("401 Unauthorized", {"FAKE_OC_FAIL": "get nodes", "FAKE_OC_ERROR": UNAUTHORIZED}, "ask the cluster"),
    ("connection refused", {"FAKE_OC_FAIL": "get nodes", "FAKE_OC_ERROR": REFUSED}, "ask the cluster"),
    ("PodDisruptionBudget blocks", {"FAKE_OC_FAIL": "adm drain", "FAKE_OC_ERROR": "Cannot evict pod as it would "
                                    "violate the pod's disruption budget."}, "drain"),
])
def test_a_node_that_leaves_stops_when_its_cluster_does_not_let_it_go(log, monkeypatch, fault, env, step):
    """The node's removal holds the roll's invariants: its machine's delete (which waits for it) does not
    run while the cluster cannot say the node is empty; with the fault gone it is drained and deleted."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    stopped = remove(WORKERS[3])
    assert stopped.returncode == 1
    assert "its machine is not touched" in stopped.stderr
    assert WORKERS[3] not in cluster_state(log).get("deleted", [])
    record(f"node removal: {fault}", step, "exit 1: the node stays in the cluster, its VM is not deleted")
    for key in env:
        monkeypatch.delenv(key)
    done = remove(WORKERS[3])
    assert done.returncode == 0 and f"node {WORKERS[3]} drained and deleted" in done.stdout
    assert cluster_state(log)["deleted"] == [WORKERS[3]]


def test_a_node_the_answering_cluster_does_not_list_is_nothing_to_take_out(log, monkeypatch):
    monkeypatch.setenv("FAKE_OC_NODES", " ".join(WORKERS[:3]))
    done = remove(WORKERS[3])
    assert done.returncode == 0 and "nothing to drain" in done.stderr
    assert not [c for c in calls(log) if c.startswith(("oc adm", "oc delete"))]
    record("node removal: node not listed", "ask the cluster", "nothing to take out: exit 0, the VM goes")


# ---------------------------------------------------------------- the matrix in docs/day2.md


def matrix_table() -> str:
    faults = list(dict.fromkeys(f for f, _ in sorted(MATRIX, key=lambda k: list(MATRIX).index(k))))
    lines = ["| fault | step | outcome |", "|---|---|---|"]
    for fault in faults:
        for (f, step), outcome in MATRIX.items():
            if f == fault:
                lines.append(f"| {f} | {step} | {outcome} |")
    return "\n".join(lines)


def test_the_matrix_in_day2_md_is_the_one_the_tests_find():
    """Runs last in this module (pytest keeps file order): the table under "The fault matrix" in
    docs/day2.md is what the tests above recorded, row for row."""
    if len(MATRIX) < 20:
        pytest.skip("run with the whole module: the matrix is what the tests above record")
    text = DAY2.read_text()
    section = text.split("\n### The fault matrix\n", 1)[1].split("\n#", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
    assert table == matrix_table(), "docs/day2.md's fault matrix differs; the tests find:\n" + matrix_table()
