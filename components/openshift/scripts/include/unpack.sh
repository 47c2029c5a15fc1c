#!/bin/sh
# Included by the helper step scripts (components/shell_templates.py inlines it when rendering):
# the step's files arrive on stdin, one per line, and are written under a private directory.

# stdin, lines "<relative path> <base64>", into directory $1
unpack() {
    while read -r rel data; do
        [ -n "$rel" ] || continue
        case "$rel" in /*|*..*) echo "refusing the path '$rel' from stdin" >&2; exit 2 ;; esac
        mkdir -p "$1/$(dirname "$rel")"
        printf '%s' "$data" | base64 -d > "$1/$rel"
    done
}
