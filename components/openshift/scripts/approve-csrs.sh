#!/bin/sh
# Approve pending CSRs of the configured nodes only, until every one of them has joined.
# The cluster's admin kubeconfig arrives on stdin (kept in a private file removed on exit).
# Kubelet client CSRs come from the node-bootstrapper service account with the node name in
# the request's CN; serving CSRs come from the node itself. Anything else is left alone.

set -u
: "${OC?oc as a command name or a path}"
: "${ALLOWED_NODES?blank-separated names whose CSRs may be approved, short and fully qualified}"
: "${WANTED_NODES?blank-separated names of the nodes that must join}"
: "${CLUSTER_DOMAIN?the cluster name and base domain, dot-joined}"
: "${TIMEOUT_S?seconds before giving up}"
: "${INTERVAL_S?seconds between rounds}"

command -v "$OC" >/dev/null 2>&1 || { echo "oc not found as '$OC': set gpu-lab:openshift.oc" >&2; exit 127; }
umask 077
KUBECONFIG=$(mktemp)
pending=$(mktemp)
trap 'rm -f "$KUBECONFIG" "$pending"' EXIT
cat > "$KUBECONFIG"
export KUBECONFIG
deadline=$(( $(date +%s) + TIMEOUT_S ))
# whole-word equality only: a CN with spaces must not match a run of names
is_allowed() {
    for candidate in $ALLOWED_NODES; do [ "$candidate" = "$1" ] && return 0; done
    return 1
}
while :; do
    approved=0
    "$OC" get csr -o go-template='{{range .items}}{{if not .status}}{{.metadata.name}} {{.spec.username}} {{.spec.request}}{{"\n"}}{{end}}{{end}}' > "$pending" 2>/dev/null || :
    while read -r name user request; do
        case "$user" in
            system:node:*) node=${user#system:node:} ;;
            system:serviceaccount:openshift-machine-config-operator:node-bootstrapper)
                node=$(printf '%s' "$request" | openssl base64 -d -A \
                    | openssl req -noout -subject -nameopt RFC2253 2>/dev/null \
                    | sed -n 's/.*CN=system:node:\([^,]*\).*/\1/p') ;;
            *) continue ;;
        esac
        if is_allowed "$node"; then
            if "$OC" adm certificate approve "$name" >&2; then approved=$((approved + 1)); fi
        else
            echo "leaving CSR $name of '$node' pending: not a configured node" >&2
        fi
    done < "$pending"
    joined=$("$OC" get nodes -o name 2>/dev/null || :)
    missing=""
    for n in $WANTED_NODES; do
        if ! printf '%s\n' "$joined" | grep -qx -e "node/$n" -e "node/$n.$CLUSTER_DOMAIN"; then
            missing="$missing $n"
        fi
    done
    if [ -z "$missing" ] && [ "$approved" -eq 0 ]; then
        echo "every configured node has joined"
        exit 0
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
        echo "timed out; nodes not joined:$missing" >&2
        exit 1
    fi
    sleep "$INTERVAL_S"
done
