#!/bin/sh
# On the helper node: check the staged dnsmasq config, put it and the hosts file in place,
# restart dnsmasq.

set -eu
: "${USE_SUDO?yes: run the privileged commands through sudo -n; no: run them as they are}"
: "${STAGING_DIR?where the files were copied to}"
: "${HOSTS_FILE?the hosts file dnsmasq reads (addn-hosts)}"
: "${DNSMASQ_CONF?the dnsmasq config file to replace}"

as_root() {
    case "$USE_SUDO" in
        yes) sudo -n "$@" ;;
        no) "$@" ;;
        *) echo "USE_SUDO is '$USE_SUDO', not yes or no" >&2; exit 2 ;;
    esac
}

as_root dnsmasq --test -C "$STAGING_DIR/dnsmasq.conf"
as_root install -D -m 0644 "$STAGING_DIR/hosts.dnsmasq" "$HOSTS_FILE"
as_root install -D -m 0644 "$STAGING_DIR/dnsmasq.conf" "$DNSMASQ_CONF"
as_root systemctl enable dnsmasq
as_root systemctl restart dnsmasq
