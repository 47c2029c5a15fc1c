"""VM rules: PVRDMA hardware version, vGPU memory reservation, sizing, identical workers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyConfigSchema

from labrules.types import VM_ROLL_KIND
from labrules.vsphere import (
    MIN_CONTROL_PLANE,
    MIN_WORKER,
    PVRDMA_ADAPTER,
    PVRDMA_MIN_HARDWARE_VERSION,
    VM_ADAPTER_TYPES,
)

from .declare import ADVISORY, MANDATORY, resource_policy, stack_policy
from .props import (
    LAB_VMS,
    UNKNOWN,
    VM,
    Res,
    as_int,
    as_list,
    dig,
    known,
    lab_vm_entries,
    name_of,
    of_kind,
    of_type,
    props_of,
    settings,
    stack_resources,
    truthy,
)

# ---------------------------------------------------------------- hardware version

HW_SCHEMA = PolicyConfigSchema(properties={
    "minHardwareVersion": {
        "type": "integer", "minimum": PVRDMA_MIN_HARDWARE_VERSION, "default": PVRDMA_MIN_HARDWARE_VERSION,
        "description": "lowest virtual hardware version allowed on VMs with a PVRDMA NIC",
    },
})


def check_pvrdma_hardware_version(args, report_violation) -> None:
    """VMs with a PVRDMA NIC run virtual hardware version 13 or later. VMware's PVRDMA configuration
    requirements, which the NVIDIA RDG for vSphere PVRDMA follows: the PVRDMA adapter exists
    only from ESXi 6.5 compatibility (hardware 13) on. A VM without hardwareVersion keeps its template's
    version, which only the LabVms component knows (templateHardwareVersion, from the template look-up), so
    the rule judges the VM's own setting when there is one and the template's version otherwise."""
    minimum = int(settings(args, HW_SCHEMA)["minHardwareVersion"])
    p = props_of(args)
    if args.resource_type == VM:
        if not any(dig(n, "adapterType") == PVRDMA_ADAPTER for n in as_list(p.get("networkInterfaces"))):
            return
        version = as_int(p.get("hardwareVersion"))
        if known(version) and version < minimum:
            report_violation(f"VM {name_of(p, args.name)!r} has a PVRDMA NIC on hardware version {version}; "
                             f"PVRDMA needs {minimum} or later")
    elif args.resource_type == LAB_VMS:
        template = as_int(p.get("templateHardwareVersion"))
        if p.get("hardwareVersion") is not None or not known(template) or template >= minimum:
            return
        for vm in as_list(p.get("vms")):
            if any(dig(n, "adapterType") == PVRDMA_ADAPTER for n in as_list(dig(vm, "nics"))):
                report_violation(
                    f"VM {dig(vm, 'name')!r} has a PVRDMA NIC and keeps its template's hardware version {template}; "
                    f"PVRDMA needs {minimum} or later: set vsphere.hardwareVersion or upgrade the template")


pvrdma_hardware_version = resource_policy("vsphere-pvrdma-hardware-version", MANDATORY,
                                          check_pvrdma_hardware_version, HW_SCHEMA, types=(VM, LAB_VMS))


def check_nic_adapter_type(args, report_violation) -> None:
    """Every VM NIC names an adapter type pulumi-vsphere accepts. The NVIDIA RDG for vSphere PVRDMA gives each worker a
    PVRDMA adapter, which the provider calls vmxnet3vrdma; any other spelling (such as vrdma) passes preview while
    the NIC's network is unknown and then fails every worker VM at create, after the switch, vmks and control plane
    already exist."""
    if args.resource_type != VM:
        return
    p = props_of(args)
    for i, nic in enumerate(as_list(p.get("networkInterfaces"))):
        adapter = dig(nic, "adapterType")
        if known(adapter) and adapter not in VM_ADAPTER_TYPES:
            report_violation(f"VM {name_of(p, args.name)!r} NIC {i} has adapter type {adapter!r}; pulumi-vsphere "
                             f"accepts {', '.join(VM_ADAPTER_TYPES)} (PVRDMA is {PVRDMA_ADAPTER})")


nic_adapter_type = resource_policy("vsphere-vm-nic-adapter-type", MANDATORY, check_nic_adapter_type, types=(VM,))


# ---------------------------------------------------------------- what a lab VM looks like


@dataclass
class LabVm:
    """One VM as the stack describes it: the VirtualMachine resource if there is one, else the
    LabVms component's entry (so the same VM is never judged twice)."""

    name: str
    role: Any
    urn: str
    cpus: Any
    memory_mib: Any
    disk_gb: Any
    vgpu_profile: Any
    nic_types: Any
    resource: Res | None


