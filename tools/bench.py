"""`make bench`: the offline plan on generated labs of 4, 64 and 512 workers.

Each lab is the lab stack scaled (OpenShift, switch and add-ons included): four workers per
worker host, RDMA and management networks widened to /16. Prints resources registered and wall-clock seconds of the program run under
mocks (config validation included), best of `--repeat` runs.
"""

from __future__ import annotations

import argparse
import copy
import ipaddress
import sys
import time

from tools.mockrun import run_program, stack_config

WORKERS_PER_HOST = 4


def scaled_lab(workers: int) -> dict:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4,64,512")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"{'workers':>8} {'hosts':>6} {'resources':>10} {'seconds':>8}")
    for size in (int(s) for s in args.sizes.split(",")):
        config = scaled_lab(size)
        best = float("inf")
        for _ in range(args.repeat):
            started = time.perf_counter()
            run = run_program(config, stack=f"bench{size}")
            best = min(best, time.perf_counter() - started)
        hosts = len(config["gpu-lab:vsphere"]["workerHosts"])
        print(f"{size:>8} {hosts:>6} {len(run.resources):>10} {best:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
