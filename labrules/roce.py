"""RoCE QoS on the Spectrum switches and the hosts' ConnectX ports.

The DeepOps RoCE guide: NVIDIA DeepOps, High-Performance RoCE Implementation in Multi-Node
Kubernetes Cluster, https://github.com/NVIDIA/deepops/blob/master/docs/k8s-cluster/roce-perf-k8s.md
"""

from __future__ import annotations

# 802.1p priorities: PFC protects one of 0-7 (IEEE 802.1Qbb); the guide uses 3.
PFC_PRIORITY_MIN = 0
PFC_PRIORITY_MAX = 7
DEFAULT_PFC_PRIORITY = 3

# The guide's SN2700 ECN line: traffic class 3, marking from 150 KB to 1500 KB.
DEFAULT_TRAFFIC_CLASS = 3
DEFAULT_ECN_MIN_KB = 150
DEFAULT_ECN_MAX_KB = 1500
# A threshold is a queue depth in KB: 0 would mark from an empty queue.
ECN_MIN_KB_FLOOR = 1

# Standard Ethernet's MTU (IEEE 802.3: a 1500-byte payload): the least MTU a hop may be set to (a switch
# port's mtu, the pack's minMtu), and what vSphere gives a vDS (maxMtu) or a vmk (mtu) that sets none.
ETHERNET_MTU = 1500
# Largest MTU a Spectrum switch port takes (Onyx and Cumulus: 9216).
SWITCH_MAX_MTU = 9216


def ecn_thresholds_positive(min_kb: int, max_kb: int) -> bool:
    return min_kb >= ECN_MIN_KB_FLOOR and max_kb >= ECN_MIN_KB_FLOOR


def ecn_thresholds_ordered(min_kb: int, max_kb: int) -> bool:
    """ECN marking ramps up between the two thresholds, so the minimum must be below the maximum."""
    return min_kb < max_kb


def pfc_priority_valid(priority: int) -> bool:
    return PFC_PRIORITY_MIN <= priority <= PFC_PRIORITY_MAX
