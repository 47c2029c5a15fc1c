"""The program under Pulumi mocks with the test lab (tests/builders.py): the vSphere half."""

import dataclasses

import builders
import pytest

from components.config import load_lab
from components.dynamic.provider import CLUSTER_CONFIG, RETIRED_INPUTS, VCENTER_CONFIG
from tools.mockrun import run_program

VDS = "vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch"
PORT_GROUP = "vsphere:index/distributedPortGroup:DistributedPortGroup"
VNIC = "vsphere:index/vnic:Vnic"
VM = "vsphere:index/virtualMachine:VirtualMachine"
ANTI_AFFINITY = "vsphere:index/computeClusterVmAntiAffinityRule:ComputeClusterVmAntiAffinityRule"
DYNAMIC = "pulumi-python:dynamic:Resource"
WORKER_HOSTS = ["esx01", "esx02", "esx03", "esx04"]


@pytest.fixture(scope="module")
def lab():
    return run_program(builders.lab_stack())


def dynamic_of(run, kind):
    return [r for r in run.of_type(DYNAMIC) if r.plain().get("kind") == kind]


def test_one_vds_with_the_roce_ports_as_its_only_uplinks(lab):
    (vds,) = lab.of_type(VDS)
    props = vds.plain()
    assert vds.parent_name == "roce"
    assert props["maxMtu"] == 9000
    assert props["lacpEnabled"] is False
    assert props["uplinks"] == props["activeUplinks"] == ["rdma-uplink1"]
    assert props["standbyUplinks"] == []
    assert [(h["hostSystemId"], h["devices"]) for h in props["hosts"]] == [
        (f"host-{h}", ["vmnic4"]) for h in WORKER_HOSTS]


def test_rdma_and_management_port_groups(lab):
    groups = {r.plain()["name"]: r.plain() for r in lab.of_type(PORT_GROUP)}
    assert set(groups) == {"lab-rdma", "lab-management"}
    assert groups["lab-rdma"]["vlanId"] == 0
    assert groups["lab-management"]["vlanId"] == 7
    assert {g["distributedVirtualSwitchUuid"] for g in groups.values()} == {"roce-vds-id"}


def test_a_vmk_per_worker_host_on_the_rdma_port_group(lab):
    vnics = {r.name: r.plain() for r in lab.of_type(VNIC)}
    assert sorted(vnics) == [f"roce-{h}-vmk" for h in WORKER_HOSTS]
    for i, host in enumerate(WORKER_HOSTS):
        v = vnics[f"roce-{host}-vmk"]
        assert v["host"] == f"host-{host}"
        assert v["ipv4"] == {"ip": f"192.168.0.{24 + i}", "netmask": "255.255.255.0"}
        assert v["mtu"] == 9000
        assert v["distributedPortGroup"] == "roce-rdma-pg-id"


@pytest.mark.parametrize("kind,expected", [
    ("vsphere-host-advanced-option", {"key": "Net.PVRDMAVmknic", "value": "vmk1"}),
    ("vsphere-host-firewall-ruleset", {"ruleset": "pvrdma", "enabled": True}),
    ("vsphere-host-graphics", {"graphicsType": "sharedDirect"}),
    ("vsphere-host-module-options", {"module": "nmlx5_core", "options": "pfctx=0x08 pfcrx=0x08 trust_state=2"}),
])
def test_each_worker_host_gets_the_settings_pulumi_vsphere_cannot_express(lab, kind, expected):
    found = dynamic_of(lab, kind)
    assert sorted(r.plain()["hostName"] for r in found) == WORKER_HOSTS
    for r in found:
        assert r.parent_name == "roce"
        assert {k: r.plain()[k] for k in expected} == expected
        assert not set(r.plain()) & set(RETIRED_INPUTS)  # how to reach vCenter is its provider's


