"""docs/day2.md, the vSphere rows: each change planned before and after under mocks, and what the
engine would do to a running lab.

What the engine would do comes from tools.diff (`make diff`'s engine): the resource's recorded
inputs after `ignore_changes`, then the provider's rule for the difference: terraform-provider-vsphere's
for pulumi-vsphere (the upstream pulumi-vsphere v4.17.0 pins, commit 6e5d67e), our own provider's
`diff` for the pyvmomi resources, each cited in tools/diff/rules.py.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import builders
import pytest

from components.vsphere.vms import FIRST_BOOT_INPUTS, ROLLED_VM_INPUTS
from tools.diff import Engine, changes, snapshot, steps_between
from tools.mockrun import Run, placeholder_secrets, run_program

VM = "vsphere:index/virtualMachine:VirtualMachine"
VDS = "vsphere:index/distributedVirtualSwitch:DistributedVirtualSwitch"
DYNAMIC = "pulumi-python:dynamic:Resource"
VM_GROUP = "vsphere:index/computeClusterVmGroup:ComputeClusterVmGroup"

@dataclass
class Planned:
    run: Run
    inputs: dict[str, dict[str, Any]]
    """name -> inputs, secrets unwrapped."""
    types: dict[str, str]
    options: dict[str, dict[str, Any]]
    outputs: dict[str, Any]
    config: dict
    secrets: dict | None

    def on_top_of(self, base: Planned) -> Run:
        """This config planned on the lab `base` built, as make diff plans it (the program reads the
        deployed state: which nodes run, and roll one after another)."""
        return run_program(self.config, secrets=self.secrets, deployed=base.run)


@pytest.fixture
def plan():
    """plan(config, secrets=None): the program under mocks, with the resource options it registers."""

    def planned(config: dict, secrets: dict | None = None) -> Planned:
        run = run_program(config, secrets=secrets)
        options = {r.name: {"ignoreChanges": list(r.ignore_changes), "protect": r.protect,
                            "deleteBeforeReplace": bool(r.delete_before_replace), "aliases": list(r.aliases)}
                   for r in run.resources}
        return Planned(run, {r.name: r.plain() for r in run.resources}, {r.name: r.type for r in run.resources},
                       options, run.outputs, config, secrets)

    return planned


def engine_steps(base: Planned, new: Planned, types: tuple[str, ...] = ("vsphere:", DYNAMIC),
                 on_top: bool = True) -> dict[str, str]:
    """What the engine would do to each resource of the given types that is not left as it is, as
    tools.diff tells it from the providers' rules (pulumi-vsphere's ForceNew inputs and reboot list,
    our pyvmomi providers' own diff): create, delete, update (keys), reboot (keys), replace (keys).
    `on_top` False: `new` as planned alone, for an edit the identity guard refuses on the lab."""
    steps = {}
    for change in changes(base.run, new.on_top_of(base) if on_top else new.run):
        if not change["type"].startswith(types) or change["name"] == "lab-identity":
            continue
        op, keys = change["op"], ",".join(change["keys"])
        if op in ("create", "delete"):
            steps[change["name"]] = op
        else:
            effect = "reboot" if op == "update" and "reboot" in change["effects"] else op
            steps[change["name"]] = f"{effect} {keys}"
    return steps


def rolls(base: Planned, new: Planned) -> list[dict[str, Any]]:
    """diff.json's "rolls": the nodes a roll powers off and on, in the order they go."""
    engine = Engine(snapshot(base.run), snapshot(new.on_top_of(base)))
    return [{k: roll[k] for k in ("effect", "nodes", "oneAtATime")} for roll in engine.rolls(engine.run())]


def vsphere_only(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in ("gpu-lab:openshift", "gpu-lab:addons")}


def placed_lab(workers: int = 4) -> dict:
    """The test lab in the form that pins each worker: listed addresses and `workers.hosts`."""
    config = builders.lab_stack()
    w = config["gpu-lab:vsphere"]["workers"]
    w["names"] = [f"w{i:02d}" for i in range(1, workers + 1)]
    w["managementAddresses"] = [f"172.16.7.{50 + i}" for i in range(1, workers + 1)]
    w["rdmaAddresses"] = [f"192.168.0.{50 + i}" for i in range(1, workers + 1)]
    w["hosts"] = [builders.WORKER_HOSTS[i % 4] for i in range(workers)]
    # room for eight workers' nv-ipam blocks (8 addresses each; the lab's /26 holds seven)
    config["gpu-lab:addons"]["network"]["podPool"] = "192.168.0.128/25"
    return config


