#!/bin/sh
# On the helper node: install or remove the cluster's dnsmasq drop-in and hosts file.
# install: both files arrive on stdin as lines "<name> <base64 of the content>", are checked with
# `dnsmasq --test` in a private directory under STAGING_DIR, put in place, and dnsmasq restarts;
# the private directory is removed on every exit, so nothing stays staged.
# remove: both files go and dnsmasq restarts without them.

set -eu
: "${ACTION?install or remove}"
: "${USE_SUDO?yes: run the privileged commands through sudo -n; no: run them as they are}"
: "${STAGING_DIR?where a private directory for the check is made, and removed again}"
: "${HOSTS_FILE?the hosts file dnsmasq reads (addn-hosts)}"
: "${DNSMASQ_CONF?the dnsmasq drop-in to replace}"

# shellcheck source-path=SCRIPTDIR
. ./include/as-root.sh

# shellcheck source-path=SCRIPTDIR
. ./include/unpack.sh

case "$ACTION" in
    install)
        umask 077
        mkdir -p "$STAGING_DIR"
        work=$(mktemp -d "$STAGING_DIR/dns.XXXXXX")
        trap 'rm -rf "$work"' EXIT
        unpack "$work"
        # copies an earlier gpu-lab left staged
        rm -f "$STAGING_DIR/dnsmasq.conf" "$STAGING_DIR/hosts.dnsmasq"
        as_root dnsmasq --test -C "$work/dnsmasq.conf"
        # an update that changes neither file (a rotated login, say) restarts nothing
        if as_root cmp -s "$work/hosts.dnsmasq" "$HOSTS_FILE" && as_root cmp -s "$work/dnsmasq.conf" "$DNSMASQ_CONF"; then
            echo "dnsmasq files unchanged"
            exit 0
        fi
        as_root install -D -m 0644 "$work/hosts.dnsmasq" "$HOSTS_FILE"
        as_root install -D -m 0644 "$work/dnsmasq.conf" "$DNSMASQ_CONF"
        as_root systemctl enable dnsmasq
        as_root systemctl restart dnsmasq
        ;;
    remove)
        as_root rm -f "$DNSMASQ_CONF" "$HOSTS_FILE"
        as_root systemctl restart dnsmasq
        ;;
    *) echo "ACTION is '$ACTION', not install or remove" >&2; exit 2 ;;
esac