def test_dynamic_resources_have_providers_holding_only_the_credentials_they_need(lab):
    # The engine would configure the default pulumi-python provider with every key of the stack
    # config, secrets included, and send those inputs with each resource on every policy-pack
    # request (pulumi/pulumi pkg/resource/deploy/target.go, Target.GetPackageConfig). Each explicit
    # provider holds what its resources need, once: the state keeps no copy per host setting or node.
    providers = {p.name: p for p in lab.of_type("pulumi:providers:pulumi-python")}
    assert set(providers) == {"pyvmomi", "node-rolls", "lab-guard"}  # the guard (components/dynamic/guard.py) too
    vcenter, cluster = set(VCENTER_CONFIG.values()), set(CLUSTER_CONFIG.values())
    assert set(providers["pyvmomi"].plain()) == vcenter
    assert set(providers["node-rolls"].plain()) == vcenter | cluster
    assert providers["lab-guard"].inputs == {}
    assert providers["pyvmomi"].secret_paths() == [VCENTER_CONFIG["password"]]
    assert sorted(providers["node-rolls"].secret_paths()) == sorted([VCENTER_CONFIG["password"],
                                                                     CLUSTER_CONFIG["kubeconfig"]])
    assert providers["node-rolls"].plain()[CLUSTER_CONFIG["oc"]] == "oc"
    dynamic = [r for r in lab.of_type(DYNAMIC) if r.name != "lab-identity"]
    assert len(dynamic) == 23  # 4 hosts x 4 settings, 7 node rolls (bootstrap does not roll; a roll holds the vGPU)
    for r in dynamic:
        expected = providers["node-rolls" if r.plain()["kind"] == "vsphere-vm-roll" else "pyvmomi"]
        assert (r.provider_name, r.provider) == (expected.name, f"{expected.urn}::{expected.name}-id"), r.name
        assert not set(r.plain()) & set(RETIRED_INPUTS), r.name


def test_vms_sizes_nics_and_placement(lab):
    vms = {r.plain()["name"]: r for r in lab.of_type(VM)}
    assert sorted(vms) == ["bs01", "m01", "m02", "m03",
                           "w01", "w02", "w03", "w04"]
    bootstrap = vms["bs01"].plain()
    assert (bootstrap["numCpus"], bootstrap["memory"], bootstrap["disks"][0]["size"]) == (4, 16 * 1024, 100)
    assert bootstrap["hostSystemId"] == "host-esx00"
    for i, name in enumerate(["w01", "w02", "w03", "w04"]):
        vm = vms[name].plain()
        assert vms[name].parent_name == "vms"
        assert (vm["numCpus"], vm["memory"], vm["disks"][0]["size"]) == (4, 24 * 1024, 50)
        assert vm["memoryReservation"] == vm["memory"] and vm["memoryReservationLockedToMax"] is True
        assert vm["hostSystemId"] == f"host-{WORKER_HOSTS[i]}"
        assert [n["adapterType"] for n in vm["networkInterfaces"]] == ["vmxnet3", "vmxnet3vrdma"]
        assert vm["networkInterfaces"][1]["networkId"] == "roce-rdma-pg-id"
        # OpenShift guests configure themselves from ignition: no customization, static
        # addresses (the RDMA one included) as kernel arguments, all of it secret.
        assert "customize" not in vm["clone"]
        assert f"ip=192.168.0.5{i + 1}:" in vm["extraConfig"]["guestinfo.afterburn.initrd.network-kargs"]
        assert "extraConfig" in vms[name].secret_paths()
        assert "hardwareVersion" not in vm  # the template's version stays
    for name in ["m01", "m02", "m03"]:
        vm = vms[name].plain()
        assert (vm["numCpus"], vm["memory"], vm["disks"][0]["size"]) == (4, 16 * 1024, 50)
        assert vm["hostSystemId"] == "host-esx00"
        assert [n["adapterType"] for n in vm["networkInterfaces"]] == ["vmxnet3"]
        assert vm["networkInterfaces"][0]["networkId"] == "network-VM Network"
        assert "memoryReservation" not in vm


