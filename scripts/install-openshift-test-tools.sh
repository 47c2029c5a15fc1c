#!/usr/bin/env bash
# Install what tests/openshift needs: HAProxy (haproxy -c and a live proxy on loopback),
# dnsmasq (a live resolver on a loopback port), ignition-validate (Debian's `ignition`),
# grub-script-check (grub-common), dig (bind9-dnsutils, for people debugging), openssl (the
# TLS health-check targets and the CSR script), apache2 (apache2-bin: the server and its modules
# without the apache2 package's service, which would listen on port 80; the ignition access
# rule's test starts its own on loopback), and dnspython in the project venv.
# Debian packages only; the tests start the daemons they need on loopback themselves.
# Idempotent: nothing is installed when every tool is already there. Installing needs root or
# sudo (apt-get); without apt-get it names the packages and stops.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-${ROOT}/.venv/bin/python}"
DNSPYTHON_VERSION="2.7.0"

# tool -> Debian package
declare -A PACKAGES=(
    [haproxy]=haproxy
    [dnsmasq]=dnsmasq-base
    [ignition-validate]=ignition
    [grub-script-check]=grub-common
    [dig]=bind9-dnsutils
    [openssl]=openssl
    [apache2]=apache2-bin
)

missing=()
for tool in "${!PACKAGES[@]}"; do
    # dnsmasq and haproxy live in /usr/sbin, which a non-login PATH may lack
    if ! command -v "$tool" >/dev/null 2>&1 && [[ ! -x "/usr/sbin/$tool" ]]; then
        missing+=("${PACKAGES[$tool]}")
    fi
done

if ((${#missing[@]})); then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "install-openshift-test-tools: missing ${missing[*]} (Debian package names); this host has no" \
             "apt-get: install them with its package manager, then rerun" >&2
        exit 2
    fi
    SUDO=""
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || { echo "install-openshift-test-tools: installing ${missing[*]} needs root" >&2; exit 2; }
        SUDO="sudo"
    fi
    echo "install-openshift-test-tools: installing ${missing[*]}${SUDO:+ with sudo (root needed)}"
    $SUDO apt-get update -q
    # dnsmasq-base and apache2-bin have no service; haproxy's packaged config has no listener
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    echo "install-openshift-test-tools: haproxy, dnsmasq, ignition-validate, grub-script-check, dig, openssl," \
         "apache2 present"
fi

if ! "$PYTHON" -c "import dns.resolver" 2>/dev/null; then
    "$PYTHON" -m pip install -q "dnspython==${DNSPYTHON_VERSION}"
fi
