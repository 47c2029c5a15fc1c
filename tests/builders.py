"""The tests' own stacks: raw `config:` mappings, as a user writes them in Pulumi.<stack>.yaml.

The real stacks (the Pulumi.<stack>.yaml files at the repository's root) belong to the people who
run the lab and change with it; only tests/test_real_stacks.py reads them. Every other test builds
its input here, so editing the real lab breaks no test but the smoke test of that stack.

Two shapes, each a fresh deep copy per call (tests edit them):

- `lab_stack()`: vSphere with a RoCE fabric, one Spectrum switch, OpenShift UPI on the VMs and the
  Kubernetes add-ons (the shape of the NVIDIA RDG lab), the switch's and the helper's SSH host
  keys pinned;
- `baremetal_stack()`: OpenShift UPI alone on bare-metal nodes booting through PXE (no vSphere).

Names are short and made up (`esx01`, `w01`, `sw01`); tests take them from the constants below.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

PROJECT = "gpu-lab"

# ---------------------------------------------------------------- the lab shape (vSphere)

DATACENTER = "dc1"
CLUSTER = "gpu-cluster"
MANAGEMENT_HOST = "esx00"
WORKER_HOSTS = ["esx01", "esx02", "esx03", "esx04"]
RDMA_UPLINK = "vmnic4"
CONTROL_PLANE = ["m01", "m02", "m03"]
WORKERS = ["w01", "w02", "w03", "w04"]
BOOTSTRAP = "bs01"
SWITCH = "sw01"
VGPU_PROFILE = "grid_v100-16c"
LAB_CLUSTER_NAME = "kub1"
LAB_DOMAIN = "lab.local"
# Pinned SSH host keys (public keys made for the tests; no machine has them).
HELPER_HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK79ltZWuhTxHMYmk8DO9uHbHb9l47NO9mQ/Sl6x0ZK3"
SWITCH_HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMBR2rOnDgTRZ8PVUYsr5EvHWCSvivPSCbkTsbdLspmN"

_LAB: dict[str, Any] = {
    "vsphere:vsphereServer": "vc1.lab.local",
    "vsphere:user": "administrator@vsphere.local",
    "vsphere:allowUnverifiedSsl": "true",
    "gpu-lab:vsphere": {
        "datacenter": DATACENTER,
        "cluster": CLUSTER,
        "datastore": "vsanDatastore",
        "template": "rhcos-template",
        "managementHost": MANAGEMENT_HOST,
        "workerHosts": [{"name": h, "rdmaUplinks": [RDMA_UPLINK]} for h in WORKER_HOSTS],
        "vmkAddresses": {"first": "192.168.0.24"},
        "networks": {
            "management": {"hostCidr": "172.16.31.0/24", "vmCidr": "172.16.7.0/24",
                           "portGroup": "lab-management", "vlan": 7},
            "rdma": {"cidr": "192.168.0.0/24", "portGroup": "lab-rdma", "vlan": 0, "mtu": 9000,
                     "pfcPriority": 3, "trust": "dscp"},
        },
        "vds": {"name": "lab-roce-vds", "version": "6.6.0", "mtu": 9000, "lacp": False},
        "controlPlane": {
            "names": list(CONTROL_PLANE),
            "sizing": {"cpus": 4, "memoryGb": 16, "diskGb": 50},
            "managementAddresses": {"first": "172.16.7.11"},
        },
        "workers": {
            "names": list(WORKERS),
            "sizing": {"cpus": 4, "memoryGb": 24, "diskGb": 50},
            "managementAddresses": {"first": "172.16.7.51"},
            "rdmaAddresses": {"first": "192.168.0.51"},
            "vgpuProfile": VGPU_PROFILE,
        },
        "bootstrap": {
            "name": BOOTSTRAP,
            "sizing": {"cpus": 4, "memoryGb": 16, "diskGb": 100},
            "managementAddress": "172.16.7.10",
        },
    },
    "gpu-lab:switches": [{
        "name": SWITCH,
        "os": "onyx",
        "managementAddress": "172.16.31.2",
        "user": "admin",
        "hostKey": SWITCH_HOST_KEY,
        "connectTimeoutSeconds": 10,
        "ports": {"hosts": ["1/1", "1/2", "1/3", "1/4"]},
        "roce": {"trafficClass": 3, "ecnMinKb": 150, "ecnMaxKb": 1500, "pfcMode": "lossless",
                 "pfcPriority": 3, "trust": "dscp", "mtu": 9216, "bufferKb": 16384},
    }],
    "gpu-lab:openshift": {
        "clusterName": LAB_CLUSTER_NAME,
        "baseDomain": LAB_DOMAIN,
        "platform": "none",
        "networks": {"machineNetwork": ["172.16.7.0/24"]},
        "helper": {"address": "172.16.7.5", "user": "root", "hostKey": HELPER_HOST_KEY},
        "bootstrap": True,
        "approveCsrs": True,
    },
    "gpu-lab:addons": {
        "nfd": {"enabled": True},
        "gpuOperator": {"enabled": True, "vgpu": {"repository": "registry.lab.local:5000/nvidia"},
                        "licensing": {"mode": "nls"}},
        "network": {"enabled": True, "mode": "pvrdma", "interface": "ens224", "podPool": "192.168.0.128/26"},
        "mpiOperator": {"enabled": True},
        "jobs": {"nvidiaSmi": True, "ibWriteBw": True, "ibWriteBwAddresses": ["192.168.0.201", "192.168.0.202"],
                 "ncclRdma": True, "ncclTcp": True, "horovodRdma": True, "horovodTcp": True},
        "bitfusion": {"enabled": False},
    },
}

# ---------------------------------------------------------------- the bare-metal shape (no vSphere)

METAL_CLUSTER_NAME = "pod1"
METAL_DOMAIN = "nvidia.com"
METAL_BOOTSTRAP = "bootstrap"
METAL_CONTROL_PLANE = ["cp-0", "cp-1", "cp-2"]
METAL_WORKERS = ["dgx-0", "dgx-1"]

_BAREMETAL: dict[str, Any] = {
    "gpu-lab:openshift": {
        "clusterName": METAL_CLUSTER_NAME,
        "baseDomain": METAL_DOMAIN,
        "platform": "none",
        "networkType": "OVNKubernetes",
        "networks": {
            "clusterNetwork": {"cidr": "10.128.0.0/14", "hostPrefix": 23},
            "serviceNetwork": "172.30.0.0/16",
            "machineNetwork": ["10.33.3.0/24"],
        },
        "helper": {"address": "10.33.3.18", "user": "root", "loadBalancerAddress": "10.33.3.54", "httpPort": 8080},
        "installDevice": "/dev/vda",
        "nodes": [
            {"name": METAL_BOOTSTRAP, "role": "bootstrap", "address": "10.33.3.53"},
            {"name": METAL_CONTROL_PLANE[0], "role": "control-plane", "address": "10.33.3.50"},
            {"name": METAL_CONTROL_PLANE[1], "role": "control-plane", "address": "10.33.3.51"},
            {"name": METAL_CONTROL_PLANE[2], "role": "control-plane", "address": "10.33.3.52"},
            {"name": METAL_WORKERS[0], "role": "worker", "address": "10.33.3.44", "installDevice": "/dev/sda"},
            {"name": METAL_WORKERS[1], "role": "worker", "address": "10.33.3.46", "installDevice": "/dev/sda"},
        ],
        "rhcos": {
            "kernel": "rhcos/rhcos-live-kernel-x86_64",
            "initramfs": "rhcos/rhcos-live-initramfs.x86_64.img",
            "rootfs": "rhcos/rhcos-live-rootfs.x86_64.img",
        },
        "bootstrap": True,
        "waitForBootstrap": True,
        "waitForInstall": True,
        "approveCsrs": True,
    },
}

SHAPES = {"lab": _LAB, "baremetal": _BAREMETAL}


def lab_stack() -> dict[str, Any]:
    """The lab shape's `config:` mapping ({"namespace:key": value}), a fresh copy."""
    return copy.deepcopy(_LAB)


