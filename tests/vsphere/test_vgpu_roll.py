"""vGPU profile changes roll: one VM at a time, each node drained before its power-off.

Against vcsim (the VMs, their power cycle and the vGPU device are vSphere's) and a fake `oc`
on PATH that logs every call and answers like a cluster with one node per VM. The vSphere change
itself is marked in the same log, so the tests read one timeline.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pulumi
import pytest
from conftest import vm_named
from procs import stop
from pulumi.dynamic.dynamic import serialize_provider
from pyVmomi import vim

from components.vsphere import dynamic as d
from components.vsphere import hostops

ROOT = Path(__file__).resolve().parents[2]
KUBECONFIG = "apiVersion: v1\nkind: Config\n# test kubeconfig\n"

# The fake answers as `oc` 4.x does for the calls the provider makes. Each node reports boot id
# boot-1 until its first boot-id read after a vSphere change, as a rebooted kubelet would.
FAKE_OC = '''#!{python}
import os, sys, time
from pathlib import Path
log = Path(os.environ["FAKE_OC_LOG"])
args = sys.argv[1:]
line = " ".join(args)
with log.open("a") as out:
    out.write("oc " + line + "\\n")
kubeconfig = Path(os.environ["KUBECONFIG"])
with Path(str(log) + ".kubeconfig").open("a") as out:
    out.write(oct(kubeconfig.stat().st_mode & 0o777) + " " + kubeconfig.read_text().replace("\\n", "|") + "\\n")
fail = os.environ.get("FAKE_OC_FAIL", "")
if fail and line.startswith(fail):
    sys.stderr.write(os.environ.get("FAKE_OC_ERROR", "error: failed") + "\\n")
    sys.exit(1)
if args[:2] == ["get", "nodes"]:
    print("\\n".join("node/" + n for n in os.environ["FAKE_OC_NODES"].split()))
elif args[0] == "get" and "bootID" in line:
    node = args[1].split("/", 1)[1]
    changed = [l for l in log.read_text().splitlines() if l.startswith("vsphere " + node + " ")]
    reads = [l for l in log.read_text().splitlines() if l.startswith("oc get node/" + node + " ")]
    # before a vSphere change boot-1; the in-process tests mark the change, the server test counts reads
    print("boot-2" if changed or len(reads) > 1 else "boot-1")
elif args[:2] == ["adm", "drain"]:
    time.sleep(float(os.environ.get("FAKE_OC_DRAIN_S", "0")))
'''


@pytest.fixture
def fake_oc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`oc` on PATH; returns the log path. FAKE_OC_NODES lists the cluster's nodes."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    oc = bin_dir / "oc"
    oc.write_text(FAKE_OC.format(python=sys.executable))
    oc.chmod(oc.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "oc.log"
    log.touch()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_OC_LOG", str(log))
    monkeypatch.setenv("FAKE_OC_NODES", "DC0_C0_RP0_VM0 DC0_C0_RP0_VM1.kub1.lab.local bs01")
    return log


@pytest.fixture
def marked_changes(fake_oc: Path, monkeypatch: pytest.MonkeyPatch):
    """Mark each vSphere vGPU change in the oc log, with its start and end times."""
    spans: list[tuple[str, float, float]] = []
    original = hostops.set_vgpu_profile

    def marked(vm, profile):
        start = time.monotonic()
        with fake_oc.open("a") as out:
            out.write(f"vsphere {vm.name} {profile}\n")
        time.sleep(0.3)  # long enough that two unserialised changes would overlap
        original(vm, profile)
        spans.append((vm.name, start, time.monotonic()))

    monkeypatch.setattr(hostops, "set_vgpu_profile", marked)
    return spans


@pytest.fixture
def warnings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the provider warns (in its own process pulumi.log.warn writes to stderr, which the engine shows)."""
    said: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **k: said.append(message))
    return said


