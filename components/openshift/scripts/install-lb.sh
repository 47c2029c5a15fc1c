#!/bin/sh
# On the helper node: check the staged haproxy.cfg, put it in place, reload HAProxy.

set -eu
: "${USE_SUDO?yes: run the privileged commands through sudo -n; no: run them as they are}"
: "${STAGING_DIR?where the files were copied to}"
: "${HAPROXY_CFG?the HAProxy config file to replace}"

as_root() {
    case "$USE_SUDO" in
        yes) sudo -n "$@" ;;
        no) "$@" ;;
        *) echo "USE_SUDO is '$USE_SUDO', not yes or no" >&2; exit 2 ;;
    esac
}

as_root haproxy -c -f "$STAGING_DIR/haproxy.cfg"
as_root install -D -m 0644 "$STAGING_DIR/haproxy.cfg" "$HAPROXY_CFG"
# SELinux keeps HAProxy off 6443/22623 unless allowed
if command -v selinuxenabled >/dev/null 2>&1 && selinuxenabled; then as_root setsebool -P haproxy_connect_any 1; fi
as_root systemctl enable haproxy
as_root systemctl reload-or-restart haproxy
