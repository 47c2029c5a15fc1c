#!/bin/sh
# Before anything reaches a host over SSH: the host key it presents must be the pinned one.
# ssh-keyscan fetches the host's key of the pinned key's type and compares it with the pinned
# key. On a mismatch the script names the host and both keys' SHA256 fingerprints (as
# `ssh-keygen -l` prints them) and fails, so nothing that depends on it connects; an
# unreachable host gets a message of its own. Runs where pulumi runs; needs the OpenSSH client
# (ssh-keyscan, ssh-keygen).

set -eu
: "${HOST?address of the host}"
: "${PORT?its SSH port}"
: "${KEY_TYPE?the type of the pinned key as ssh-keyscan -t names it: ed25519, rsa, ecdsa, ...}"
: "${PINNED_KEY?the pinned public key: <type> <base64 key data>}"
: "${SETTING?the stack setting that pins the key, named in the messages}"
: "${CONNECT_ATTEMPTS?how many times to try to reach the host}"
: "${CONNECT_TIMEOUT?seconds each attempt waits for the host}"

for tool in ssh-keyscan ssh-keygen; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "gpu-lab: checking the host key of $HOST:$PORT needs $tool (the OpenSSH client) here" >&2
        exit 2
    fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# "<bits> SHA256:<hash> (<TYPE>)" of each key in a key or known_hosts file, comma-separated
fingerprints() {
    ssh-keygen -l -E sha256 -f "$1" | awk '{ printf "%s%s %s %s", (NR > 1 ? ", " : ""), $1, $2, $NF }'
}

attempt=1
while :; do
    ssh-keyscan -T "$CONNECT_TIMEOUT" -p "$PORT" -t "$KEY_TYPE" "$HOST" >"$work/presented" 2>"$work/scan.err" || :
    # ssh-keyscan reports the server's banner ("# host:port SSH-2.0-...") once it reached it
    if grep -q '^# .* SSH-' "$work/scan.err"; then
        break
    fi
    if [ "$attempt" -ge "$CONNECT_ATTEMPTS" ]; then
        reason=$(grep -v '^#' "$work/scan.err" | head -n 3 | tr '\n' ' ')
        echo "gpu-lab: cannot check the SSH host key of $HOST:$PORT: no SSH server answered" \
             "($attempt attempt(s) of $CONNECT_TIMEOUT s${reason:+; $reason}); check the address, the port" \
             "and that sshd runs there" >&2
        exit 1
    fi
    attempt=$((attempt + 1))
    sleep 2
done

printf '%s\n' "$PINNED_KEY" >"$work/pinned"
if awk -v pinned="$PINNED_KEY" '$2 " " $3 == pinned { found = 1 } END { exit !found }' "$work/presented"; then
    echo "gpu-lab: $HOST:$PORT presents the pinned host key $(fingerprints "$work/pinned")"
    exit 0
fi

if [ ! -s "$work/presented" ]; then
    # no key of the pinned type: name the keys it does have
    ssh-keyscan -T "$CONNECT_TIMEOUT" -p "$PORT" "$HOST" >"$work/presented" 2>/dev/null || :
fi
presented="no key"
if [ -s "$work/presented" ]; then
    presented=$(fingerprints "$work/presented")
fi
echo "gpu-lab: SSH host key mismatch for $HOST:$PORT: it presents $presented, but $SETTING pins" \
     "$(fingerprints "$work/pinned"). Nothing was sent to it. If the host was reinstalled, check its new key" \
     "out of band (on its console: ssh-keygen -l -f /etc/ssh/ssh_host_${KEY_TYPE%-sk}_key.pub) and update" \
     "$SETTING; otherwise another machine answers at this address." >&2
exit 1