def without(config: dict, worker: str) -> dict:
    changed = copy.deepcopy(config)
    w = changed["gpu-lab:vsphere"]["workers"]
    index = w["names"].index(worker)
    for key in ("names", "managementAddresses", "rdmaAddresses", "hosts"):
        if isinstance(w.get(key), list):
            del w[key][index]
    return changed


# ---------------------------------------------------------------- first-boot inputs and options


def test_vms_ignore_what_only_their_first_boot_reads(plan):
    lab = plan(builders.lab_stack())
    for name, kind in lab.types.items():
        if kind == VM:
            rolled = ROLLED_VM_INPUTS if name != "vms-bs01" else []
            assert lab.options[name]["ignoreChanges"] == FIRST_BOOT_INPUTS + rolled, name
    assert set(FIRST_BOOT_INPUTS) == {"clone", "extraConfig", "guestId", "firmware", "scsiType"}


def test_a_replaced_vm_goes_before_its_successor_comes(plan):
    # vCenter refuses a second VM of the same name in a folder (CloneVM_Task: DuplicateName), and the
    # successor has the same static MAC and addresses: `pulumi up --replace` must delete first.
    lab = plan(builders.lab_stack())
    assert all(lab.options[n]["deleteBeforeReplace"] for n, k in lab.types.items() if k == VM)


@pytest.mark.parametrize("protect", [True, False])
def test_lifecycle_protect_guards_the_control_plane_and_the_vds(plan, protect):
    config = builders.lab_stack()
    config["gpu-lab:lifecycle"] = {"protect": protect}
    lab = plan(config)
    protected = sorted(n for n, o in lab.options.items() if o["protect"])
    expected = ["roce-vds", "vms-m01", "vms-m02", "vms-m03"] if protect else []
    # not the workers (rebuilt from the worker ignition) nor the bootstrap VM (removed after the install)
    assert [n for n in protected if n.startswith(("vms-", "roce-"))] == expected


def test_no_resource_of_the_vsphere_half_needs_an_alias(plan):
    # Nothing here was renamed or moved to another parent: the day-1 names and parents stand.
    lab = plan(builders.lab_stack())
    assert all(o["aliases"] == [] for n, o in lab.options.items() if n.startswith(("vms-", "roce-", "pyvmomi")))


# ---------------------------------------------------------------- the rows of docs/day2.md


def test_add_a_worker(plan):
    base = plan(builders.lab_stack())
    new = plan(builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.workers.names",
                                   [*builders.WORKERS, "w05"]))
    # The new worker's VM and its roll (which gives it its vGPU); its round-robin host is esx01, alone in a third spread group
    # (no rule for one VM). No other VM, rule or host setting changes: the workers' ignition
    # changes too, but extraConfig is a first-boot input.
    assert engine_steps(base, new) == {"vms-w05": "create", "vms-w05-roll": "create"}
    assert new.inputs["vms-w05"]["hostSystemId"] == "host-esx01"


def test_add_a_worker_in_the_placed_form(plan):
    base = plan(placed_lab())
    config = placed_lab(5)
    config["gpu-lab:vsphere"]["workers"]["hosts"][4] = "esx03"
    new = plan(config)
    # ComputeClusterVmGroup.virtual_machine_ids is not ForceNew (resource_vsphere_compute_cluster_vm_group.go):
    # the group of the new worker's host is updated in place.
    assert engine_steps(base, new) == {"vms-w05": "create", "vms-w05-roll": "create",
                                       "vms-esx03-workers": "update virtualMachineIds"}


def test_remove_a_middle_worker_in_the_placed_form(plan):
    base = plan(placed_lab(8))
    new = plan(without(placed_lab(8), "w02"))
    # Its VM goes, and it leaves its host's VM group; every other worker keeps its addresses and host,
    # so nothing else changes. The roll goes with the VM (deleted_with), the vGPU in it.
    assert engine_steps(base, new) == {"vms-w02": "delete", "vms-w02-roll": "delete",
                                       "vms-esx02-workers": "update virtualMachineIds"}
    step = next(s for s in steps_between(snapshot(base.run), snapshot(new.run)) if s.name == "vms-w02-roll")
    assert step.effects == [] and step.notes == ["deleted with vms-w02: no delete of its own"]


