#!/bin/sh
# Take a node out of the cluster before its machine goes: cordon, drain (daemon sets stay,
# emptyDir data goes, PodDisruptionBudgets are respected, nothing is forced) and delete the Node
# object. The cluster's admin kubeconfig arrives on stdin (kept in a private file removed on exit).
# Fails closed: a cluster that does not answer stops the removal (exit 1) before the machine goes,
# since it cannot say whether the node still runs pods; only an answering cluster that does not
# list the node means there is nothing to take out. GPU_LAB_CLUSTER_GONE=1 in the environment of
# `pulumi up` says the cluster is really gone. A drain that fails exits non-zero too, with the node
# still in the cluster, so the delete of its machine (which waits for this one) does not run.

# -e and -u; pipefail is not POSIX sh (pulumi-command runs this with /bin/sh), and the script has
# no pipeline whose failure it could hide.
set -eu
: "${OC?oc as a command name or a path}"
: "${NODE_NAMES?the name of the node, short and fully qualified, blank-separated}"
: "${DRAIN_TIMEOUT_S?seconds the drain may take before it fails}"

command -v "$OC" >/dev/null 2>&1 || { echo "oc not found as '$OC': set gpu-lab:openshift.oc" >&2; exit 127; }
umask 077
KUBECONFIG=$(mktemp)
trap 'rm -f "$KUBECONFIG"' EXIT
cat > "$KUBECONFIG"
export KUBECONFIG
if [ "${GPU_LAB_CLUSTER_GONE:-}" = 1 ]; then
    echo "GPU_LAB_CLUSTER_GONE=1: the cluster is not asked; node $NODE_NAMES is not drained" >&2
    exit 0
fi
if ! said=$("$OC" --request-timeout=30s get nodes -o name 2>&1 >/dev/null); then
    echo "the cluster does not answer (${said##*
}): node $NODE_NAMES is not drained, and its machine is not touched. Renew the kubeconfig or bring" \
         "the API server back, then pulumi up; only for a cluster that is really gone:" \
         "GPU_LAB_CLUSTER_GONE=1 pulumi up" >&2
    exit 1
fi
for node in $NODE_NAMES; do
    if "$OC" --request-timeout=30s get node "$node" -o name > /dev/null 2>&1; then
        "$OC" adm cordon "$node" >&2
        if ! "$OC" adm drain "$node" --ignore-daemonsets --delete-emptydir-data \
                --timeout="${DRAIN_TIMEOUT_S}s" >&2; then
            echo "node $node could not be drained within ${DRAIN_TIMEOUT_S} s (a PodDisruptionBudget, or a pod no" \
                 "controller recreates): it stays in the cluster, cordoned, and its machine is not touched." \
                 "Move or delete those pods (or raise openshift.drainTimeoutS) and run pulumi up again;" \
                 "to keep the node instead, put it back in the stack and run oc adm uncordon $node" >&2
            exit 1
        fi
        "$OC" delete node "$node" >&2
        echo "node $node drained and deleted"
        exit 0
    fi
done
echo "no node $NODE_NAMES in the cluster; nothing to drain" >&2
