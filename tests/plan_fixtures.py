"""The policy pack's test stacks, taken from the program's own plan of a test stack.

`lab()` is what `make plan` plans for the test lab (tests/builders.py, with vsphere.hardwareVersion
set so the hardware rules have a value to judge): the program runs under mocks with placeholder
secrets (tools.plan's offline run), and each resource becomes an entry of tools/policy_check.py's
input format with plan.json's numbers and assets, its secret paths marked. Secrets keep their
placeholder values instead of plan.json's "[secret]", so a rule can see a secret's structure
(a Secret's keys). tests/policies/test_policy_props.py checks that the fixture and plan.json agree.

The other stacks are `lab()` with a few deliberate mistakes each; tests hold the exact verdicts:

| stack | mistakes | verdicts |
|---|---|---|
| `broken_fabric` | LACP on, MTU 1500 on the vDS and one vmk, two NICs from one host, a host without `Net.PVRDMAVmknic`, a disabled pvrdma ruleset | 6 mandatory |
| `broken_vms` | old hardware on a PVRDMA VM, a vGPU VM not reserved, a small worker, a 2-vCPU control plane, two NICs on one network, a PVRDMA NIC on a standard network | 5 mandatory, 2 advisory |
| `broken_openshift` | 2 control-plane nodes, no 22623, bootstrap in the API pool after install, ECN 1500/150, switch PFC priority 4 vs hosts 3 | 4 mandatory, 1 advisory |
| `broken_workloads` | RDMA worker privileged without IPC_LOCK, GPU request without limit, plain Secret data, plain switch and vCenter passwords, no dial timeout, no pinned host key | 6 mandatory, 2 advisory |
| `preview_unknowns` | ids, names, thresholds and secrets unknown, as a first preview sees them | none |
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import builders

import labrules.openshift
import labrules.vsphere
from components.model import whole_numbers
from rules import network
from tools.mockrun import Run, run_program
from tools.plan import describe_assets
from tools.stackfile import offline_secrets

PROJECT, STACK = "gpu-lab", "lab"

# resource names the program gives (components/*): `<component>-<what>`
FABRIC, VDS, RDMA_PG, VMS, OPENSHIFT, ADDONS = "roce", "roce-vds", "roce-rdma-pg", "vms", "openshift", "addons"
SWITCH = builders.SWITCH
SWITCH_COMMAND = f"{SWITCH}-config"
VCENTER_PROVIDER = "pyvmomi"
HARDWARE_VERSION = 14


def vm(name: str) -> str:
    return f"{VMS}-{name}"


def roll(name: str) -> str:
    """The node's roll: the pyvmomi resource that holds its VM's vGPU profile."""
    return f"{VMS}-{name}-roll"


def vmk(host: str) -> str:
    return f"{FABRIC}-{host}-vmk"


def pvrdma_vmknic(host: str) -> str:
    return f"{FABRIC}-{host}-pvrdma-vmknic"


def pvrdma_ruleset(host: str) -> str:
    return f"{FABRIC}-{host}-pvrdma-ruleset"


def policy_stack_config() -> dict[str, Any]:
    """The test lab as the policy tests plan it: VMs on a set hardware version, OpenShift installed
    (bootstrap off, so the load-balancer rules judge a finished cluster)."""
    config = builders.with_value(builders.lab_stack(), "gpu-lab:vsphere.hardwareVersion", HARDWARE_VERSION)
    return builders.with_value(config, "gpu-lab:openshift.bootstrap", False)


@functools.cache
def planned_run() -> Run:
    """The mock run `make plan` does, on the policy tests' stack (once per session)."""
    config = policy_stack_config()
    return run_program(config, stack=STACK, secrets=offline_secrets(config))


@functools.cache
def _lab_json() -> str:
    return plan_json(planned_run())


def plan_json(run: Run) -> str:
    """A mock run as the plan.json the pack's tests read."""
    names = {r.urn: r.name for r in run.resources}
    resources = []
    for r in sorted(run.resources, key=lambda r: r.urn):
        entry: dict[str, Any] = {"type": r.type, "name": r.name, "urn": r.urn}
        if names.get(r.parent_urn):
            entry["parent"] = names[r.parent_urn]
        entry["properties"] = describe_assets(whole_numbers(r.plain()))
        if r.secret_paths():
            entry["secretPaths"] = r.secret_paths()
        resources.append(entry)
    return json.dumps({"project": PROJECT, "stack": STACK, "resources": resources})


def lab() -> dict:
    """The compliant stack: the plan of the test lab (a fresh copy; tests mutate it)."""
    return json.loads(_lab_json())


def plan_of(config: dict[str, Any]) -> dict:
    """The plan of another stack config, in the same shape as lab()."""
    return json.loads(plan_json(run_program(config, stack=STACK, secrets=offline_secrets(config))))


# ---------------------------------------------------------------- mutations


def find(stack: dict, name: str) -> dict:
    (hit,) = [r for r in stack["resources"] if r["name"] == name]
    return hit


def props(stack: dict, name: str) -> dict:
    return find(stack, name)["properties"]


def drop(stack: dict, name: str) -> None:
    stack["resources"] = [r for r in stack["resources"] if r["name"] != name]


def planned_vm(stack: dict, name: str) -> dict:
    """The LabVms component's plan entry of one VM."""
    return next(e for e in props(stack, VMS)["vms"] if e["name"] == name)


def _containers(job: dict) -> list:
    spec = job["spec"]
    template = spec["mpiReplicaSpecs"]["Worker"]["template"] if "mpiReplicaSpecs" in spec else spec["template"]
    return template["spec"]["containers"]


