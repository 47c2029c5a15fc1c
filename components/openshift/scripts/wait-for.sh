#!/bin/sh
# `openshift-install wait-for <stage>` in the install dir, with the installer checked first.
# The install dir is put back first where it is missing (another machine, a CI runner, a wiped
# build/): the files arrive on stdin as lines "<path under INSTALL_DIR> <base64>", and a file that
# is there already is left as it is.

set -eu
: "${INSTALL_DIR?the directory the ignition step created}"
: "${INSTALLER?openshift-install as a command name or a path}"
: "${WAIT_STAGE?bootstrap-complete or install-complete}"

command -v "$INSTALLER" >/dev/null 2>&1 || { echo "openshift-install not found as '$INSTALLER'" >&2; exit 127; }
umask 077
while read -r rel data; do
    [ -n "$rel" ] || continue
    case "$rel" in /*|*..*) echo "refusing the path '$rel' from stdin" >&2; exit 2 ;; esac
    if [ ! -f "$INSTALL_DIR/$rel" ]; then
        mkdir -p "$INSTALL_DIR/$(dirname "$rel")"
        printf '%s' "$data" | base64 -d > "$INSTALL_DIR/$rel"
    fi
done
exec "$INSTALLER" --dir "$INSTALL_DIR" wait-for "$WAIT_STAGE" </dev/null