def test_remove_the_last_worker_of_a_host_in_the_placed_form(plan):
    base = plan(placed_lab())
    new = plan(without(placed_lab(), "w02"))
    assert engine_steps(base, new) == {
        "vms-w02": "delete", "vms-w02-roll": "delete",
        "vms-esx02-workers": "delete", "vms-esx02-host": "delete", "vms-esx02-placement": "delete"}


def test_remove_a_middle_worker_in_the_derived_form_moves_the_later_ones(plan):
    """Why the placed form exists: by position, w03 and w04 take w02's and w03's host (a vMotion of
    a vGPU VM) and addresses (written in their ignition, so the guests keep the old ones), and the
    spread rule changes. The identity guard refuses this change (node_moves, keeping_edit)."""
    base = plan(vsphere_only(builders.lab_stack()))
    new = plan(vsphere_only(builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.workers.names",
                                                ["w01", "w03", "w04"])))
    with pytest.raises(Exception, match="a running lab cannot take this edit"):
        new.on_top_of(base)  # the program refuses it before anything registers
    steps = engine_steps(base, new, on_top=False)
    assert steps["vms-w03"] == steps["vms-w04"] == "update hostSystemId"
    assert steps["vms-workers-spread-1"] == "update virtualMachineIds"


def test_change_the_template(plan):
    base = plan(builders.lab_stack())
    changed = builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.template", "rhcos-4.17-template")
    new = plan(changed)
    # Every VM's clone block names the new template ...
    vms = [n for n, k in new.types.items() if k == VM]
    assert all(base.inputs[n]["clone"] != new.inputs[n]["clone"] for n in vms)
    # ... and the engine ignores it on the running ones: nothing is replaced.
    assert engine_steps(base, new) == {}
    # New VMs get it.
    more = plan(builders.with_value(changed, "gpu-lab:vsphere.workers.names", [*builders.WORKERS, "w05"]))
    assert more.inputs["vms-w05"]["clone"]["templateUuid"] == "4213abcd-template-rhcos-4.17-template"


def test_change_the_vgpu_profile(plan):
    base = plan(builders.lab_stack())
    new = plan(builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.workers.vgpuProfile", "grid_v100-32c"))
    # An update of each worker's NodeRoll, each powering its VM off and on (the vGPU device changes only
    # on a powered-off VM), one after the other (tests/dynamic/test_node_roll.py). VmVgpuProfile keeps the profile
    # it attached (ignore_changes): it is not updated.
    assert engine_steps(base, new) == {f"vms-{w}-roll": "reboot vgpuProfile" for w in builders.WORKERS}
    assert rolls(base, new) == [{"effect": "reboot", "nodes": builders.WORKERS, "oneAtATime": True}]


def test_change_vm_sizing(plan):
    base = plan(builders.lab_stack())
    config = builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.workers.sizing",
                                 {"cpus": 8, "memoryGb": 32, "diskGb": 50})
    new = plan(config)
    # CPU and memory without hot add need the VM off: not pulumi-vsphere (it would power every worker off
    # at once; the inputs are under ignore_changes) but each worker's NodeRoll, one after the other.
    assert engine_steps(base, new) == {f"vms-{w}-roll": "reboot cpus,memoryMb,memoryReservationMb"
                                       for w in builders.WORKERS}
    assert rolls(base, new) == [{"effect": "reboot", "nodes": builders.WORKERS, "oneAtATime": True}]
    # the control plane's sizing rolls the three control-plane nodes the same way
    cp = plan(builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.controlPlane.sizing",
                                  {"cpus": 8, "memoryGb": 16, "diskGb": 50}))
    assert engine_steps(base, cp) == {f"vms-{m}-roll": "reboot cpus" for m in ("m01", "m02", "m03")}
    # A bigger disk is grown in place (virtual_machine_disk_subresource.go: only shrinking is refused).
    grown = plan(builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.workers.sizing",
                                     {"cpus": 4, "memoryGb": 24, "diskGb": 80}))
    assert engine_steps(base, grown) == {f"vms-{w}": "update disks" for w in builders.WORKERS}


def test_rotate_the_vcenter_password(plan):
    config = builders.lab_stack()
    secrets = placeholder_secrets(config)
    base = plan(config, secrets)
    new = plan(config, {**secrets, "vsphere:password": "rotated-password"})
    # No resource carries it: it is provider configuration. The bridged provider's DiffConfig replaces only
    # on a config key marked ForcesProviderReplace (pulumi-terraform-bridge v3.133.0, pkg/tfbridge/provider.go,
    # configDiffer), which pulumi-vsphere marks on none (provider/resources.go, Config); our explicit dynamic
    # providers hold it too (components/dynamic/provider.py), and pulumi-python has no DiffConfig, so they are
    # updated and keep their resources (step_generator.go, providerChanged).
    assert engine_steps(base, new) == {}
    providers = engine_steps(base, new, types=("pulumi:providers:",))
    assert providers == {"pyvmomi": "update vcenter:password", "node-rolls": "update vcenter:password"}


