#!/usr/bin/env bash
# Everything the test suite needs beyond the Python lock: Debian packages and Go tools.
# Idempotent; a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(haproxy dnsmasq-base openssh-server openssh-client bind9-dnsutils)
missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "installing Debian packages: ${missing[*]}"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

for installer in scripts/install-vcsim.sh scripts/install-openshift-test-tools.sh scripts/install-switch-test-tools.sh; do
    [ -f "$installer" ] && bash "$installer"
done
