#!/usr/bin/env bash
# Build lab-vcsim (simulator/: govmomi's vCenter simulator extended with what the program calls,
# docs/engine.md) into build/bin/lab-vcsim, for the vSphere tests, engine-sim and sim-preview.
#
# govmomi is a Go module dependency pinned in simulator/go.mod (checksums in go.sum) and comes
# through the Go module proxy; nothing else is downloaded. `go build` is incremental: with
# current sources and a warm build cache a rerun takes about a second.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ROOT}/build/bin/lab-vcsim"

if ! command -v go >/dev/null 2>&1; then
    echo "install-vcsim: 'go' is not on PATH; install Go >= 1.25 first (simulator/go.mod)" >&2
    exit 1
fi

mkdir -p "$(dirname "${BIN}")"
# -p 1: the machine's two cores are shared. -mod=readonly: go.mod and go.sum are the pins.
(cd "${ROOT}/simulator" && GOFLAGS="${GOFLAGS:-} -p=1 -mod=readonly" go build -trimpath -o "${BIN}" .)
echo "install-vcsim: ${BIN} ($(cd "${ROOT}/simulator" && go list -m -f '{{.Path}} {{.Version}}' github.com/vmware/govmomi))"