def test_each_workers_roll_gives_its_vm_the_vgpu(lab):
    """The clone cannot attach a vGPU: the roll's create does, on a VM the same deployment creates (newVm),
    and holds the profile from then on. No vGPU resource of its own (an engine step and its checkpoints
    fewer per worker)."""
    assert dynamic_of(lab, "vsphere-vm-vgpu") == []
    rolls = _rolls_by_node(lab)
    workers = {name: r.plain() for name, r in rolls.items() if r.plain()["role"] == "worker"}
    assert sorted(workers) == ["w01", "w02", "w03", "w04"]
    assert {w["vgpuProfile"] for w in workers.values()} == {"grid_v100-16c"}
    assert all(w["vmId"].startswith("vm-") and w["newVm"] is True for w in workers.values())
    # read at create only: a later `up` sends False, and the engine keeps what the create had
    assert all(r.ignore_changes == ["newVm"] for r in rolls.values())
    running = _rolls_by_node(run_program(builders.lab_stack(), deployed=lab))
    assert {r.plain()["newVm"] for r in running.values()} == {False}


def _rolls_by_node(run):
    return {r.plain()["vmName"]: r for r in dynamic_of(run, "vsphere-vm-roll")}


def _waits_for_roll(roll) -> list[str]:
    return [u for u in roll.dependencies if u.endswith("-roll")]


def test_every_running_node_rolls_after_the_previous_one(lab):
    """On a lab that runs, one NodeRoll per control-plane and worker VM, each depending on the previous
    node's, so the engine changes one node at a time and none after a failed one (components/dynamic/roll.py)."""
    running = run_program(builders.lab_stack(), deployed=lab)
    rolls = dynamic_of(running, "vsphere-vm-roll")
    order = [r.plain()["vmName"] for r in rolls]
    assert order == ["m01", "m02", "m03", "w01", "w02", "w03", "w04"]
    by_name = _rolls_by_node(running)
    for before, node in zip(order, order[1:], strict=False):
        assert _waits_for_roll(by_name[node]) == [by_name[before].urn]
    assert _waits_for_roll(by_name["m01"]) == []


def test_a_node_this_deployment_creates_joins_no_roll_chain(lab):
    # its VM is made as the stack says: nothing to roll, so it neither waits for the running nodes nor
    # makes them wait (a new lab's rolls all start as their VMs are ready)
    assert all(_waits_for_roll(r) == [] for r in _rolls_by_node(lab).values())
    without_w03 = dataclasses.replace(lab, resources=[r for r in lab.resources if r.name != "vms-w03"])
    by_name = _rolls_by_node(run_program(builders.lab_stack(), deployed=without_w03))
    assert _waits_for_roll(by_name["w03"]) == []
    assert _waits_for_roll(by_name["w04"]) == [by_name["w02"].urn]


def test_each_roll_holds_what_the_stack_asks_of_its_node(lab):
    by_name = _rolls_by_node(lab)
    for name in ("w01", "w02", "w03", "w04"):
        roll = by_name[name]
        plain = roll.plain()
        assert (plain["cpus"], plain["memoryMb"], plain["memoryReservationMb"], plain["vgpuProfile"]) == (
            4, 24 * 1024, 24 * 1024, "grid_v100-16c")
        assert (plain["role"], plain["poweredOn"], plain["drainTimeoutS"]) == ("worker", True, 900)
        assert not set(plain) & set(RETIRED_INPUTS)  # its provider reaches vCenter and the cluster
        assert roll.deleted_with == next(v.urn for v in lab.of_type(VM) if v.name == f"vms-{name}")
    assert by_name["m01"].plain().get("memoryReservationMb") is None and by_name["m01"].plain()["vgpuProfile"] == ""


