"""vSphere: the RoCE vDS, PVRDMA and the VMs, as the RDG and pulumi-vsphere require.

The RDG: NVIDIA, RDG for Kubernetes Cluster Deployment for ML and HPC Workloads with NVIDIA GPU
Virtualization and VMware PVRDMA Technologies,
https://docs.nvidia.com/networking/display/public/sol/rdg+for+kubernetes+cluster+deployment+for+ml+and+hpc+workloads+with+nvidia+gpu+virtualization+and+vmware+pvrdma+technologies
"""

from __future__ import annotations

# The RDG's RDMA network, vDS and vmk use MTU 9000: the MTU the lab gives every hop of its RDMA
# network unless the stack says otherwise (the vSphere section's defaults, the bare-metal hosts'
# RoCE ports, the pods' RDMA networks).
RDMA_MTU = 9000
# RoCE needs jumbo frames end to end, so no hop may be below the RDG's MTU: the least the program's
# config check and the policy pack's minMtu default allow (a stack may raise an MTU, up to the
# switches' roce.SWITCH_MAX_MTU). The floor is the RDG's MTU itself, not a second number.
RDMA_MIN_MTU = RDMA_MTU

# Link aggregation on RDMA uplinks: never. The DeepOps RoCE guide (NVIDIA DeepOps, High-Performance
# RoCE Implementation in Multi-Node Kubernetes Cluster,
# https://github.com/NVIDIA/deepops/blob/master/docs/k8s-cluster/roce-perf-k8s.md): link bundles
# across NICs do not work well with RoCE; each RDMA NIC gets its own subnet instead.
LACP_ALLOWED_ON_RDMA_UPLINKS = False

# PVRDMA: the RDMA card is the vDS's only uplink on each host (the RDG; one NIC per subnet).
RDMA_UPLINKS_PER_HOST = 1

# VM sizing minimums, the RDG's "Virtual Machine Configuration" (keys as in the config and the
# policy pack's settings).
MIN_WORKER = {"cpus": 4, "memoryGb": 24, "diskGb": 50}
MIN_CONTROL_PLANE = {"cpus": 4, "memoryGb": 16, "diskGb": 50}
# OpenShift's documented bootstrap machine minimum (OpenShift Container Platform 4, "Installing a
# cluster on bare metal", minimum resource requirements).
MIN_BOOTSTRAP = {"cpus": 4, "memoryGb": 16, "diskGb": 100}

# PVRDMA needs virtual hardware 13 or later (VMware vSphere Networking, "PVRDMA Support":
# https://docs.vmware.com/en/VMware-vSphere/8.0/vsphere-networking/GUID-4A5EBD44-FB1E-4A83-BB47-BBC65181E1C2.html).
PVRDMA_MIN_HARDWARE_VERSION = 13
# pulumi-vsphere 4.18.2 accepts 4, 7-11, 13-15, 17-22 (pulumi_vsphere/virtual_machine.py,
# hardware_version) and refuses to downgrade a VM (terraform-provider-vsphere,
# vsphere/internal/helper/virtualmachine/virtual_machine_helper.go, ValidateHardwareVersion):
# the versions a PVRDMA VM may be set to.
HARDWARE_VERSIONS = tuple(v for v in (4, 7, 8, 9, 10, 11, 13, 14, 15, *range(17, 23))
                          if v >= PVRDMA_MIN_HARDWARE_VERSION)

# PVRDMA needs a vDS of version 6.5.0 or later (VMware vSphere Networking, "PVRDMA Support");
# the versions from there on that pulumi-vsphere can create (terraform-provider-vsphere,
# vsphere/distributed_virtual_switch_helper.go, dvsVersions).
VDS_MIN_VERSION = (6, 5, 0)
VDS_VERSIONS = ("6.5.0", "6.6.0", "7.0.0", "7.0.2", "7.0.3", "8.0.0", "8.0.3")

# pulumi-vsphere's network_interface.adapter_type validator accepts exactly these
# (terraform-provider-vsphere, vsphere/internal/virtualdevice/virtual_machine_network_interface_subresource.go,
# networkInterfaceSubresourceTypeAllowedValues). The PVRDMA adapter is "vmxnet3vrdma", although the
# provider's description text says "vrdma"; the management NIC is vmxnet3, as in the RDG.
VM_ADAPTER_TYPES = ("e1000", "e1000e", "sriov", "vmxnet3", "vmxnet3vrdma")
PVRDMA_ADAPTER = "vmxnet3vrdma"
MANAGEMENT_ADAPTER = "vmxnet3"


def vds_version_supports_pvrdma(version: str) -> bool:
    """'6.6.0' -> True; a vDS before 6.5.0 has no PVRDMA."""
    return tuple(int(x) for x in version.split(".")) >= VDS_MIN_VERSION

# vSphere 8.0 configuration maximums per VM (VMware, "Configuration Maximums", vSphere 8.0, Virtual
# Machine Maximums: virtual CPUs per virtual machine 768, RAM per virtual machine 24 TB;
# https://configmax.broadcom.com/guest?vmwareproduct=vSphere&release=vSphere%208.0&categories=1-0).
MAX_VCPUS = 768
MAX_MEMORY_GB = 24 * 1024
