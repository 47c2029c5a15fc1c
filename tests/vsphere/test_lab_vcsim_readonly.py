"""lab-vcsim's Read-only login (simulator/readonly.go), from pyVmomi: what the pull-request preview
job is given instead of vCenter's admin (docs/security.md).

vCenter's Read-only role lets a user log in, browse the inventory and read every property; a method
that needs a privilege the role lacks fails with the fault NoPermission (vSphere Web Services API
reference, "NoPermission"; "Required Privileges for Common Tasks" in vSphere Security).
"""

from __future__ import annotations

import subprocess

import pytest
from lab_vcsim import Vcsim, lab_vcsim_binary, running_lab_vcsim, vm_named
from pyVim.task import WaitForTask
from pyVmomi import vim
from required_tools import missing

from components.dynamic import hostops

READER, READER_PASSWORD = "lab-reader", "reader-only-password"  # test data only


@pytest.fixture(scope="module")
def sims(tmp_path_factory):
    """lab-vcsim with the admin and a Read-only login; (admin, reader)."""
    with running_lab_vcsim(tmp_path_factory, "vcsim-readonly",
                           "-readonly-username", READER, "-readonly-password", READER_PASSWORD) as admin:
        yield admin, Vcsim(admin.server, admin.port, READER, READER_PASSWORD)


def login(sim: Vcsim):
    return hostops.session(sim.server, sim.user, sim.password, port=sim.port, insecure=True)


def test_the_reader_logs_in_and_reads_what_a_preview_reads(sims):
    _, reader = sims
    with login(reader) as si:
        content = si.RetrieveContent()
        datacenter = content.rootFolder.childEntity[0]
        assert datacenter.name == "DC0"
        assert content.searchIndex.FindByInventoryPath("DC0/host/DC0_C0") is not None  # what getComputeCluster asks
        host = hostops.find_host(si, "DC0_C0_H0")
        # the settings the pyvmomi resources read
        assert hostops.get_advanced_option(host, "Net.PVRDMAVmknic") == ""
        assert hostops.get_ruleset_enabled(host, "pvrdma") is False
        assert hostops.get_graphics_type(host) == "shared"
        assert hostops.get_module_options(host, "nmlx5_core") == ""
        assert hostops.is_powered_on(vm_named(si, "DC0_H0_VM0"))
        [dvs] = [s for s in hostops._inventory(si, vim.DistributedVirtualSwitch)]
        assert content.dvSwitchManager.QueryDvsByUuid(dvs.uuid).name == dvs.name
        assert si.CurrentTime() is not None


def _denied(call):
    with pytest.raises(vim.fault.NoPermission) as caught:
        result = call()
        if isinstance(result, vim.Task):  # a refused task method never returns a task
            WaitForTask(result)
    assert caught.value.privilegeId == "System.Modify"
    return caught.value


def test_every_method_that_would_change_the_inventory_answers_no_permission(sims):
    admin, reader = sims
    with login(reader) as si:
        content = si.RetrieveContent()
        datacenter = content.rootFolder.childEntity[0]
        host = hostops.find_host(si, "DC0_C0_H0")
        vm = vm_named(si, "DC0_H0_VM0")
        [dvs] = [s for s in hostops._inventory(si, vim.DistributedVirtualSwitch)]
        fault = _denied(lambda: vm.PowerOffVM_Task())
        assert fault.object == vm
        _denied(lambda: vm.ReconfigVM_Task(vim.vm.ConfigSpec(memoryMB=4096)))
        _denied(lambda: vm.Destroy_Task())
        _denied(lambda: datacenter.vmFolder.CreateFolder("from-a-preview"))
        _denied(lambda: datacenter.networkFolder.CreateDVS_Task(vim.DistributedVirtualSwitch.CreateSpec(
            configSpec=vim.dvs.VmwareDistributedVirtualSwitch.ConfigSpec(name="from-a-preview"))))
        _denied(lambda: dvs.CreateDVPortgroup_Task(vim.dvs.DistributedVirtualPortgroup.ConfigSpec(name="pg")))
        # what the program's pyvmomi resources write
        _denied(lambda: hostops.set_advanced_option(host, "Net.PVRDMAVmknic", "vmk1"))
        _denied(lambda: hostops.set_ruleset_enabled(host, "pvrdma", True))
        _denied(lambda: hostops.set_graphics_type(host, "sharedDirect"))
        _denied(lambda: hostops.set_module_options(host, "nmlx5_core", "pfctx=0x08"))
    # nothing changed, and the admin still may
    with login(admin) as si:
        host = hostops.find_host(si, "DC0_C0_H0")
        assert hostops.get_advanced_option(host, "Net.PVRDMAVmknic") == ""
        assert hostops.get_ruleset_enabled(host, "pvrdma") is False
        assert hostops.get_graphics_type(host) == "shared"
        assert hostops.is_powered_on(vm_named(si, "DC0_H0_VM0"))
        folder = si.RetrieveContent().rootFolder.childEntity[0].vmFolder
        assert "from-a-preview" not in [c.name for c in folder.childEntity]
        created = folder.CreateFolder("by-the-admin")
        WaitForTask(created.Destroy_Task())


def test_a_wrong_reader_password_is_refused(sims):
    _, reader = sims
    with pytest.raises(vim.fault.InvalidLogin):
        with login(Vcsim(reader.server, reader.port, reader.user, "not-its-password")):
            pass


@pytest.mark.parametrize("args, message", [
    (["-readonly-username", READER], "go together"),
    (["-readonly-username", READER, "-readonly-password", "x"], "needs -username"),
    (["-username", "lab-admin", "-password", "a", "-readonly-username", "lab-admin", "-readonly-password", "b"],
     "is also -username"),
])
def test_bad_reader_flags_are_refused(args, message):
    binary = lab_vcsim_binary()
    if binary is None:
        missing("lab-vcsim is not built (build/bin/lab-vcsim): run make simulator")
    done = subprocess.run([binary, "-l", "127.0.0.1:0", *args], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and message in done.stderr, done.stderr