def test_the_vm_leaves_what_rolls_to_the_roll(lab):
    from components.vsphere.provider_facts import FIRST_BOOT_INPUTS, VM_REBOOT_KEYS
    from components.vsphere.vms import CONSTANT_REBOOT_INPUTS, ROLLED_VM_INPUTS

    vms = {r.plain()["name"]: r for r in lab.of_type(VM)}
    for name in ("m01", "w01"):
        assert set(vms[name].ignore_changes) == set(FIRST_BOOT_INPUTS) | {
            "numCpus", "memory", "memoryReservation", "memoryReservationLockedToMax", "hardwareVersion"}
    assert set(vms["bs01"].ignore_changes) == set(FIRST_BOOT_INPUTS)
    # every input on the provider's reboot list that a VM sets is read at first boot only, rolled, or a constant
    for vm in vms.values():
        on_list = set(vm.plain()) & set(VM_REBOOT_KEYS)
        assert on_list <= set(FIRST_BOOT_INPUTS) | set(ROLLED_VM_INPUTS) | set(CONSTANT_REBOOT_INPUTS), vm.name


def test_workers_spread_by_one_anti_affinity_rule(lab):
    (rule,) = lab.of_type(ANTI_AFFINITY)
    assert sorted(rule.plain()["virtualMachineIds"]) == [f"vms-w0{i}-id" for i in (1, 2, 3, 4)]


def test_the_plan_alone_places_the_workers(lab_config):
    """Each worker's host and the kind of DRS rule come from one decision (components/vsphere/plan.py,
    worker_placement); LabVms reads it from LabVmsPlan, never from the section."""
    derived = load_lab(builders.sections(lab_config)).plan.lab_vms
    lab_config["gpu-lab:vsphere"]["workers"]["hosts"] = ["esx04", "esx04", "esx01", "esx02"]
    pinned = load_lab(builders.sections(lab_config)).plan.lab_vms
    assert derived is not None and pinned is not None
    assert derived.worker_placement == "spread" and pinned.worker_placement == "pinned"
    assert [vm.host for vm in derived.vms if vm.role == "worker"] == WORKER_HOSTS
    assert [vm.host for vm in pinned.vms if vm.role == "worker"] == ["esx04", "esx04", "esx01", "esx02"]


def test_outputs_per_host_and_per_vm(lab):
    assert lab.outputs["hosts"]["esx03"] == {"vmk": "vmk1", "address": "192.168.0.26"}
    assert lab.outputs["vms"]["w02"] == {
        "role": "worker", "host": "esx02", "managementAddress": "172.16.7.52",
        "rdmaAddress": "192.168.0.52", "vgpuProfile": "grid_v100-16c"}


@pytest.fixture
def vsphere_config(lab_config):
    """The lab stack without the sections that reference VMs by name."""
    return {k: v for k, v in lab_config.items() if k not in ("gpu-lab:openshift", "gpu-lab:addons")}


def test_more_workers_than_hosts_get_satisfiable_rules(vsphere_config):
    lab_config = vsphere_config
    vs = lab_config["gpu-lab:vsphere"]
    vs["workers"]["names"] = [f"w{i:02d}" for i in range(10)]
    run = run_program(lab_config)
    placement = {f"{r.name}-id": r.plain()["hostSystemId"] for r in run.of_type(VM)}  # mock ids
    groups = [sorted(r.plain()["virtualMachineIds"]) for r in run.of_type(ANTI_AFFINITY)]
    assert sorted(len(g) for g in groups) == [2, 4, 4]  # never more VMs in a rule than hosts
    for group in groups:  # and the initial placement already satisfies each rule
        assert len({placement[vm] for vm in group}) == len(group)
    hosts = [r.plain()["hostSystemId"] for r in run.of_type(VM) if r.plain()["name"].startswith("w")]
    assert hosts.count("host-esx01") == 3 and hosts.count("host-esx04") == 2


def test_without_openshift_the_rdma_address_comes_from_customization(vsphere_config):
    run = run_program(vsphere_config)
    for i in (1, 2, 3, 4):
        vm = next(r.plain() for r in run.of_type(VM) if r.plain()["name"] == f"w0{i}")
        assert vm["clone"]["customize"]["networkInterfaces"] == [
            {}, {"ipv4Address": f"192.168.0.5{i}", "ipv4Netmask": 24}]
        assert "extraConfig" not in vm
    assert "bs01" not in {r.plain()["name"] for r in run.of_type(VM)}  # no OpenShift, no bootstrap VM


