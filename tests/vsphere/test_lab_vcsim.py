"""lab-vcsim itself (simulator/), from pyVmomi: what it adds to govmomi's simulator, as
pulumi-vsphere and the program's pyvmomi providers use it, and how it starts and fails.

The facts encoded here are vCenter's (vSphere Web Services API reference): a VMware switch's
type is VmwareDistributedVirtualSwitch, its members are the hosts given at creation, config.host
lists each member's uplinks, CreateDVPortgroup_Task returns the new port group, a VMkernel NIC on
a switch port needs its host to be a member.
"""

from __future__ import annotations

import concurrent.futures
import socket
import subprocess

import pytest
from lab_vcsim import lab_vcsim_binary, vm_named
from pyVim.task import WaitForTask
from pyVmomi import vim, vmodl

from components.dynamic import hostops

WORKERS = ("DC0_C0_H0", "DC0_C0_H1", "DC0_C0_H2")


@pytest.fixture()
def binary(vcsim) -> str:
    return lab_vcsim_binary()


def datacenter(si):
    return si.RetrieveContent().rootFolder.childEntity[0]


def member_spec(host, operation: str, *uplinks: str):
    return vim.dvs.HostMember.ConfigSpec(
        operation=operation, host=host,
        backing=vim.dvs.HostMember.PnicBacking(pnicSpec=[vim.dvs.HostMember.PnicSpec(pnicDevice=u) for u in uplinks]))


@pytest.fixture()
def switch(si):
    """A switch created with the cluster's three hosts as members (vmnic1 each); destroyed after."""
    hosts = [hostops.find_host(si, name) for name in WORKERS]
    spec = vim.DistributedVirtualSwitch.CreateSpec(
        productInfo=vim.dvs.ProductSpec(version="6.6.0"),
        configSpec=vim.dvs.VmwareDistributedVirtualSwitch.ConfigSpec(
            name="test-roce-vds", maxMtu=9000, host=[member_spec(h, "add", "vmnic1") for h in hosts]))
    task = datacenter(si).networkFolder.CreateDVS_Task(spec)
    WaitForTask(task)
    dvs = task.info.result
    yield dvs
    for host in hosts:
        for nic in host.config.network.vnic:
            if nic.spec.distributedVirtualPort and nic.spec.distributedVirtualPort.switchUuid == dvs.uuid:
                host.configManager.networkSystem.RemoveVirtualNic(nic.device)
    WaitForTask(dvs.Destroy_Task())


# ---------------------------------------------------------------- the switch


def test_a_new_switch_is_a_vmware_switch_with_the_members_given_at_creation(si, switch):
    assert isinstance(switch, vim.dvs.VmwareDistributedVirtualSwitch)
    members = {m.config.host.name: [p.pnicDevice for p in m.config.backing.pnicSpec] for m in switch.config.host}
    assert members == {name: ["vmnic1"] for name in WORKERS}
    assert sorted(h.name for h in switch.summary.hostMember) == list(WORKERS)
    assert switch.config.maxMtu == 9000
    assert switch.config.productInfo.version == "6.6.0"  # pulumi-vsphere reads the version here
    assert switch.config.configVersion == "1"


def test_query_dvs_by_uuid(si, switch):
    manager = si.RetrieveContent().dvSwitchManager
    assert manager.QueryDvsByUuid(switch.uuid) == switch
    with pytest.raises(vim.fault.NotFound):
        manager.QueryDvsByUuid("00 00 00 00 00 00 00 00-00 00 00 00 00 00 00 00")


def test_create_dv_portgroup_returns_the_new_port_group(si, switch):
    task = switch.CreateDVPortgroup_Task(vim.dvs.DistributedVirtualPortgroup.ConfigSpec(
        name="test-rdma", type="earlyBinding", numPorts=8))
    WaitForTask(task)
    portgroup = task.info.result
    assert isinstance(portgroup, vim.dvs.DistributedVirtualPortgroup)
    assert portgroup.name == "test-rdma" and portgroup.config.distributedVirtualSwitch == switch
    assert portgroup in switch.portgroup
    # Every member host sees it, as vCenter shows a switch's port groups on its hosts.
    assert all(portgroup in hostops.find_host(si, name).network for name in WORKERS)


