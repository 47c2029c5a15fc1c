#!/usr/bin/env bash
# Debian packages the switch tests need: OpenSSH's server and client for the end-to-end test
# (tests/switch/test_switch_ssh.py starts its own sshd on a 127.0.0.1 port; the system service is
# not started or enabled here). Idempotent: installs only what is missing, through apt-get.
set -euo pipefail

PACKAGES=(openssh-server openssh-client)

missing=()
for pkg in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "${pkg}" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("${pkg}")
    fi
done

if ((${#missing[@]} == 0)); then
    echo "install-switch-test-tools: ${PACKAGES[*]} already installed"
    exit 0
fi

SUDO=""
if [[ "$(id -u)" != 0 ]]; then
    SUDO="sudo"
fi
echo "install-switch-test-tools: installing ${missing[*]} ..."
${SUDO} apt-get update -qq
# The package may start the system sshd on a full system; the tests never use it.
DEBIAN_FRONTEND=noninteractive ${SUDO} apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-switch-test-tools: installed ${missing[*]}"
