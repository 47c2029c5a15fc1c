#!/bin/sh
# RoCE QoS for a bare-metal node's ConnectX ports, to match the switches' PFC and ECN settings.
# Usage: hosts-baremetal.sh [interface...]   (needs mlnx_qos and cma_roce_tos from MLNX_OFED/DOCA-OFED)
# Without arguments it sets DEFAULT_INTERFACES. Idempotent: every command sets an absolute value.

set -eu
: "${PFC?mlnx_qos --pfc flags: eight comma-separated 0 or 1, priority 0 first}"
: "${TRUST?what the NIC classifies by: dscp or pcp}"
: "${MTU?MTU of the RoCE interfaces}"
: "${TOS?IP ToS byte of RDMA-CM connections}"
: "${DEFAULT_INTERFACES?blank-separated interfaces to set when none are named; may be empty}"
SYSFS="${SYSFS:-/sys}"  # overridable to try the script against a copy of sysfs

if [ "$#" -eq 0 ] && [ -n "$DEFAULT_INTERFACES" ]; then
    # interface names never contain blanks, so splitting the list is safe; no globbing though
    set -f
    # shellcheck disable=SC2086
    set -- $DEFAULT_INTERFACES
    set +f
fi
if [ "$#" -eq 0 ]; then
    echo "hosts-baremetal.sh: name the RoCE interfaces (none are configured on the rails)" >&2
    exit 2
fi

for ifc in "$@"; do
    mlnx_qos -i "$ifc" --pfc "$PFC" --trust "$TRUST"
    ip link set dev "$ifc" mtu "$MTU"
    # RDMA-CM connections take their ToS from the RDMA device behind the interface.
    for dev in "$SYSFS"/class/net/"$ifc"/device/infiniband/*; do
        if [ -e "$dev" ]; then cma_roce_tos -d "${dev##*/}" -t "$TOS"; fi
    done
done
