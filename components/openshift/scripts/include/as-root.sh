#!/bin/sh
# Included by the helper step scripts (components/shell_templates.py inlines it when rendering):
# runs a privileged command through `sudo -n`, or as it is when the helper logs in as root.
# USE_SUDO is the including script's parameter.

as_root() {
    case "$USE_SUDO" in
        yes) sudo -n "$@" ;;
        no) "$@" ;;
        *) echo "USE_SUDO is '$USE_SUDO', not yes or no" >&2; exit 2 ;;
    esac
}