RDMA_JOB = "addons-mpijob-nccl-allreduce-rdma"
GPU_JOB = f"addons-job-nvidia-smi-{builders.WORKERS[0]}"
LICENSING_SECRET = "addons-licensing-secret"


def rdma_worker_container(stack: dict) -> dict:
    return _containers(props(stack, RDMA_JOB))[0]


def gpu_container(stack: dict) -> dict:
    return _containers(props(stack, GPU_JOB))[0]


# The guides' thresholds, from labrules (where the program and the pack both read them), so each
# broken stack stays just below them.
MIN_HARDWARE_VERSION = labrules.vsphere.PVRDMA_MIN_HARDWARE_VERSION
WORKER_MIN_MEMORY_GB = labrules.vsphere.MIN_WORKER["memoryGb"]
CONTROL_PLANE_MIN_CPUS = labrules.vsphere.MIN_CONTROL_PLANE["cpus"]
CONTROL_PLANE_COUNT = labrules.openshift.CONTROL_PLANE_NODES

H = builders.WORKER_HOSTS
W = builders.WORKERS
CP = builders.CONTROL_PLANE


def broken_fabric() -> dict:
    s = lab()
    vds = props(s, VDS)
    vds["lacpEnabled"] = True
    vds["maxMtu"] = network.VSPHERE_DEFAULT_MTU  # below the pack's minMtu
    vds["hosts"][1]["devices"] = ["vmnic4", "vmnic0"]
    props(s, vmk(H[1]))["mtu"] = network.VSPHERE_DEFAULT_MTU
    drop(s, pvrdma_vmknic(H[3]))
    props(s, pvrdma_ruleset(H[2]))["enabled"] = False
    return s


def broken_vms() -> dict:
    s = lab()
    props(s, vm(W[1]))["hardwareVersion"] = MIN_HARDWARE_VERSION - 2
    props(s, vm(W[2])).update(memoryReservationLockedToMax=False, memoryReservation=0)
    props(s, vm(W[3]))["memory"] = (WORKER_MIN_MEMORY_GB - 8) * 1024
    props(s, vm(CP[1]))["numCpus"] = CONTROL_PLANE_MIN_CPUS - 2
    nics = props(s, vm(CP[2]))["networkInterfaces"]
    nics.append(dict(nics[0]))
    planned_vm(s, W[0])["nics"][1]["network"] = "VM Network"
    return s


def broken_openshift() -> dict:
    s = lab()
    ocp = props(s, OPENSHIFT)
    ocp["controlPlaneCount"] = CONTROL_PLANE_COUNT - 1
    ocp["loadBalancer"]["frontends"] = [6443, 80, 443]
    ocp["loadBalancer"]["backends"]["6443"].insert(0, "bootstrap")  # the install finished; it still serves the API
    sw = props(s, SWITCH)
    sw["ecnMinKb"], sw["ecnMaxKb"] = 1500, 150
    sw["pfcPriority"] = 4
    return s


def broken_workloads() -> dict:
    s = lab()
    rdma_worker_container(s)["securityContext"] = {"privileged": True}
    gpu_container(s)["resources"] = {"requests": {"nvidia.com/gpu": 1}}
    del find(s, LICENSING_SECRET)["secretPaths"]
    command = find(s, SWITCH_COMMAND)
    del command["secretPaths"]  # the connection, password included, in plain text
    del command["properties"]["connection"]["perDialTimeout"]
    del command["properties"]["connection"]["hostKey"]  # any host key accepted
    find(s, VCENTER_PROVIDER)["secretPaths"] = []  # the vCenter login the host settings' provider holds
    return s


def preview_unknowns() -> dict:
    """The lab as a first preview sees it: ids, derived names and some secrets not known yet."""
    s = lab()
    unknown = {
        VDS: ["maxMtu", "hosts[0].hostSystemId", "hosts[1].devices", "uplinks", "lacpEnabled"],
        RDMA_PG: ["distributedVirtualSwitchUuid", "name"],
        FABRIC: ["hosts[2].name", "vdsName"],
        VMS: ["vms[4].nics[1].network", "vms[5].nics"],
        vm(W[0]): ["networkInterfaces[1].networkId", "memoryReservationLockedToMax", "hardwareVersion"],
        vm(W[1]): ["networkInterfaces", "numCpus"],
        vm(CP[2]): ["disks[0].size"],
        SWITCH: ["ecnMinKb", "pfcPriority", "trust"],
        SWITCH_COMMAND: ["connection.perDialTimeout", "connection.password", "connection.hostKey"],
        OPENSHIFT: ["controlPlaneCount", "loadBalancer.backends.6443", "bootstrap"],
        RDMA_JOB: ["spec.mpiReplicaSpecs.Worker.template.spec.containers[0].securityContext"],
        GPU_JOB: ["spec.template.spec.containers[0].resources.limits"],
        LICENSING_SECRET: ["stringData"],
        pvrdma_vmknic(H[0]): ["value"],
        pvrdma_ruleset(H[1]): ["hostName"],
        vmk(H[2]): ["mtu"],
        roll(W[2]): ["vmName"],
    }
    for name, paths in unknown.items():
        find(s, name)["unknownPaths"] = paths
    return s


STACKS: dict[str, Callable[[], dict]] = {
    "lab": lab,
    "broken-fabric": broken_fabric,
    "broken-vms": broken_vms,
    "broken-openshift": broken_openshift,
    "broken-workloads": broken_workloads,
    "preview-unknowns": preview_unknowns,
}


def write(directory: Path, name: str) -> Path:
    """One of STACKS as a JSON file (tools/policy_check.py's input) in `directory`; its path."""
    path = Path(directory) / f"{name}.json"
    path.write_text(json.dumps(STACKS[name](), indent=1) + "\n")
    return path
