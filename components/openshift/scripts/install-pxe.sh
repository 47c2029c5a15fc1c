#!/bin/sh
# On the helper node: check the boot loaders and RHCOS images are there, then put the staged
# PXE menus in the TFTP root.

set -eu
: "${USE_SUDO?yes: run the privileged commands through sudo -n; no: run them as they are}"
: "${STAGING_DIR?where the files were copied to}"
: "${TFTP_ROOT?the TFTP root dnsmasq serves}"
: "${REQUIRED_FILES?absolute paths that must exist, one per line: boot loaders, local images}"
: "${MENU_FILES?menu files under STAGING_DIR to put at the same path under TFTP_ROOT, one per line}"

as_root() {
    case "$USE_SUDO" in
        yes) sudo -n "$@" ;;
        no) "$@" ;;
        *) echo "USE_SUDO is '$USE_SUDO', not yes or no" >&2; exit 2 ;;
    esac
}

missing=
while IFS= read -r path; do
    if [ -n "$path" ] && [ ! -f "$path" ]; then missing="$missing $path"; fi
done <<END_OF_REQUIRED
$REQUIRED_FILES
END_OF_REQUIRED
if [ -n "$missing" ]; then
    echo "missing on the helper node:$missing (boot loaders from syslinux and grub/shim, images from the RHCOS mirror)" >&2
    exit 1
fi
while IFS= read -r menu; do
    if [ -n "$menu" ]; then as_root install -D -m 0644 "$STAGING_DIR/$menu" "$TFTP_ROOT/$menu" </dev/null; fi
done <<END_OF_MENUS
$MENU_FILES
END_OF_MENUS
