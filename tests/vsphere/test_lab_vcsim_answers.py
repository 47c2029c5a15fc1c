"""lab-vcsim answers as vCenter does where govmomi's simulator does not, for the calls a node roll
and the vSphere provider make (simulator/vcenter_answers.go):

- UpgradeVM_Task to the version the VM has succeeds and changes nothing (the simulator answers
  AlreadyUpgradedFault, vmware/govmomi#3777; terraform-provider-vsphere calls it after every
  reconfigure of a VM whose hardware_version is set);
- a port group rename renames it in the inventory (the simulator changes config.name only);
- destroying a switch takes its port groups with it, the uplink port group `<switch>-DVUplinks-<n>`
  included (the simulator left it on the hosts).
"""

from __future__ import annotations

import pytest
from lab_vcsim import vm_named
from pyVim.task import WaitForTask
from pyVmomi import vim
from test_lab_vcsim import WORKERS, datacenter, member_spec

from components.dynamic import hostops


def names_of_networks(si) -> set[str]:
    return {n.name for n in hostops._inventory(si, vim.Network)}


@pytest.fixture()
def stopped_vm(si):
    vm = vm_named(si, "DC0_H0_VM1")
    hostops.power_off(vm)
    yield vm
    hostops.power_on(vm)


def test_an_upgrade_to_the_version_the_vm_has_succeeds_and_changes_nothing(si, stopped_vm):
    version = stopped_vm.config.version
    WaitForTask(stopped_vm.UpgradeVM_Task(version=version))
    assert stopped_vm.config.version == version
    # a real upgrade still upgrades, and a lower version is still refused
    number = int(version.removeprefix("vmx-"))
    WaitForTask(stopped_vm.UpgradeVM_Task(version=f"vmx-{number + 1:02d}"))
    assert stopped_vm.config.version == f"vmx-{number + 1:02d}"
    with pytest.raises(vim.fault.AlreadyUpgraded):
        WaitForTask(stopped_vm.UpgradeVM_Task(version=version))


def test_an_upgrade_of_a_running_vm_is_refused_even_to_its_own_version(si):
    vm = vm_named(si, "DC0_H0_VM0")
    assert vm.runtime.powerState == "poweredOn"
    with pytest.raises(vim.fault.InvalidPowerState):
        WaitForTask(vm.UpgradeVM_Task(version=vm.config.version))


def test_a_port_group_rename_renames_it_in_the_inventory(si):
    hosts = [hostops.find_host(si, name) for name in WORKERS]
    spec = vim.DistributedVirtualSwitch.CreateSpec(configSpec=vim.dvs.VmwareDistributedVirtualSwitch.ConfigSpec(
        name="rename-vds", host=[member_spec(h, "add", "vmnic1") for h in hosts]))
    task = datacenter(si).networkFolder.CreateDVS_Task(spec)
    WaitForTask(task)
    dvs = task.info.result
    try:
        made = dvs.CreateDVPortgroup_Task(vim.dvs.DistributedVirtualPortgroup.ConfigSpec(
            name="lab-rdma", type="earlyBinding"))
        WaitForTask(made)
        pg = made.info.result
        WaitForTask(pg.ReconfigureDVPortgroup_Task(vim.dvs.DistributedVirtualPortgroup.ConfigSpec(
            name="lab-rdma-2", configVersion=pg.config.configVersion)))
        assert (pg.name, pg.config.name) == ("lab-rdma-2", "lab-rdma-2")
        assert "lab-rdma-2" in dvs.summary.portgroupName and "lab-rdma" not in dvs.summary.portgroupName
        assert "lab-rdma-2" in names_of_networks(si) and "lab-rdma" not in names_of_networks(si)
        # a reconfigure that leaves the name out keeps it (the simulator blanked config.name)
        WaitForTask(pg.ReconfigureDVPortgroup_Task(vim.dvs.DistributedVirtualPortgroup.ConfigSpec(
            numPorts=16, configVersion=pg.config.configVersion)))
        assert (pg.name, pg.config.name) == ("lab-rdma-2", "lab-rdma-2")
    finally:
        WaitForTask(dvs.Destroy_Task())


def test_a_destroyed_switch_takes_its_uplink_port_group_off_the_hosts(si):
    hosts = [hostops.find_host(si, name) for name in WORKERS]
    before = {h.name: {n.name for n in h.network} for h in hosts}
    spec = vim.DistributedVirtualSwitch.CreateSpec(configSpec=vim.dvs.VmwareDistributedVirtualSwitch.ConfigSpec(
        name="gone-vds", host=[member_spec(h, "add", "vmnic1") for h in hosts]))
    task = datacenter(si).networkFolder.CreateDVS_Task(spec)
    WaitForTask(task)
    dvs = task.info.result
    uplinks = [pg.name for pg in dvs.portgroup if pg.name.startswith("gone-vds-DVUplinks")]
    assert len(uplinks) == 1
    assert all(uplinks[0] in {n.name for n in h.network} for h in hosts)
    WaitForTask(dvs.Destroy_Task())
    assert {h.name: {n.name for n in h.network} for h in hosts} == before
    assert not [n for n in names_of_networks(si) if n.startswith("gone-vds")]
