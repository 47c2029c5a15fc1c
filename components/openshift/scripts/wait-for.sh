#!/bin/sh
# `openshift-install wait-for <stage>` in the install dir, with the installer checked first.

set -eu
: "${INSTALL_DIR?the directory the ignition step created}"
: "${INSTALLER?openshift-install as a command name or a path}"
: "${WAIT_STAGE?bootstrap-complete or install-complete}"

command -v "$INSTALLER" >/dev/null 2>&1 || { echo "openshift-install not found as '$INSTALLER'" >&2; exit 127; }
exec "$INSTALLER" --dir "$INSTALL_DIR" wait-for "$WAIT_STAGE"