def test_extra_config_skips_guest_customization(vsphere_config):
    lab_config = vsphere_config
    lab_config["gpu-lab:vsphere"]["workers"]["cloudInitUserData"] = "#cloud-config\nhostname: x\n"
    run = run_program(lab_config)
    worker = next(r.plain() for r in run.of_type(VM) if r.plain()["name"] == "w01")
    assert worker["extraConfig"]["guestinfo.userdata.encoding"] == "base64"
    assert "customize" not in worker["clone"]


def test_invalid_config_registers_nothing(lab_config):
    lab_config["gpu-lab:vsphere"]["vds"]["lacp"] = True
    with pytest.raises(Exception) as err:
        run_program(lab_config)
    assert "vsphere.vds.lacp" in str(err.value)


def test_missing_vcenter_password_is_named(lab_config):
    from tools.mockrun import placeholder_secrets
    secrets = placeholder_secrets(lab_config)
    secrets["vsphere:password"] = None
    with pytest.raises(Exception) as err:
        run_program(lab_config, secrets=secrets)
    assert "vsphere:password is not set" in str(err.value)
    assert "pulumi config set --secret vsphere:password" in str(err.value)


def test_hosts_named_by_fqdn_address_or_capitals_give_parseable_resource_names():
    config = builders.lab_stack()
    names = ["esx24.lab.example.com", "172.16.31.25", "ESX03", "fd00:31::27"]
    for host, name in zip(config["gpu-lab:vsphere"]["workerHosts"], names, strict=True):
        host["name"] = name
    config["gpu-lab:vsphere"]["managementHost"] = "esx21.lab.example.com"
    run = run_program(config)
    # '::' separates a URN's parts: an IPv6 host must not put it into a logical name.
    assert all("::" not in r.name for r in run.resources)
    vnics = sorted(r.name for r in run.of_type(VNIC))
    assert vnics == ["roce-172.16.31.25-vmk", "roce-ESX03-vmk", "roce-esx24.lab.example.com-vmk",
                     "roce-fd00-31--27-vmk"]
    # the pyvmomi resources and the look-ups still use the inventory name itself
    assert sorted(r.plain()["hostName"] for r in dynamic_of(run, "vsphere-host-graphics")) == sorted(names)
    vms = {r.plain()["name"]: r.plain() for r in run.of_type(VM)}
    assert vms["w01"]["hostSystemId"] == "host-esx24.lab.example.com"
    assert vms["m01"]["hostSystemId"] == "host-esx21.lab.example.com"
# pulumi-vsphere connects to https://<vsphereServer>/sdk (terraform-provider-vsphere,
# vsphere/config.go), so `host:port` there is a vCenter on another port; the pyvmomi resources
# must reach the same vCenter.
@pytest.mark.parametrize("address, server, port", [
    ("vc.example.com", "vc.example.com", 443),
    ("vc.example.com:8443", "vc.example.com", 8443),
    ("127.0.0.1:40469", "127.0.0.1", 40469),
    ("[fd00::5]:8443", "fd00::5", 8443),
    ("fd00::5", "fd00::5", 443),
])
def test_the_dynamic_providers_use_the_port_of_vsphere_server(vsphere_config, address, server, port):
    vsphere_config["vsphere:vsphereServer"] = address
    run = run_program(vsphere_config)
    providers = [p for p in run.of_type("pulumi:providers:pulumi-python") if p.name in ("pyvmomi", "node-rolls")]
    assert len(providers) == 2
    assert {(p.plain()[VCENTER_CONFIG["server"]], p.plain()[VCENTER_CONFIG["port"]]) for p in providers} == {
        (server, port)}


