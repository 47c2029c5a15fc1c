#!/usr/bin/env bash
# Build the test cluster's binaries (tests/kube_cluster.py) into build/kubecluster/bin/:
# kube-apiserver, kube-controller-manager, kube-scheduler and kubectl from k8s.io/kubernetes,
# etcd from go.etcd.io/etcd/server/v3, kwok from sigs.k8s.io/kwok.
#
# Each comes from a Go module pinned in kubecluster/ (go.mod, go.sum; one module per project
# because their dependency graphs disagree: kwok needs newer client libraries than kubernetes)
# through the Go module proxy. Nothing else is downloaded, no source is copied into the repo.
# `go build` is incremental: with a warm build cache a rerun only checks (seconds).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="${ROOT}/kubecluster"
BIN="${ROOT}/build/kubecluster/bin"

if ! command -v go >/dev/null 2>&1; then
    echo "install-kubecluster: 'go' is not on PATH; install Go >= 1.26 first (kubecluster/kwok/go.mod)" >&2
    exit 1
fi

KUBE_VERSION="$(cd "${SRC}" && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
KUBE_MINOR="$(echo "${KUBE_VERSION}" | cut -d. -f2)"
# Without the stamp the server says v0.0.0-master and Helm refuses charts that set kubeVersion.
LDFLAGS="-X k8s.io/component-base/version.gitVersion=${KUBE_VERSION}"
LDFLAGS+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${KUBE_MINOR}"
LDFLAGS+=" -X k8s.io/component-base/version.gitTreeState=clean"

mkdir -p "${BIN}"
# nice: the machine's two cores are shared. -mod=readonly: go.mod and go.sum are the pins.
# One `go build` per module, so the four kubernetes commands compile their shared packages once.
export GOFLAGS="${GOFLAGS:-} -mod=readonly"
build() {  # build <module dir> <go build args...>
    local dir="$1"; shift
    (cd "${dir}" && nice -n 10 go build -trimpath -o "${BIN}/" "$@")
}
build "${SRC}" -ldflags "${LDFLAGS}" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
# the etcd server's main package is the module root, whose default binary name would be v3
(cd "${SRC}/etcd" && nice -n 10 go build -trimpath -o "${BIN}/etcd" go.etcd.io/etcd/server/v3)
build "${SRC}/kwok" sigs.k8s.io/kwok/cmd/kwok
# kwok's own pod stages (Running/Ready, Job pods Succeeded, deletions finished) from the pinned
# module, beside the binaries: the harness hands them to kwok with its node stages.
STAGES="${ROOT}/build/kubecluster/kwok-stages"
mkdir -p "${STAGES}"
install -m 0644 "$(cd "${SRC}/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"/kustomize/stage/pod/fast/pod-*.yaml "${STAGES}/"

echo "install-kubecluster: ${BIN}: kubernetes ${KUBE_VERSION}," \
    "etcd $(cd "${SRC}/etcd" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)," \
    "kwok $(cd "${SRC}/kwok" && go list -m -f '{{.Version}}' sigs.k8s.io/kwok)"