def test_reconfigure_applies_settings_edits_uplinks_and_removes_members(si, switch):
    host = hostops.find_host(si, "DC0_C0_H0")
    spec = vim.dvs.VmwareDistributedVirtualSwitch.ConfigSpec(
        configVersion=switch.config.configVersion, maxMtu=1500,
        host=[member_spec(host, "edit", "vmnic1", "vmnic2"),
              member_spec(hostops.find_host(si, "DC0_C0_H2"), "remove")])
    WaitForTask(switch.ReconfigureDvs_Task(spec))
    assert switch.config.maxMtu == 1500 and switch.config.configVersion == "2"
    members = {m.config.host.name: [p.pnicDevice for p in m.config.backing.pnicSpec] for m in switch.config.host}
    assert members == {"DC0_C0_H0": ["vmnic1", "vmnic2"], "DC0_C0_H1": ["vmnic1"]}
    # A spec written against an older version is refused, as vCenter does.
    stale = vim.dvs.VmwareDistributedVirtualSwitch.ConfigSpec(configVersion="1", maxMtu=9000)
    with pytest.raises(vim.fault.ConcurrentAccess):
        WaitForTask(switch.ReconfigureDvs_Task(stale))


# ---------------------------------------------------------------- VMkernel NICs on the switch


def rdma_nic(switch, portgroup, address: str, mtu: int = 9000):
    return vim.host.VirtualNic.Specification(
        distributedVirtualPort=vim.dvs.PortConnection(switchUuid=switch.uuid, portgroupKey=portgroup.key),
        ip=vim.host.IpConfig(dhcp=False, ipAddress=address, subnetMask="255.255.255.0"), mtu=mtu,
        netStackInstanceKey="defaultTcpipStack")


def test_vmkernel_nic_on_a_switch_port(si, switch):
    task = switch.CreateDVPortgroup_Task(vim.dvs.DistributedVirtualPortgroup.ConfigSpec(name="test-vmk", type="earlyBinding"))
    WaitForTask(task)
    portgroup = task.info.result
    host, other = hostops.find_host(si, "DC0_C0_H1"), hostops.find_host(si, "DC0_C0_H0")
    network = host.configManager.networkSystem

    device = network.AddVirtualNic("", rdma_nic(switch, portgroup, "203.0.113.24"))
    [nic] = [n for n in host.config.network.vnic if n.device == device]
    assert device.startswith("vmk") and nic.spec.mtu == 9000 and nic.spec.ip.ipAddress == "203.0.113.24"
    assert nic.spec.distributedVirtualPort.portgroupKey == portgroup.key and nic.spec.mac
    assert device not in [n.device for n in other.config.network.vnic]  # that host only

    network.UpdateVirtualNic(device, vim.host.VirtualNic.Specification(mtu=4200))
    [nic] = [n for n in host.config.network.vnic if n.device == device]
    assert nic.spec.mtu == 4200 and nic.spec.ip.ipAddress == "203.0.113.24"  # unset fields kept

    manager = host.configManager.virtualNicManager
    manager.SelectVnicForNicType("vmotion", device)
    selected = {c.nicType: list(c.selectedVnic) for c in manager.info.netConfig}
    assert selected["vmotion"] == [f"vmotion.key-vim.host.VirtualNic-{device}"]
    assert not {c.nicType: list(c.selectedVnic) for c in other.configManager.virtualNicManager.info.netConfig}["vmotion"]

    # A member whose VMkernel NIC is on the switch cannot leave it.
    with pytest.raises(vim.fault.ResourceInUse):
        WaitForTask(switch.ReconfigureDvs_Task(vim.dvs.VmwareDistributedVirtualSwitch.ConfigSpec(
            configVersion=switch.config.configVersion, host=[member_spec(host, "remove")])))

    network.RemoveVirtualNic(device)
    assert device not in [n.device for n in host.config.network.vnic]
    assert not {c.nicType: list(c.selectedVnic) for c in manager.info.netConfig}["vmotion"]
    with pytest.raises(vim.fault.NotFound):
        network.RemoveVirtualNic(device)