@pytest.fixture
def two_workers(si):
    """Two running vcsim VMs with a vGPU each, as day 1 leaves them; put back as found afterwards."""
    vms = [vm_named(si, "DC0_C0_RP0_VM0"), vm_named(si, "DC0_C0_RP0_VM1")]
    for vm in vms:
        assert vm.runtime.powerState == "poweredOn"
        hostops.set_vgpu_profile(vm, "grid_v100-16c")
    yield vms
    for vm in vms:
        hostops.set_vgpu_profile(vm, "")
        if vm.runtime.powerState != "poweredOn":
            vm.PowerOnVM_Task()


def state(conn_props: dict, vm, profile: str, **extra) -> dict:
    """A VmVgpuProfile's properties as the engine hands them over."""
    return {"__provider": "c2VyaWFsaXplZA==", "kind": d._VGPU_PROFILE.kind, **conn_props, "vmId": vm._moId,
            "vmName": vm.name, "profile": profile, "oc": "oc", "nodeName": vm.name, "original": "", **extra}


def oc_calls(log: Path) -> list[str]:
    """The log without the boot-id reads, which poll."""
    return [line for line in log.read_text().splitlines() if "bootID" not in line]


# ---------------------------------------------------------------- one update


def test_a_profile_change_drains_the_node_around_the_power_cycle(si, conn_props, two_workers, fake_oc,
                                                                marked_changes, warnings):
    vm = two_workers[0]
    old = state(conn_props, vm, "grid_v100-16c", kubeconfig=KUBECONFIG)
    new = {**old, "profile": "grid_v100-32c"}
    assert d.VgpuProfileProvider().diff("id", old, new).replaces == []

    result = d.VgpuProfileProvider().update("id", old, new)

    assert hostops.get_vgpu_profile(vm) == "grid_v100-32c" and vm.runtime.powerState == "poweredOn"
    assert result.outs["profile"] == "grid_v100-32c" and result.outs["original"] == ""
    assert oc_calls(fake_oc) == [
        "oc get nodes -o name",
        "oc adm cordon DC0_C0_RP0_VM0",
        "oc adm drain DC0_C0_RP0_VM0 --ignore-daemonsets --delete-emptydir-data --timeout=900s",
        "vsphere DC0_C0_RP0_VM0 grid_v100-32c",
        "oc wait --for=condition=Ready node/DC0_C0_RP0_VM0 --timeout=1200s",
        "oc adm uncordon DC0_C0_RP0_VM0",
    ]
    # Ready is awaited only once the kubelet reports a new boot, not on the status from before the power-off.
    lines = fake_oc.read_text().splitlines()
    boot_reads = [i for i, line in enumerate(lines) if "bootID" in line]
    assert boot_reads[0] < lines.index("oc adm cordon DC0_C0_RP0_VM0")
    assert lines.index("vsphere DC0_C0_RP0_VM0 grid_v100-32c") < boot_reads[-1] < lines.index(
        "oc wait --for=condition=Ready node/DC0_C0_RP0_VM0 --timeout=1200s")
    # oc got the kubeconfig in a file only the provider's user can read, removed afterwards.
    seen = {line.split(" ", 1)[0] for line in Path(f"{fake_oc}.kubeconfig").read_text().splitlines()}
    assert seen == {"0o600"}
    assert KUBECONFIG.replace("\n", "|") in Path(f"{fake_oc}.kubeconfig").read_text()
    assert warnings == []


def test_the_node_may_be_named_by_its_fully_qualified_name(si, conn_props, two_workers, fake_oc, marked_changes):
    vm = two_workers[1]
    old = state(conn_props, vm, "grid_v100-16c", kubeconfig=KUBECONFIG)
    d.VgpuProfileProvider().update("id", old, {**old, "profile": "grid_v100-8c"})
    assert "oc adm cordon DC0_C0_RP0_VM1.kub1.lab.local" in oc_calls(fake_oc)
    assert oc_calls(fake_oc)[-1] == "oc adm uncordon DC0_C0_RP0_VM1.kub1.lab.local"


