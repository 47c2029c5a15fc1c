#!/bin/sh
# Patch objects of a running cluster: how a changed credential reaches it without a re-install.
# stdin: lines "<name> <base64>", the admin kubeconfig as "kubeconfig" and each patch as JSON,
# unpacked into a private directory that is removed on exit. Each line of PATCHES is
# "<resource> <namespace, or - for a cluster-scoped one> <patch file name>" and becomes an
# `oc patch --type=merge`. A cluster that does not answer fails the step, so the engine keeps
# the old value and the next `pulumi up` tries again.

set -eu
: "${OC?oc as a command name or a path}"
: "${PATCHES?one line per patch: <resource> <namespace or -> <patch file>}"

command -v "$OC" >/dev/null 2>&1 || { echo "oc not found as '$OC': set gpu-lab:openshift.oc" >&2; exit 127; }
umask 077
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
while read -r rel data; do
    [ -n "$rel" ] || continue
    case "$rel" in */*|.*) echo "refusing the name '$rel' from stdin" >&2; exit 2 ;; esac
    printf '%s' "$data" | base64 -d > "$work/$rel"
done
export KUBECONFIG="$work/kubeconfig"
while read -r resource namespace patch; do
    [ -n "$resource" ] || continue
    if [ "$namespace" = - ]; then
        "$OC" --request-timeout=60s patch "$resource" --type=merge --patch-file="$work/$patch" >&2
    else
        "$OC" --request-timeout=60s patch "$resource" -n "$namespace" --type=merge --patch-file="$work/$patch" >&2
    fi
done <<END_OF_PATCHES
$PATCHES
END_OF_PATCHES