def _vgpu_profiles(resources: list[Res]) -> dict:
    """VM name -> vGPU profile, from the nodes' rolls (the pyvmomi resource that gives a VM its vGPU)."""
    return {r.get("vmName"): r.get("vgpuProfile") for r in of_kind(resources, VM_ROLL_KIND)
            if known(r.get("vmName")) and r.get("vgpuProfile")}


def lab_vms(resources: list[Res]) -> list[LabVm]:
    by_name = {r.get("name"): r for r in of_type(resources, VM) if known(r.get("name"))}
    profiles = _vgpu_profiles(resources)
    out = []
    for comp, entry in lab_vm_entries(resources):
        name = dig(entry, "name")
        if not known(name):
            continue
        vm = by_name.get(name)
        entry_nics = [dig(n, "adapterType") for n in as_list(dig(entry, "nics"))]
        if vm is not None:
            memory = as_int(vm.get("memory"))
            disks = as_list(vm.get("disks"))
            nics = [dig(n, "adapterType") for n in as_list(vm.get("networkInterfaces"))]
            out.append(LabVm(
                name, dig(entry, "role"), vm.urn, as_int(vm.get("numCpus")), memory,
                as_int(dig(disks[0], "size")) if disks else None,
                profiles.get(name, dig(entry, "vgpuProfile")),
                nics if vm.get("networkInterfaces") is not UNKNOWN else UNKNOWN, vm,
            ))
        else:
            memory_gb = as_int(dig(entry, "memoryGb"))
            out.append(LabVm(
                name, dig(entry, "role"), comp.urn, as_int(dig(entry, "cpus")),
                memory_gb * 1024 if isinstance(memory_gb, int) else memory_gb,
                as_int(dig(entry, "diskGb")), profiles.get(name, dig(entry, "vgpuProfile")),
                entry_nics, None,
            ))
    return out


# ---------------------------------------------------------------- vGPU memory reservation


def check_vgpu_memory_reserved(args, report_violation) -> None:
    """VMs with an NVIDIA vGPU have all their memory reserved. NVIDIA vGPU on vSphere, as deployed in the RDG: vSphere
    does not power on a VM with a shared PCI (vGPU) device unless its whole memory is reserved."""
    resources = stack_resources(args)
    vgpu_names = set(_vgpu_profiles(resources))
    for _, entry in lab_vm_entries(resources):
        if known(dig(entry, "vgpuProfile")) and dig(entry, "vgpuProfile"):
            vgpu_names.add(dig(entry, "name"))
    for vm in of_type(resources, VM):
        name = vm.get("name")
        if name not in vgpu_names or truthy(vm.get("memoryReservationLockedToMax")):
            continue
        memory = as_int(vm.get("memory"))
        reserved = as_int(vm.get("memoryReservation"))
        if memory is UNKNOWN or reserved is UNKNOWN or memory is None:
            continue
        reserved = reserved or 0
        if reserved < memory:
            report_violation(
                f"VM {name!r} has a vGPU but reserves {reserved} of its {memory} MiB; set memoryReservation to "
                "the full memory (or memoryReservationLockedToMax: true)",
                vm.urn,
            )


vgpu_memory_reserved = stack_policy("vsphere-vgpu-memory-reserved", MANDATORY, check_vgpu_memory_reserved)


