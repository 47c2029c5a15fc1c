"""VmVgpuProfile: the vGPU device's life (attached at create, taken off at delete); a profile change
is not its but the node's roll (components/dynamic/roll.py, tests/vsphere/test_node_roll.py).

Against vcsim: creates attach every vGPU at once (day 1 stays parallel), and an update, whatever it
carries, neither powers a VM off nor drains it.
"""

from __future__ import annotations

import threading

import pytest
from conftest import vm_named

from components.dynamic import hostops
from components.dynamic.vgpu import _VGPU_PROFILE, VgpuProfileProvider

KUBECONFIG = "apiVersion: v1\nkind: Config\n# test kubeconfig\n"


def state(conn_props: dict, vm, profile: str, **extra) -> dict:
    """A VmVgpuProfile's properties as the engine hands them over."""
    return {"__provider": "c2VyaWFsaXplZA==", "kind": _VGPU_PROFILE.kind, **conn_props, "vmId": vm._moId,
            "vmName": vm.name, "profile": profile, "oc": "oc", "nodeName": vm.name, "original": "", **extra}



@pytest.mark.parametrize("changed", [
    {"password": "rotated-elsewhere"},  # the state holds the old password; the new one logs in
    {"kubeconfig": KUBECONFIG},  # added by an upgrade of gpu-lab: no kubeconfig, oc, nodeName before
    {"oc": "/usr/local/bin/oc", "nodeName": "w01.kub1.lab.local"},
    {"profile": "grid_v100-8c"},  # never sent by the program (ignore_changes): the roll's, not this one's
])
def test_an_update_writes_nothing(si, conn_props, monkeypatch, changed):
    vm = vm_named(si, "DC0_C0_RP0_VM0")
    hostops.set_vgpu_profile(vm, "grid_v100-16c")
    writes: list[str] = []
    monkeypatch.setattr(hostops, "set_vgpu_profile", lambda vm, profile: writes.append(profile))
    try:
        new = state(conn_props, vm, "grid_v100-16c", kubeconfig=KUBECONFIG)
        old = {**new, **{k: v for k, v in changed.items() if k in ("password", "profile")}}
        for key in changed:
            if key not in ("password", "profile"):
                old.pop(key, None)  # an older state without the key
        diff = VgpuProfileProvider().diff("id", old, new)
        # the profile is not compared: after a roll, a refresh reads the new one into the state
        assert (diff.changes, diff.replaces) == ("profile" not in changed, [])
        result = VgpuProfileProvider().update("id", old, new)
        assert writes == [] and result.outs["original"] == ""
        assert hostops.get_vgpu_profile(vm) == "grid_v100-16c" and vm.runtime.powerState == "poweredOn"
    finally:
        monkeypatch.undo()
        hostops.set_vgpu_profile(vm, "")


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
        threads = [threading.Thread(target=lambda vm=vm: results.append(VgpuProfileProvider().create(
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