def test_vmkernel_nic_needs_its_host_to_be_a_member(si, switch):
    task = switch.CreateDVPortgroup_Task(vim.dvs.DistributedVirtualPortgroup.ConfigSpec(name="test-vmk2", type="earlyBinding"))
    WaitForTask(task)
    outsider = hostops.find_host(si, "DC0_H0")
    with pytest.raises(vmodl.fault.InvalidArgument) as refused:
        outsider.configManager.networkSystem.AddVirtualNic("", rdma_nic(switch, task.info.result, "203.0.113.9"))
    assert "not a member" in refused.value.msg


# ---------------------------------------------------------------- references and waits


def test_a_reference_typed_as_a_supertype_finds_the_object(si):
    cluster = datacenter(si).hostFolder.childEntity[1]
    assert isinstance(cluster, vim.ClusterComputeResource)
    # pulumi-vsphere asks for a cluster's inventory path as a ComputeResource, as vCenter allows.
    assert vim.ComputeResource(cluster._moId, si._stub).name == cluster.name


def test_concurrent_task_waits_on_one_session_all_finish(si):
    # govmomi (pulumi-vsphere) waits for each task with its own filter on the session's collector,
    # from as many goroutines as tasks run; here as many threads each wait for their own task.
    vms = [vm for vm in hostops._inventory(si, vim.VirtualMachine)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        tasks = [pool.submit(lambda vm, i: WaitForTask(vm.ReconfigVM_Task(vim.vm.ConfigSpec(annotation=f"wait {i}"))),
                             vms[i % len(vms)], i) for i in range(16)]
        assert [t.result(timeout=60) for t in tasks] == ["success"] * 16


def test_a_task_is_named_by_the_method_that_started_it(si):
    # TaskInfo.name is the method's name, as vCenter gives it. pyVim's WaitForTask reads
    # info.name.info.name of a task it finds running: a name pyVmomi does not know
    # (govmomi's simulator says PowerVm_Task for every power operation) fails that wait.
    vm = vm_named(si, "DC0_H0_VM1")
    names = []
    for start in (vm.PowerOffVM_Task, vm.PowerOnVM_Task,
                  lambda: vm.ReconfigVM_Task(vim.vm.ConfigSpec(annotation="named task"))):
        task = start()
        names.append(task.info.name.info.wsdlName)
        assert WaitForTask(task) == "success"
    assert names == ["PowerOffVM_Task", "PowerOnVM_Task", "ReconfigVM_Task"]
    assert vm.runtime.powerState == "poweredOn"


def test_a_call_it_does_not_implement_names_the_method(si):
    network = hostops.find_host(si, "DC0_H0").configManager.networkSystem
    with pytest.raises(vmodl.fault.MethodNotFound) as missing:
        network.RefreshNetworkSystem()
    assert missing.value.method == "RefreshNetworkSystem"


# ---------------------------------------------------------------- starting


def run(binary: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


def test_an_unknown_flag_is_refused(binary):
    done = run(binary, "-hosts", "3")
    assert done.returncode == 2
    assert "lab-vcsim: flag provided but not defined: -hosts" in done.stderr
    assert "-standalone-host" in done.stderr  # the usage lists vcsim's flags


def test_a_port_in_use_is_refused(binary):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run(binary, "-l", f"127.0.0.1:{port}")
    assert done.returncode == 1
    assert done.stderr.strip() == f"lab-vcsim: cannot listen on 127.0.0.1:{port}: address already in use"


def test_only_loopback_addresses_are_served(binary):
    done = run(binary, "-l", "192.0.2.10:8989")
    assert done.returncode == 2
    assert '"192.0.2.10" is not a loopback address' in done.stderr


def test_a_bad_method_delay_is_refused(binary):
    done = run(binary, "-method-delay", "CloneVM_Task:soon")
    assert done.returncode == 2
    assert "-method-delay" in done.stderr and "CloneVM_Task:soon" in done.stderr
