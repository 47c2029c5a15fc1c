#!/usr/bin/env bash
# The tools the test suite needs beyond the Python lock: Debian packages, lab-vcsim (Go,
# scripts/install-vcsim.sh builds it from simulator/) and the test cluster's binaries (Go,
# scripts/install-kubecluster.sh: about 10 min cold, seconds with a warm Go build cache) and Helm's
# renderer, build/bin/chart-render (Go, `make chartrender`, mk/chartrender.mk).
# Checks for each tool itself (command -v), not for a package; installs only what is missing.
# Installing needs root, or sudo for apt-get; without apt-get it lists what to install and stops.
# Idempotent; a second run only checks.
#
# --no-apt (`make test-user`): no Debian package and no root; only lab-vcsim, the test cluster and
# chart-render are built. A test whose Debian tool is missing then skips, and pytest names it and the tool.
set -euo pipefail
cd "$(dirname "$0")/.."

NO_APT=false
case "${1-}" in
    "") ;;
    --no-apt) NO_APT=true ;;
    *) echo "usage: install-test-tools.sh [--no-apt]" >&2; exit 2 ;;
esac

# the Go builds, which need no root; the area installers after them use apt-get
GO_BUILDS=(scripts/install-vcsim.sh scripts/install-kubecluster.sh)
# Helm's renderer for the tests that render the pinned charts (mk/chartrender.mk; seconds when built)
chart_render() { make --no-print-directory chartrender; }
APT_INSTALLERS=(scripts/install-openshift-test-tools.sh scripts/install-switch-test-tools.sh)

if "$NO_APT"; then
    echo "install-test-tools: --no-apt: no Debian package is installed; a test whose tool is missing is skipped"
    for installer in "${GO_BUILDS[@]}"; do
        bash "$installer"
    done
    chart_render
    exit 0
fi

# tool -> Debian package (sshd and dnsmasq/haproxy live in /usr/sbin, off a non-login PATH)
declare -A PACKAGES=(
    [haproxy]=haproxy
    [dnsmasq]=dnsmasq-base
    [sshd]=openssh-server
    [ssh]=openssh-client
    [dig]=bind9-dnsutils
    [shellcheck]=shellcheck
)

missing=()
for tool in "${!PACKAGES[@]}"; do
    if ! command -v "$tool" >/dev/null 2>&1 && [[ ! -x "/usr/sbin/$tool" ]]; then
        missing+=("${PACKAGES[$tool]}")
    fi
done

if ((${#missing[@]})); then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "install-test-tools: missing ${missing[*]} (Debian package names); this host has no apt-get:" \
             "install them with its package manager, then rerun" >&2
        exit 2
    fi
    SUDO=""
    if [[ "$(id -u)" -ne 0 ]]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "install-test-tools: installing ${missing[*]} needs root; run as root or install sudo" >&2
            exit 2
        fi
        SUDO=sudo
        echo "install-test-tools: installing ${missing[*]} with sudo apt-get (root needed)"
    else
        echo "install-test-tools: installing ${missing[*]}"
    fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

for installer in "${GO_BUILDS[@]}" "${APT_INSTALLERS[@]}"; do
    [ -f "$installer" ] && bash "$installer"
done
chart_render