def test_an_unreachable_cluster_warns_and_changes_vsphere_alone(si, conn_props, two_workers, fake_oc,
                                                               marked_changes, warnings, monkeypatch):
    monkeypatch.setenv("FAKE_OC_FAIL", "get nodes")
    monkeypatch.setenv("FAKE_OC_ERROR", "Unable to connect to the server: dial tcp 127.0.0.1:6443: "
                                        "connect: connection refused")
    vm = two_workers[0]
    old = state(conn_props, vm, "grid_v100-16c", kubeconfig=KUBECONFIG)
    d.VgpuProfileProvider().update("id", old, {**old, "profile": "grid_v100-32c"})
    assert hostops.get_vgpu_profile(vm) == "grid_v100-32c"
    assert oc_calls(fake_oc) == ["oc get nodes -o name", "vsphere DC0_C0_RP0_VM0 grid_v100-32c"]
    assert warnings == [
        f"VM 'DC0_C0_RP0_VM0' ({vm._moId}): the cluster is not reachable (Unable to connect to the server: "
        "dial tcp 127.0.0.1:6443: connect: connection refused); the vGPU profile changes without draining "
        "node DC0_C0_RP0_VM0"]


def test_without_a_kubeconfig_it_warns_and_changes_vsphere_alone(si, conn_props, two_workers, fake_oc,
                                                                marked_changes, warnings):
    vm = two_workers[0]
    old = state(conn_props, vm, "grid_v100-16c")
    d.VgpuProfileProvider().update("id", old, {**old, "profile": "grid_v100-32c"})
    assert oc_calls(fake_oc) == ["vsphere DC0_C0_RP0_VM0 grid_v100-32c"]
    assert warnings == [f"VM 'DC0_C0_RP0_VM0' ({vm._moId}): no kubeconfig for the cluster; the vGPU profile "
                        "changes without draining node DC0_C0_RP0_VM0"]


def test_a_node_the_cluster_does_not_know_is_not_drained(si, conn_props, two_workers, fake_oc, marked_changes,
                                                        warnings, monkeypatch):
    monkeypatch.setenv("FAKE_OC_NODES", "m01 m02 m03")
    vm = two_workers[0]
    old = state(conn_props, vm, "grid_v100-16c", kubeconfig=KUBECONFIG)
    d.VgpuProfileProvider().update("id", old, {**old, "profile": "grid_v100-32c"})
    assert oc_calls(fake_oc) == ["oc get nodes -o name", "vsphere DC0_C0_RP0_VM0 grid_v100-32c"]
    assert warnings == [f"VM 'DC0_C0_RP0_VM0' ({vm._moId}): no node DC0_C0_RP0_VM0 in the cluster; the vGPU "
                        "profile changes without draining"]


def test_a_failed_drain_keeps_the_old_profile_and_uncordons(si, conn_props, two_workers, fake_oc, marked_changes,
                                                           monkeypatch):
    monkeypatch.setenv("FAKE_OC_FAIL", "adm drain")
    monkeypatch.setenv("FAKE_OC_ERROR", "error: cannot delete Pods not managed by ReplicationController, "
                                        "ReplicaSet, Job, DaemonSet or StatefulSet (use --force to override)")
    vm = two_workers[0]
    old = state(conn_props, vm, "grid_v100-16c", kubeconfig=KUBECONFIG)
    with pytest.raises(d.NodeDrainError) as failed:
        d.VgpuProfileProvider().update("id", old, {**old, "profile": "grid_v100-32c"})
    assert str(failed.value) == (
        f"VM 'DC0_C0_RP0_VM0' ({vm._moId}), node DC0_C0_RP0_VM0: oc adm drain failed (oc exit 1): error: cannot "
        "delete Pods not managed by ReplicationController, ReplicaSet, Job, DaemonSet or StatefulSet "
        "(use --force to override)")
    assert hostops.get_vgpu_profile(vm) == "grid_v100-16c" and vm.runtime.powerState == "poweredOn"
    assert oc_calls(fake_oc)[-2:] == [
        "oc adm drain DC0_C0_RP0_VM0 --ignore-daemonsets --delete-emptydir-data --timeout=900s",
        "oc adm uncordon DC0_C0_RP0_VM0"]
    assert marked_changes == []


