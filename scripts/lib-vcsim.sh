#!/usr/bin/env bash
# Shared by engine-sim.sh and sim-preview.sh (sourced, after `set -euo pipefail` and ROOT):
# a work directory removed on exit, and lab-vcsim (simulator/, `make simulator`) on a loopback
# port the kernel picks.
#
#   find_vcsim                       sets VCSIM: $VCSIM, else <repo>/build/bin/lab-vcsim; empty
#                                    when neither is there
#   make_work_dir PREFIX KEEP        sets WORK (and the exit trap; KEEP=1 keeps it)
#   start_vcsim USER PASSWORD [ARGS] starts lab-vcsim, sets VCSIM_PID and SIM_PORT; calls the
#                                    caller's `fail` when it does not come up

find_vcsim() {
    VCSIM=${VCSIM:-$ROOT/build/bin/lab-vcsim}
    [[ -x $VCSIM ]] || VCSIM=
}

make_work_dir() {
    WORK=$(mktemp -d "/tmp/$1.XXXXXX")
    KEEP_WORK=$2
    VCSIM_PID=
    trap _remove_work_dir EXIT
    trap 'exit 130' INT TERM
}

_remove_work_dir() {
    if [[ -n $VCSIM_PID ]]; then
        kill "$VCSIM_PID" 2>/dev/null || true
        wait "$VCSIM_PID" 2>/dev/null || true
    fi
    if [[ $KEEP_WORK = 1 ]]; then echo "work dir kept: $WORK"; else rm -rf "$WORK"; fi
}

start_vcsim() {
    local user=$1 password=$2
    shift 2
    "$VCSIM" -l 127.0.0.1:0 -username "$user" -password "$password" "$@" \
        >"$WORK/vcsim.out" 2>"$WORK/vcsim.err" </dev/null &
    VCSIM_PID=$!
    SIM_PORT=
    local _
    for _ in $(seq 300); do  # port 0: the kernel picks a free port, lab-vcsim prints it
        SIM_PORT=$(grep -o 'GOVC_URL=https://[^ ]*@127\.0\.0\.1:[0-9]*' "$WORK/vcsim.out" | grep -o '[0-9]*$' || true)
        [[ -n $SIM_PORT ]] && break
        kill -0 "$VCSIM_PID" 2>/dev/null || break
        sleep 0.1
    done
    [[ -n $SIM_PORT ]] || { cat "$WORK/vcsim.err"; fail "lab-vcsim did not start"; }
}