def test_change_the_connectx_pfc_priority(plan):
    config = builders.lab_stack()
    config["gpu-lab:vsphere"]["networks"]["rdma"]["pfcPriority"] = 4
    # the switches must protect the same priority, in the traffic class of that number
    config["gpu-lab:switches"][0]["roce"].update(pfcPriority=4, trafficClass=4)
    base = plan(builders.lab_stack())
    new = plan(config)
    # nmlx5_core's options on each worker host, updated in place; reported pending until the host
    # reboots (hostsPendingReboot, tests/dynamic/test_pending_reboot.py).
    assert engine_steps(base, new) == {f"roce-{h}-connectx-qos": "update options" for h in builders.WORKER_HOSTS}
    assert new.inputs["roce-esx01-connectx-qos"]["options"] == "pfctx=0x10 pfcrx=0x10 trust_state=2"


def test_adopt_the_placed_form(plan):
    """Writing out what the day-1 form gives (listed addresses, workers.hosts): no VM changes; DRS
    keeps each worker on its host by a rule per host instead of the spread rules."""
    base = plan(builders.lab_stack())
    new = plan(placed_lab())
    assert engine_steps(base, new) == {
        "vms-workers-spread-1": "delete",
        **{f"vms-{h}-{what}": "create" for h in builders.WORKER_HOSTS for what in ("workers", "host", "placement")}}


