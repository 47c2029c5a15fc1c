#!/bin/sh
# On the helper node: install or remove the cluster's HAProxy configuration.
# install: haproxy.cfg arrives on stdin as a line "haproxy.cfg <base64>", is checked with
# `haproxy -c` in a private directory under STAGING_DIR (removed on every exit), and replaces the
# live file, whose distribution copy is kept once beside it; HAProxy reloads.
# remove: the distribution copy comes back (HAProxy reloads), or without one HAProxy stops.

set -eu
: "${ACTION?install or remove}"
: "${USE_SUDO?yes: run the privileged commands through sudo -n; no: run them as they are}"
: "${STAGING_DIR?where a private directory for the check is made, and removed again}"
: "${HAPROXY_CFG?the HAProxy config file to replace}"
: "${MARKER?a line every rendered haproxy.cfg carries, to tell it from the one the distribution ships}"

# shellcheck source-path=SCRIPTDIR
. ./include/as-root.sh

# shellcheck source-path=SCRIPTDIR
. ./include/unpack.sh

original="$HAPROXY_CFG.gpu-lab-original"
case "$ACTION" in
    install)
        umask 077
        mkdir -p "$STAGING_DIR"
        work=$(mktemp -d "$STAGING_DIR/lb.XXXXXX")
        trap 'rm -rf "$work"' EXIT
        unpack "$work"
        # a copy an earlier gpu-lab left staged
        rm -f "$STAGING_DIR/haproxy.cfg"
        as_root haproxy -c -f "$work/haproxy.cfg"
        # an update that does not change the file (a rotated login, say) reloads nothing
        if as_root cmp -s "$work/haproxy.cfg" "$HAPROXY_CFG"; then
            echo "haproxy.cfg unchanged"
            exit 0
        fi
        if as_root test -f "$HAPROXY_CFG" && ! as_root test -f "$original" \
                && ! as_root grep -qF -e "$MARKER" "$HAPROXY_CFG"; then
            as_root cp -p "$HAPROXY_CFG" "$original"
        fi
        as_root install -D -m 0644 "$work/haproxy.cfg" "$HAPROXY_CFG"
        # SELinux keeps HAProxy off 6443/22623 unless allowed
        if command -v selinuxenabled >/dev/null 2>&1 && selinuxenabled; then as_root setsebool -P haproxy_connect_any 1; fi
        as_root systemctl enable haproxy
        as_root systemctl reload-or-restart haproxy
        ;;
    remove)
        if as_root test -f "$original"; then
            as_root mv -f "$original" "$HAPROXY_CFG"
            as_root systemctl reload-or-restart haproxy
        else
            as_root rm -f "$HAPROXY_CFG"
            as_root systemctl disable --now haproxy
        fi
        ;;
    *) echo "ACTION is '$ACTION', not install or remove" >&2; exit 2 ;;
esac
