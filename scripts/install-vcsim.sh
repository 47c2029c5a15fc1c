#!/usr/bin/env bash
# Install vcsim (govmomi's vCenter simulator) for the vSphere provider tests.
#
# Pinned to govmomi v0.46.3, the newest release whose module still contains the vcsim
# command. Newer tags exist (v0.56.0 is the newest the proxy serves; its version list here
# shows only v0.18.0), but from v0.47.0 on vcsim/ is a nested module with a `replace ../`
# directive, which `go install module@version` refuses and the module proxy does not serve.
# Everything comes through the Go module proxy (`go install module@version`); nothing else
# is downloaded. Idempotent: an existing binary built from the pinned version is kept.
set -euo pipefail

GOVMOMI_VERSION="v0.46.3"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="${ROOT}/.cache/bin"
VCSIM="${BIN_DIR}/vcsim"

if ! command -v go >/dev/null 2>&1; then
    echo "install-vcsim: 'go' is not on PATH; install Go >= 1.22 first" >&2
    exit 1
fi

# `go version -m` reads the module version recorded in the binary at build time.
if [[ -x "${VCSIM}" ]] && go version -m "${VCSIM}" 2>/dev/null \
        | grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/vmware/govmomi[[:space:]]+${GOVMOMI_VERSION}([[:space:]]|$)"; then
    echo "install-vcsim: ${VCSIM} is already govmomi ${GOVMOMI_VERSION}"
    exit 0
fi

mkdir -p "${BIN_DIR}"
echo "install-vcsim: building vcsim from github.com/vmware/govmomi@${GOVMOMI_VERSION} ..."
# -p 1: the machine's two cores are shared.
GOBIN="${BIN_DIR}" GOFLAGS="${GOFLAGS:-} -p=1" go install "github.com/vmware/govmomi/vcsim@${GOVMOMI_VERSION}"
echo "install-vcsim: installed ${VCSIM} (govmomi ${GOVMOMI_VERSION})"
