"""OpenShift 4 UPI: control plane and load balancer.

The OpenShift guide: NVIDIA and Red Hat, GPU Support for AI Workloads in Red Hat OpenShift 4,
https://developer.nvidia.com/blog/gpu-support-for-ai-workloads-in-red-hat-openshift-4/
"""

from __future__ import annotations

# Three control-plane nodes keep etcd's quorum through one failure and let them upgrade one at a
# time (single-node clusters are the documented exception).
CONTROL_PLANE_NODES = 3

# The ports the cluster's load balancer fronts (the guide's HAProxy): API, machine config server,
# HTTP and HTTPS ingress.
API_PORT = 6443
MACHINE_CONFIG_PORT = 22623
HTTP_PORT = 80
HTTPS_PORT = 443
LOAD_BALANCER_PORTS = (API_PORT, MACHINE_CONFIG_PORT, HTTP_PORT, HTTPS_PORT)

# How long a node's drain (`oc adm drain --timeout`) may take before a VM's roll or a node's removal
# stops, unless gpu-lab:openshift.drainTimeoutS says otherwise: the section's default, the removal
# script's, and the roll's for a roll recorded before it carried its own (components/dynamic/roll.py,
# whose provider process loads no config model, reads it here).
NODE_DRAIN_TIMEOUT_S = 900

# The oc binary the lab runs (CSR approval, a node's drain), by name on PATH, unless
# gpu-lab:openshift.oc says otherwise: the section's default, the lab plan's for a lab without the
# section (components/lab_plan.py), and the roll's for a roll recorded without one
# (components/dynamic/roll.py, whose provider process loads no config model, reads it here).
DEFAULT_OC = "oc"