# ---------------------------------------------------------------- sizing

SIZING_SCHEMA = PolicyConfigSchema(properties={
    "workerMinCpus": {"type": "integer", "minimum": 1, "default": MIN_WORKER["cpus"]},
    "workerMinMemoryGb": {"type": "integer", "minimum": 1, "default": MIN_WORKER["memoryGb"]},
    "workerMinDiskGb": {"type": "integer", "minimum": 1, "default": MIN_WORKER["diskGb"]},
    "controlPlaneMinCpus": {"type": "integer", "minimum": 1, "default": MIN_CONTROL_PLANE["cpus"]},
    "controlPlaneMinMemoryGb": {"type": "integer", "minimum": 1, "default": MIN_CONTROL_PLANE["memoryGb"]},
    "controlPlaneMinDiskGb": {"type": "integer", "minimum": 1, "default": MIN_CONTROL_PLANE["diskGb"]},
})

_ROLE_KEYS = {"worker": "worker", "control-plane": "controlPlane"}


def check_vm_sizing(args, report_violation) -> None:
    """Workers have at least 4 vCPU, 24 GB memory and a 50 GB disk; control-plane VMs at least 4 vCPU, 16 GB
    and 50 GB. NVIDIA RDG for vSphere PVRDMA gives these as the starting size for Kubernetes
    nodes on vSphere; smaller nodes may not fit the GPU workloads."""
    cfg = settings(args, SIZING_SCHEMA)
    for vm in lab_vms(stack_resources(args)):
        prefix = _ROLE_KEYS.get(vm.role)
        if prefix is None:
            continue
        wants = (
            ("vCPUs", vm.cpus, int(cfg[f"{prefix}MinCpus"]), ""),
            ("memory", vm.memory_mib, int(cfg[f"{prefix}MinMemoryGb"]) * 1024, " MiB"),
            ("system disk", vm.disk_gb, int(cfg[f"{prefix}MinDiskGb"]), " GB"),
        )
        short = [f"{what} {have}{unit} < {need}{unit}" for what, have, need, unit in wants
                 if isinstance(have, int) and have < need]
        if short:
            report_violation(f"{vm.role} VM {vm.name!r} is below the guide's sizing: {', '.join(short)}", vm.urn)


vm_sizing = stack_policy("vsphere-vm-sizing", ADVISORY, check_vm_sizing, SIZING_SCHEMA)


# ---------------------------------------------------------------- identical workers


def check_workers_identical(args, report_violation) -> None:
    """All worker VMs are identical: same vCPUs, memory, vGPU profile and NIC layout. NVIDIA RDG for vSphere
    PVRDMA requires every worker node to have the same configuration; distributed training
    spreads equal shares of work over the workers and waits for the slowest."""
    workers = [vm for vm in lab_vms(stack_resources(args)) if vm.role == "worker"]
    if len(workers) < 2:
        return
    first = workers[0]
    fields = (
        ("vCPUs", lambda v: v.cpus),
        ("memory MiB", lambda v: v.memory_mib),
        ("vGPU profile", lambda v: v.vgpu_profile),
        ("NIC layout", lambda v: v.nic_types),
    )
    for vm in workers[1:]:
        diffs = []
        for what, get in fields:
            mine, theirs = get(vm), get(first)
            if _comparable(mine) and _comparable(theirs) and mine != theirs:
                diffs.append(f"{what} {mine} vs {theirs}")
        if diffs:
            report_violation(f"worker {vm.name!r} differs from {first.name!r}: {'; '.join(diffs)}", vm.urn)


def _comparable(v: Any) -> bool:
    if isinstance(v, list):
        return all(known(x) for x in v)
    return v is not UNKNOWN


workers_identical = stack_policy("vsphere-workers-identical", MANDATORY, check_workers_identical)


POLICIES = [pvrdma_hardware_version, nic_adapter_type, vgpu_memory_reserved, vm_sizing, workers_identical]
