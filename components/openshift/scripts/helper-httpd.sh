#!/bin/sh
# On the helper node: install or remove the httpd drop-in that serves each ignition file only to
# the nodes of its role.
# install: the drop-in arrives on stdin as a line "access.conf <base64>", is put in place, checked
# with `apachectl configtest` (the previous one put back if the check fails) and httpd reloads;
# an unchanged drop-in reloads nothing. The private directory under STAGING_DIR goes on every exit.
# remove: the drop-in goes and httpd reloads.

set -eu
: "${ACTION?install or remove}"
: "${USE_SUDO?yes: run the privileged commands through sudo -n; no: run them as they are}"
: "${STAGING_DIR?where a private directory is made, and removed again}"
: "${DROP_IN?the drop-in file in the httpd configuration directory}"

# shellcheck source-path=SCRIPTDIR
. ./include/as-root.sh

# shellcheck source-path=SCRIPTDIR
. ./include/unpack.sh

case "$ACTION" in
    install)
        umask 077
        mkdir -p "$STAGING_DIR"
        work=$(mktemp -d "$STAGING_DIR/httpd.XXXXXX")
        trap 'rm -rf "$work"' EXIT
        unpack "$work"
        if as_root cmp -s "$work/access.conf" "$DROP_IN"; then
            echo "httpd drop-in unchanged"
            exit 0
        fi
        if as_root test -f "$DROP_IN"; then as_root cp -p "$DROP_IN" "$work/previous.conf"; fi
        as_root install -D -m 0644 "$work/access.conf" "$DROP_IN"
        if ! as_root apachectl configtest; then
            if [ -f "$work/previous.conf" ]; then
                as_root install -m 0644 "$work/previous.conf" "$DROP_IN"
            else
                as_root rm -f "$DROP_IN"
            fi
            echo "httpd refused the ignition access rule; the previous one is in force" >&2
            exit 1
        fi
        as_root systemctl reload httpd
        ;;
    remove)
        as_root rm -f "$DROP_IN"
        as_root systemctl reload httpd
        ;;
    *) echo "ACTION is '$ACTION', not install or remove" >&2; exit 2 ;;
esac