def test_a_failed_vsphere_change_keeps_the_old_profile_and_uncordons(si, conn_props, two_workers, fake_oc,
                                                                    monkeypatch):
    def refused(vm, profile):
        with fake_oc.open("a") as out:
            out.write(f"vsphere {vm.name} {profile}\n")
        raise vim.fault.InvalidState(msg="the host has no free vGPU of that profile")

    monkeypatch.setattr(hostops, "set_vgpu_profile", refused)
    vm = two_workers[0]
    old = state(conn_props, vm, "grid_v100-16c", kubeconfig=KUBECONFIG)
    with pytest.raises(d.VsphereOperationError, match="wrong state: the host has no free vGPU of that profile"):
        d.VgpuProfileProvider().update("id", old, {**old, "profile": "grid_v100-32c"})
    assert hostops.get_vgpu_profile(vm) == "grid_v100-16c"
    assert oc_calls(fake_oc)[-2:] == ["vsphere DC0_C0_RP0_VM0 grid_v100-32c", "oc adm uncordon DC0_C0_RP0_VM0"]


def test_without_oc_nothing_is_changed(si, conn_props, two_workers, fake_oc, marked_changes):
    vm = two_workers[0]
    old = state(conn_props, vm, "grid_v100-16c", kubeconfig=KUBECONFIG, oc="oc-not-installed")
    with pytest.raises(d.NodeDrainError, match="oc not found as 'oc-not-installed' \\(set gpu-lab:openshift.oc\\)"):
        d.VgpuProfileProvider().update("id", old, {**old, "profile": "grid_v100-32c"})
    assert hostops.get_vgpu_profile(vm) == "grid_v100-16c" and marked_changes == []


def test_a_powered_off_vm_is_changed_without_the_cluster(si, conn_props, two_workers, fake_oc, marked_changes):
    vm = two_workers[0]
    vm.PowerOffVM_Task()
    while vm.runtime.powerState != "poweredOff":
        time.sleep(0.05)
    old = state(conn_props, vm, "grid_v100-16c", kubeconfig=KUBECONFIG)
    d.VgpuProfileProvider().update("id", old, {**old, "profile": "grid_v100-32c"})
    assert hostops.get_vgpu_profile(vm) == "grid_v100-32c" and vm.runtime.powerState == "poweredOff"
    assert oc_calls(fake_oc) == ["vsphere DC0_C0_RP0_VM0 grid_v100-32c"]


@pytest.mark.parametrize("changed", [
    {"password": "rotated-elsewhere"},  # the state holds the old password; the new one logs in
    {"kubeconfig": KUBECONFIG},  # added by an upgrade of gpu-lab: no kubeconfig, oc, nodeName before
    {"oc": "/usr/local/bin/oc", "nodeName": "w01.kub1.lab.local"},
])
def test_an_update_that_keeps_the_profile_changes_nothing(si, conn_props, two_workers, fake_oc, marked_changes,
                                                         changed):
    vm = two_workers[0]
    new = state(conn_props, vm, "grid_v100-16c", kubeconfig=KUBECONFIG)
    old = {**new, **{k: v for k, v in changed.items() if k == "password"}}
    for key in changed:
        if key != "password":
            old.pop(key, None)  # an older state without the key
    diff = d.VgpuProfileProvider().diff("id", old, new)
    assert (diff.changes, diff.replaces) == (True, [])  # an update ...
    d.VgpuProfileProvider().update("id", old, new)
    assert marked_changes == [] and oc_calls(fake_oc) == []  # ... that neither powers off nor drains
    assert hostops.get_vgpu_profile(vm) == "grid_v100-16c"


# ---------------------------------------------------------------- several at once