def test_add_a_worker_to_a_group_that_has_a_rule(plan):
    # Six workers on four hosts: w05 and w06 form the second spread group; w07 joins it.
    # ComputeClusterVmAntiAffinityRule.virtual_machine_ids is not ForceNew
    # (resource_vsphere_compute_cluster_vm_anti_affinity_rule.go): the rule is updated in place.
    six = [f"w0{i}" for i in range(1, 7)]
    base = plan(builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.workers.names", six))
    new = plan(builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.workers.names", [*six, "w07"]))
    assert engine_steps(base, new) == {"vms-w07": "create", "vms-w07-roll": "create",
                                       "vms-workers-spread-2": "update virtualMachineIds"}


# ---------------------------------------------------------------- what a running lab feels: migrate, network


def lab_effects(base: Planned, new: Planned) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """name -> (op, keys, effects) of every vSphere step (make diff's diff.json entries)."""
    return {c["name"]: (c["op"], ",".join(c["keys"]), tuple(c["effects"]))
            for c in changes(base.run, new.run) if c["type"].startswith("vsphere:")}


def test_change_the_datastore_migrates_every_vm_at_once(plan):
    base = plan(builders.lab_stack())
    new = plan(builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.datastore", "vsanDatastore2"))
    # resourceVSphereVirtualMachineUpdateLocation (resource_vsphere_virtual_machine.go): a storage vMotion
    # of each VM, all in the same `up`, vGPU workers and every etcd member included; no reboot.
    vms = {name for name, t in base.types.items() if t == VM}
    assert lab_effects(base, new) == {name: ("update", "datastoreId", ("migrate",)) for name in vms}
    assert len(vms) == 1 + len(builders.CONTROL_PLANE) + len(builders.WORKERS)


def test_swap_the_roce_uplink_of_every_host_is_network(plan):
    config = builders.lab_stack()
    for host in config["gpu-lab:vsphere"]["workerHosts"]:
        host["rdmaUplinks"] = ["vmnic5"]
    base, new = plan(builders.lab_stack()), plan(config)
    # the vDS member hosts' uplink pNICs (distributed_virtual_switch_structure.go): every host's uplink
    # is swapped in one update, and the management port group rides the same uplinks
    assert lab_effects(base, new) == {"roce-vds": ("update", "hosts", ("network",))}


def test_leaving_out_the_networks_block_is_network(plan):
    config = builders.lab_stack()
    del config["gpu-lab:vsphere"]["networks"]
    base, new = plan(builders.lab_stack()), plan(config)
    # the defaults put the management port group on VLAN 0: every worker's management NIC leaves VLAN 7
    assert new.inputs["roce-management-pg"]["vlanId"] == 0 and base.inputs["roce-management-pg"]["vlanId"] == 7
    assert lab_effects(base, new)["roce-management-pg"] == ("update", "vlanId", ("network",))


def test_rename_the_cluster_in_the_placed_form_replaces_drs_and_migrates_the_workers(plan):
    base = plan(placed_lab())
    new = plan(builders.with_value(placed_lab(), "gpu-lab:vsphere.cluster", "other-cluster"))
    found = lab_effects(base, new)
    # compute_cluster_id is ForceNew on the DRS VM group, host group and VM-host rule
    # (resource_vsphere_compute_cluster_{vm_group,host_group,vm_host_rule}.go): each is replaced
    for host in builders.WORKER_HOSTS:
        for what in ("workers", "host", "placement"):
            op, keys, effects = found.pop(f"vms-{host}-{what}")
            assert op == "replace" and "computeClusterId" in keys.split(",") and effects == ("replace",)
    # the workers leave for the other cluster's resource pool: a compute vMotion each
    assert found == {f"vms-{w}": ("update", "resourcePoolId", ("migrate",)) for w in builders.WORKERS}


def test_vm_sizing_stops_the_up_workflow_unless_allowed(plan, tmp_path):
    from tools import up_gate

    base = plan(builders.lab_stack())
    new = plan(builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.controlPlane.sizing",
                                   {"cpus": 8, "memoryGb": 16, "diskGb": 50}))
    verdict = up_gate.from_diff({"changes": changes(base.run, new.run)})
    # the control-plane nodes' rolls reboot them (one at a time), not their VMs
    assert verdict == [(f"{DYNAMIC} vms-{m}-roll (update of cpus)", ["reboot"]) for m in builders.CONTROL_PLANE]
    path = tmp_path / "diff.json"
    path.write_text(__import__("json").dumps({"changes": changes(base.run, new.run)}))
    assert up_gate.main(["diff", str(path)]) == 1
    assert up_gate.main(["diff", str(path), "--allow", "reboot"]) == 0


def test_the_cluster_gone_setting_is_its_own_effect_in_make_diff_and_the_gate(plan, tmp_path, monkeypatch):
    """GPU_LAB_CLUSTER_GONE=1 (components/dynamic/roll.py) lets a node's VM change without asking its cluster:
    make diff names it `undrained` on each roll it would run that way, and the up gate stops on it unless
    allowed by name; `reboot` alone does not let it through."""
    from tools import up_gate

    base = plan(builders.lab_stack())
    new = plan(builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.workers.sizing",
                                   {"cpus": 8, "memoryGb": 32, "diskGb": 100}))
    monkeypatch.setenv("GPU_LAB_CLUSTER_GONE", "1")
    found = {c["name"]: c["effects"] for c in changes(base.run, new.run) if c["name"].endswith("-roll")}
    assert found == {f"vms-{w}-roll": ["reboot", "undrained"] for w in builders.WORKERS}
    path = tmp_path / "diff.json"
    path.write_text(__import__("json").dumps({"changes": changes(base.run, new.run)}))
    assert up_gate.main(["diff", str(path), "--allow", "reboot"]) == 1
    assert up_gate.main(["diff", str(path), "--allow", "reboot,undrained"]) == 0
    monkeypatch.setenv("GPU_LAB_CLUSTER_GONE", "0")
    assert all(c["effects"] == ["reboot"] for c in changes(base.run, new.run) if c["name"].endswith("-roll"))


def test_a_node_removed_while_the_cluster_is_gone_is_an_undrained_delete(plan, monkeypatch):
    base = plan(builders.lab_stack())
    new = plan(builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.workers.names", builders.WORKERS[:-1]))
    last = builders.WORKERS[-1]
    removal = f"openshift-nodes-{last}"
    assert {c["name"]: c["effects"] for c in changes(base.run, new.run)}[removal] == ["delete"]
    monkeypatch.setenv("GPU_LAB_CLUSTER_GONE", "1")  # remove-node.sh then lets it go without a drain
    assert {c["name"]: c["effects"] for c in changes(base.run, new.run)}[removal] == ["delete", "undrained"]


# ---------------------------------------------------------------- the up gate on the common edits


def _gate(base: Planned, new: Planned, tmp_path, allow: str = "") -> int:
    from tools import up_gate

    path = tmp_path / "diff.json"
    path.write_text(__import__("json").dumps({"changes": changes(base.run, new.on_top_of(base))}))
    return up_gate.main(["diff", str(path), *(["--allow", allow] if allow else [])])


def test_adding_a_worker_passes_the_gate_with_nothing_allowed(plan, tmp_path):
    from tools import up_gate

    base = plan(builders.lab_stack())
    new = plan(builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.workers.names", [*builders.WORKERS, "w05"]))
    found = {c["name"]: (c["op"], c["effects"]) for c in changes(base.run, new.on_top_of(base))}
    mpijobs = {n: v for n, v in found.items() if n.startswith("addons-mpijob-")}
    # only the workers changed under them (node affinity, worker count, mpirun -np): a re-run, not a loss
    assert len(mpijobs) == 4 and all(v == ("replace", ["rerun-acceptance"]) for v in mpijobs.values())
    # nothing restarts: the RDMA device plugin's DaemonSet selects its nodes by NFD's label
    assert up_gate.from_diff({"changes": changes(base.run, new.on_top_of(base))}) == []
    assert _gate(base, new, tmp_path) == 0
    # without the add-ons, nothing to allow
    bare = {k: v for k, v in builders.lab_stack().items() if k != "gpu-lab:addons"}
    assert _gate(plan(bare), plan(builders.with_value(bare, "gpu-lab:vsphere.workers.names",
                                                      [*builders.WORKERS, "w05"])), tmp_path) == 0


@pytest.mark.parametrize("key, rotated", [
    ("vsphere:password", "rotated-password"),
    ("gpu-lab:pullSecret", '{"auths":{"registry.example":{"auth":"bmV3"}}}'),
    ("gpu-lab:switchPasswords", {builders.SWITCH: "rotated-switch-password"}),
])
def test_rotating_a_secret_passes_the_gate_with_nothing_allowed(plan, tmp_path, key, rotated):
    config = builders.lab_stack()
    secrets = placeholder_secrets(config)
    assert key in secrets
    base = plan(config, secrets)
    new = plan(config, {**secrets, key: rotated})
    assert changes(base.run, new.on_top_of(base))  # the rotation reaches the lab: something runs or updates
    assert _gate(base, new, tmp_path) == 0


def test_a_scoped_allowance_for_the_jobs_lets_nothing_else_through(plan, tmp_path):
    base = plan(builders.lab_stack())
    new = plan(builders.with_value(builders.lab_stack(), "gpu-lab:addons.jobs.horovodBatches", 50))
    assert _gate(base, new, tmp_path) == 1  # the benchmark's own arguments: a replacement, not a re-run
    assert _gate(base, new, tmp_path, "replace:addons-mpijob-*") == 0
    grown = plan(builders.with_value(builders.with_value(builders.lab_stack(), "gpu-lab:addons.jobs.horovodBatches",
                                                         50), "gpu-lab:vsphere.workers.sizing",
                                     {"cpus": 16, "memoryGb": 64, "diskGb": 120}))
    assert _gate(base, grown, tmp_path, "replace:addons-mpijob-*") == 1
    assert _gate(base, grown, tmp_path, "replace:addons-mpijob-*,reboot:vms-w0?-roll") == 0


def test_a_new_roll_on_a_running_vm_with_other_settings_is_a_reboot(plan):
    """A lab whose VMs run without a roll (built before rolls, or a roll dropped from the state) gets one
    created; its create converges the VM it finds, powering it off and on for what differs."""
    base = plan(builders.lab_stack())
    grown = plan(builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.workers.sizing",
                                     {"cpus": 16, "memoryGb": 64, "diskGb": 120}))
    without_rolls = [r for r in snapshot(base.run) if not r.name.endswith("-roll")]
    steps = {s.name: s for s in Engine(without_rolls, snapshot(grown.on_top_of(base))).run()}
    for w in builders.WORKERS:
        step = steps[f"vms-{w}-roll"]
        assert (step.op, step.effects) == ("create", ["reboot"])
        assert step.notes == ["its VM runs already: the roll power-cycles it for cpus, memoryMb, memoryReservationMb"]
    # with the VM's own settings, the create changes nothing
    same = {s.name: s for s in Engine(without_rolls, snapshot(base.on_top_of(base))).run()}
    assert (same["vms-w01-roll"].op, same["vms-w01-roll"].effects) == ("create", [])
    # a new worker's roll finds its VM as the create made it
    more = plan(builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.workers.names", [*builders.WORKERS, "w05"]))
    assert {c["name"]: c["effects"] for c in changes(base.run, more.on_top_of(base))}["vms-w05-roll"] == []