@pytest.mark.parametrize("address", ["vc.example.com:", "vc.example.com:https", "vc.example.com:70000", "[fd00::5"])
def test_a_bad_vsphere_server_port_is_a_config_error(vsphere_config, address):
    vsphere_config["vsphere:vsphereServer"] = address
    with pytest.raises(Exception) as err:
        run_program(vsphere_config)
    assert f"vsphere:vsphereServer: {address!r} is not a vCenter address" in str(err.value)
    assert "1-65535" in str(err.value)


def test_what_rolls_is_one_table():
    """provider_facts.ROLLED_VM_SETTINGS alone says what rolls: the VM's ignore_changes, the roll's keys and
    order, and how `make diff` reads a VM's settings as the roll's all come from it."""
    from components.dynamic.roll import KIND, ROLLED
    from components.vsphere.provider_facts import ROLLED_VM_SETTINGS, VIRTUAL_MACHINE
    from components.vsphere.vms import ROLLED_VM_INPUTS
    from tools.diff.recording import Planned
    from tools.diff.rules import DYNAMIC_REBOOTS, roll_converges

    assert ROLLED == tuple(ROLLED_VM_SETTINGS) == DYNAMIC_REBOOTS[KIND]
    assert ROLLED_VM_INPUTS == [name for inputs in ROLLED_VM_SETTINGS.values() for name in inputs]
    # make diff: a roll whose settings equal its VM's first input of each key changes nothing, and one
    # key off changes that key alone (the vGPU profile, with no input, is what the base gave the VM)
    vm_inputs = {inputs[0]: 10 + i for i, inputs in enumerate(ROLLED_VM_SETTINGS.values()) if inputs}
    vm = Planned(urn="vm", type=VIRTUAL_MACHINE, name="vms-w01", parent="", custom=True, provider="", id="vm-1",
                 inputs={"name": "w01", **vm_inputs}, outputs={"moid": "vm-1"})
    same = {"vmId": "vm-1", "vgpuProfile": ""} | {key: vm_inputs.get(inputs[0]) if inputs else ""
                                                  for key, inputs in ROLLED_VM_SETTINGS.items()}
    assert roll_converges(same, {"vm": vm}) == []
    for key, inputs in ROLLED_VM_SETTINGS.items():
        if inputs:
            assert roll_converges({**same, key: vm_inputs[inputs[0]] + 1}, {"vm": vm}) == [key], key


def _restated_rolled_names(source: str) -> list[int]:
    """Lines of `source` that spell the table again: a list, tuple or set literal with two or more roll
    keys or two or more rolled VM inputs, or a dict literal keyed by roll keys whose values name VM inputs."""
    import ast

    from components.vsphere.provider_facts import ROLLED_VM_SETTINGS

    keys = set(ROLLED_VM_SETTINGS)
    vm_inputs = {name for inputs in ROLLED_VM_SETTINGS.values() for name in inputs}

    def strings(nodes) -> set[str]:
        return {n.value for node in nodes for n in ast.walk(node)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            elements = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if len(elements & keys) >= 2 or len(elements & vm_inputs) >= 2:
                found.append(node.lineno)
        elif isinstance(node, ast.Dict):
            if len(strings([k for k in node.keys if k is not None]) & keys) >= 2 and strings(node.values) & vm_inputs:
                found.append(node.lineno)
    return found


def test_no_module_restates_what_rolls():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    table = root / "components" / "vsphere" / "provider_facts.py"
    restated = {str(p.relative_to(root)): lines for part in ("components", "tools") for p in sorted(
        (root / part).rglob("*.py")) if p != table and (lines := _restated_rolled_names(p.read_text()))}
    assert restated == {}
    # the check finds the lists it replaced
    assert _restated_rolled_names('ROLLED = ("cpus", "memoryMb", "memoryReservationMb")') == [1]
    assert _restated_rolled_names('IGNORED = ["numCpus", "memory", "hardwareVersion"]') == [1]
    assert _restated_rolled_names('live = {"cpus": vm.get("numCpus"), "memoryMb": vm.get("memory")}') == [1]