def test_concurrent_updates_take_turns(si, conn_props, two_workers, fake_oc, marked_changes):
    errors: list[BaseException] = []

    def change(vm, profile):
        old = state(conn_props, vm, "grid_v100-16c", kubeconfig=KUBECONFIG)
        try:
            d.VgpuProfileProvider().update("id", old, {**old, "profile": profile})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=change, args=(vm, "grid_v100-32c")) for vm in two_workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    assert [hostops.get_vgpu_profile(vm) for vm in two_workers] == ["grid_v100-32c"] * 2
    (first, a_start, a_end), (second, b_start, b_end) = sorted(marked_changes, key=lambda span: span[1])
    assert a_end <= b_start, "two vGPU changes overlapped"
    # and the second node was not even cordoned before the first was back and uncordoned
    calls = oc_calls(fake_oc)
    first_node = next(c.split()[-1] for c in calls if c.startswith("oc adm cordon"))
    second_cordon = [i for i, c in enumerate(calls) if c.startswith("oc adm cordon")][1]
    assert calls.index(f"oc adm uncordon {first_node}") < second_cordon


def test_creates_do_not_wait_for_each_other(si, conn_props, monkeypatch):
    """Day 1 attaches every vGPU at once: two creates are inside vSphere together."""
    both_inside = threading.Barrier(2, timeout=20)
    original = hostops.set_vgpu_profile

    def meet(vm, profile):
        both_inside.wait()  # breaks (and fails the create) if the other create cannot get here
        original(vm, profile)

    monkeypatch.setattr(hostops, "set_vgpu_profile", meet)
    vms = [vm_named(si, "DC0_H0_VM0"), vm_named(si, "DC0_H0_VM1")]
    results: list[object] = []
    try:
        threads = [threading.Thread(target=lambda vm=vm: results.append(d.VgpuProfileProvider().create(
            {k: v for k, v in state(conn_props, vm, "grid_v100-16c").items() if k != "original"})))
            for vm in vms]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert len(results) == 2
        assert [hostops.get_vgpu_profile(vm) for vm in vms] == ["grid_v100-16c"] * 2
    finally:
        for vm in vms:
            original(vm, "")


def test_the_provider_server_rolls_concurrent_updates(si, conn_props, two_workers, fake_oc):
    """Through `python -m pulumi.dynamic`, as the engine runs it: its gRPC server takes calls on several
    threads, and two Update calls in flight together still change one VM after the other."""
    import grpc
    from google.protobuf import struct_pb2
    from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["FAKE_OC_DRAIN_S"] = "0.5"  # a slow drain: unserialised updates would interleave
    server = subprocess.Popen([sys.executable, "-m", "pulumi.dynamic"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        port = int(server.stdout.readline())
        errors: list[BaseException] = []

        def update(vm):
            olds, news = struct_pb2.Struct(), struct_pb2.Struct()
            old = state(conn_props, vm, "grid_v100-16c", kubeconfig=KUBECONFIG,
                        __provider=serialize_provider(d._VGPU_PROFILE))
            olds.update(old)
            news.update({**old, "profile": "grid_v100-32c"})
            urn = f"urn:pulumi:test::gpu-lab::pulumi-python:dynamic:Resource::{vm.name}-vgpu"
            try:
                with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                    provider_pb2_grpc.ResourceProviderStub(channel).Update(
                        provider_pb2.UpdateRequest(id="id", urn=urn, olds=olds, news=news), timeout=120)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=update, args=(vm,)) for vm in two_workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=150)
        assert errors == []
    finally:
        stop(server, grace_s=10)
    assert [hostops.get_vgpu_profile(vm) for vm in two_workers] == ["grid_v100-32c"] * 2
    verbs = [(c.split()[2], c.split()[3]) for c in oc_calls(fake_oc) if c.startswith("oc adm")]
    nodes = [node for _, node in verbs]
    first, second = nodes[0], next(n for n in nodes if n != nodes[0])
    assert verbs == [("cordon", first), ("drain", first), ("uncordon", first),
                     ("cordon", second), ("drain", second), ("uncordon", second)]
