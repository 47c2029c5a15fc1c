#!/bin/sh
# On the helper node: install or remove the PXE menus in the TFTP root.
# install: checks that the boot loaders and RHCOS images are there, then the menus arrive on
# stdin as lines "<path under the TFTP root> <base64>" and are put in place through a private
# directory under STAGING_DIR (removed on every exit). The menus installed are listed in
# TFTP_ROOT/.gpu-lab-menus, so a menu that left the configuration (a node removed) goes too.
# remove: the listed menus go; boot loaders and images are the helper's own and stay.

set -eu
: "${ACTION?install or remove}"
: "${USE_SUDO?yes: run the privileged commands through sudo -n; no: run them as they are}"
: "${STAGING_DIR?where a private directory for the menus is made, and removed again}"
: "${TFTP_ROOT?the TFTP root dnsmasq serves}"
: "${REQUIRED_FILES?absolute paths that must exist, one per line: boot loaders, local images (install only)}"
: "${MENU_FILES?the menu files, paths under TFTP_ROOT, one per line (install only)}"

# shellcheck source-path=SCRIPTDIR
. ./include/as-root.sh

# shellcheck source-path=SCRIPTDIR
. ./include/unpack.sh

list="$TFTP_ROOT/.gpu-lab-menus"
case "$ACTION" in
    install)
        missing=
        while IFS= read -r path; do
            if [ -n "$path" ] && ! as_root test -f "$path" </dev/null; then missing="$missing $path"; fi
        done <<END_OF_REQUIRED
$REQUIRED_FILES
END_OF_REQUIRED
        if [ -n "$missing" ]; then
            echo "missing on the helper node:$missing (boot loaders from syslinux and grub/shim, images from the RHCOS mirror)" >&2
            exit 1
        fi
        umask 077
        mkdir -p "$STAGING_DIR"
        work=$(mktemp -d "$STAGING_DIR/pxe.XXXXXX")
        trap 'rm -rf "$work"' EXIT
        unpack "$work"
        while IFS= read -r menu; do
            if [ -n "$menu" ]; then
                as_root install -D -m 0644 "$work/$menu" "$TFTP_ROOT/$menu" </dev/null
                rm -f "$STAGING_DIR/$menu"  # a copy an earlier gpu-lab left staged
            fi
        done <<END_OF_MENUS
$MENU_FILES
END_OF_MENUS
        if as_root test -f "$list"; then
            as_root cat "$list" | while IFS= read -r old; do
                if [ -n "$old" ] && ! printf '%s\n' "$MENU_FILES" | grep -qxF -e "$old"; then
                    as_root rm -f "$TFTP_ROOT/$old" </dev/null
                fi
            done
        fi
        printf '%s\n' "$MENU_FILES" > "$work/menus"
        as_root install -m 0644 "$work/menus" "$list"
        ;;
    remove)
        if as_root test -f "$list"; then
            as_root cat "$list" | while IFS= read -r old; do
                if [ -n "$old" ]; then as_root rm -f "$TFTP_ROOT/$old" </dev/null; fi
            done
        fi
        as_root rm -f "$list"
        ;;
    *) echo "ACTION is '$ACTION', not install or remove" >&2; exit 2 ;;
esac