def baremetal_stack() -> dict[str, Any]:
    """The bare-metal OpenShift shape's `config:` mapping, a fresh copy."""
    return copy.deepcopy(_BAREMETAL)


def stack(shape: str) -> dict[str, Any]:
    """`lab` or `baremetal` by name (for parametrized tests)."""
    return copy.deepcopy(SHAPES[shape])


def sections(config: dict[str, Any]) -> dict[str, Any]:
    """The gpu-lab:<section> values of a config mapping, keyed by section, as load_lab takes them."""
    return {k.split(":", 1)[1]: v for k, v in config.items() if k.startswith(f"{PROJECT}:")}


def with_value(config: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `config` with one key changed: `path` is `namespace:key` then `.`-separated steps,
    list indexes as numbers (`gpu-lab:vsphere.workers.names`, `gpu-lab:switches.0.roce.mtu`)."""
    changed = copy.deepcopy(config)
    key, _, rest = path.partition(".")
    if not rest:
        changed[key] = value
        return changed
    node = changed[key]
    steps = rest.split(".")
    for step in steps[:-1]:
        node = node[int(step)] if isinstance(node, list) else node[step]
    last = steps[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return changed


def stack_yaml(config: dict[str, Any]) -> str:
    """The text of a stack file holding `config`, laid out as a user writes one (short lists and
    mappings of plain values on one line)."""
    return yaml.safe_dump({"config": config}, sort_keys=False, default_flow_style=None, width=120)


def write_stack_file(directory: Path, config: dict[str, Any], stack: str = "test") -> Path:
    """Write Pulumi.<stack>.yaml holding `config` into `directory` (a test's tmp_path); its path."""
    Path(directory).mkdir(parents=True, exist_ok=True)
    path = Path(directory) / f"Pulumi.{stack}.yaml"
    path.write_text(stack_yaml(config))
    return path
