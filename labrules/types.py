"""The lab's component type tokens (`gpu-lab:<section>:<Name>`) and the dynamic resource kinds the
policy pack reads, each written here once.

The engine records a component by its type token (it is part of every child's URN), the program
registers each component under it (components/), and the policy pack finds the components by it
(policies/rules/). Renaming one orphans a running lab's state: the engine would replace the component
and every child, so these strings are the wire format, not a style.
"""

from __future__ import annotations

# The RoCE vDS, its port groups and the worker hosts' PVRDMA settings (components/vsphere/fabric.py).
ROCE_FABRIC = "gpu-lab:vsphere:RoceFabric"
# The control-plane, bootstrap and vGPU worker VMs and their rolls (components/vsphere/vms.py).
LAB_VMS = "gpu-lab:vsphere:LabVms"
# One NVIDIA Spectrum switch configured for RoCE over SSH (components/switch/component.py).
SPECTRUM_SWITCH = "gpu-lab:switch:SpectrumSwitch"
# The OpenShift UPI install: helper node, load balancer, installer (components/openshift/component.py).
OPENSHIFT_UPI = "gpu-lab:openshift:OpenShiftUpi"
# The cluster's nodes after the install: adding and removing workers (components/openshift/component.py).
CLUSTER_NODES = "gpu-lab:openshift:ClusterNodes"
# Everything installed on the running cluster: operators, RDMA networks, jobs (components/addons/component.py).
CLUSTER_ADDONS = "gpu-lab:addons:ClusterAddons"

# The `kind` input of the lab's pyvmomi dynamic resources (pulumi-python:dynamic:Resource): how the pack,
# make diff and the benchmarks tell them apart. Like a token, a kind is in every recorded state.
# A VM's roll: its size, vGPU and hardware version, changed with the node drained (components/dynamic/roll.py).
VM_ROLL_KIND = "vsphere-vm-roll"
# An ESXi advanced option, e.g. Net.PVRDMAVmknic (components/dynamic/host_settings.py).
HOST_ADVANCED_OPTION_KIND = "vsphere-host-advanced-option"
# An ESXi firewall ruleset, e.g. pvrdma (components/dynamic/host_settings.py).
HOST_FIREWALL_RULESET_KIND = "vsphere-host-firewall-ruleset"
