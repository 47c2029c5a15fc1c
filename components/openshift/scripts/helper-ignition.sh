#!/bin/sh
# On the helper node: publish or withdraw one ignition file on the HTTP server.
# install: the file arrives on stdin and is put in place readable by the web server's group only
# (it holds certificates; bootstrap.ign also the pull secret), through a private file under
# STAGING_DIR that is removed on every exit.
# remove: the file leaves the web root.

set -eu
: "${ACTION?install or remove}"
: "${USE_SUDO?yes: run the privileged commands through sudo -n; no: run them as they are}"
: "${STAGING_DIR?where a private copy is made, and removed again}"
: "${HTTP_ROOT?the document root of the HTTP server}"
: "${FILE_NAME?the name of the file under HTTP_ROOT}"
: "${WEB_GROUP?the group the HTTP server reads files as}"

# shellcheck source-path=SCRIPTDIR
. ./include/as-root.sh

case "$ACTION" in
    install)
        umask 077
        mkdir -p "$STAGING_DIR"
        copy=$(mktemp "$STAGING_DIR/ign.XXXXXX")
        trap 'rm -f "$copy"' EXIT
        cat > "$copy"
        # a copy an earlier gpu-lab left staged
        rm -f "$STAGING_DIR/$FILE_NAME"
        as_root install -D -m 0640 -o root -g "$WEB_GROUP" "$copy" "$HTTP_ROOT/$FILE_NAME"
        # the guide: files served by httpd need its SELinux label
        if command -v restorecon >/dev/null 2>&1; then as_root restorecon "$HTTP_ROOT/$FILE_NAME"; fi
        ;;
    remove)
        as_root rm -f "$HTTP_ROOT/$FILE_NAME"
        ;;
    *) echo "ACTION is '$ACTION', not install or remove" >&2; exit 2 ;;
esac
