"""The generated labs `make bench` measures: the lab stack scaled to N workers.

Shared by tools/bench/program.py (the driver and its measurements) and tools/bench/floor.py (which
records the program's registrations on the same labs), so neither imports the other.
"""

from __future__ import annotations

import copy
import ipaddress

WORKERS_PER_HOST = 4


def scaled_lab(workers: int) -> dict:
    from tools.mockrun import stack_config

    config = copy.deepcopy(stack_config("lab"))
    vs = config["gpu-lab:vsphere"]
    hosts = max(1, -(-workers // WORKERS_PER_HOST))
    vs["workerHosts"] = [{"name": f"esx{i + 1:03d}", "rdmaUplinks": ["vmnic4"]} for i in range(hosts)]
    vs["networks"]["rdma"]["cidr"] = "192.168.0.0/16"
    vs["networks"]["management"]["vmCidr"] = "172.16.0.0/16"
    vs["networks"]["management"]["hostCidr"] = "172.17.0.0/16"
    vs["vmkAddresses"] = {"first": "192.168.0.10"}
    vs["workers"]["names"] = [f"gpuw{i + 1:04d}" for i in range(workers)]
    vs["workers"]["rdmaAddresses"] = {"first": str(ipaddress.IPv4Address("192.168.16.1"))}
    vs["workers"]["managementAddresses"] = {"first": "172.16.16.1"}
    openshift = config.get("gpu-lab:openshift")
    if openshift:
        openshift["networks"]["machineNetwork"] = [vs["networks"]["management"]["vmCidr"]]
        openshift["networks"]["clusterNetwork"] = {"cidr": "10.128.0.0/12", "hostPrefix": 23}
    addons = config.get("gpu-lab:addons")
    if addons and addons.get("network"):
        addons["network"]["podPool"] = "192.168.128.0/18"  # room for every worker's pods
    return config
