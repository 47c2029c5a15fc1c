#!/usr/bin/env bash
# OpenSSH's server and client for the tests that talk SSH (tests/sshd_server.py starts its own
# sshd on a 127.0.0.1 port for the switch end-to-end and host-key tests; the system service is
# not started or enabled here).
# Checks for the tools themselves; installs what is missing with apt-get, which needs root or
# sudo; without apt-get it names the packages and stops. Idempotent.
set -euo pipefail

declare -A PACKAGES=([sshd]=openssh-server [ssh]=openssh-client [ssh-keygen]=openssh-client
                     [ssh-keyscan]=openssh-client)

missing=()
for tool in "${!PACKAGES[@]}"; do
    if ! command -v "$tool" >/dev/null 2>&1 && [[ ! -x "/usr/sbin/$tool" ]]; then
        [[ " ${missing[*]-} " == *" ${PACKAGES[$tool]} "* ]] || missing+=("${PACKAGES[$tool]}")
    fi
done

if ((${#missing[@]} == 0)); then
    echo "install-switch-test-tools: sshd, ssh, ssh-keygen and ssh-keyscan present"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-switch-test-tools: missing ${missing[*]} (Debian package names); this host has no apt-get:" \
         "install them with its package manager, then rerun" >&2
    exit 2
fi
SUDO=""
if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "install-switch-test-tools: installing ${missing[*]} needs root" >&2; exit 2; }
    SUDO="sudo"
fi
echo "install-switch-test-tools: installing ${missing[*]}${SUDO:+ with sudo (root needed)} ..."
${SUDO} apt-get update -qq
# The package may start the system sshd on a full system; the tests never use it.
DEBIAN_FRONTEND=noninteractive ${SUDO} apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-switch-test-tools: installed ${missing[*]}"
