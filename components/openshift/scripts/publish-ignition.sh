#!/bin/sh
# On the helper node: publish the installer's ignition files on the HTTP server.

set -eu
: "${USE_SUDO?yes: run the privileged commands through sudo -n; no: run them as they are}"
: "${STAGING_DIR?where the files were copied to}"
: "${HTTP_ROOT?the document root of the HTTP server}"
: "${IGNITION_FILES?file names under STAGING_DIR to publish under HTTP_ROOT, one per line}"

as_root() {
    case "$USE_SUDO" in
        yes) sudo -n "$@" ;;
        no) "$@" ;;
        *) echo "USE_SUDO is '$USE_SUDO', not yes or no" >&2; exit 2 ;;
    esac
}

while IFS= read -r file; do
    if [ -n "$file" ]; then as_root install -D -m 0644 "$STAGING_DIR/$file" "$HTTP_ROOT/$file" </dev/null; fi
done <<END_OF_FILES
$IGNITION_FILES
END_OF_FILES
# the guide: files served by httpd need its SELinux label
if command -v restorecon >/dev/null 2>&1; then as_root restorecon -R "$HTTP_ROOT"; fi
