#!/usr/bin/env bash
# The whole program under the real Pulumi engine and the real provider plugins, against a
# vCenter simulator (lab-vcsim, `make simulator`) on a loopback port: `pulumi preview
# --policy-pack policies` of a stack, and for the sim stack optionally `up` and `destroy`.
#
#   scripts/sim-preview.sh [--stack sim|lab|openshift] [--up [--add-worker]] [--no-policy] [--read-only]
#
# --read-only: the preview logs in to lab-vcsim as a user whose role is Read-only (every method
# that would change the inventory answers NoPermission; simulator/readonly.go) and, for the lab
# and openshift stacks, the stack sets neither the helper's SSH key nor the switch passwords: what
# the pull-request preview job gets (docs/security.md). With --up the admin builds the sim stack,
# then the read-only user previews it and the script prints every change that preview plans.
# --add-worker (with --up): after up, a day-2 edit adds one worker to the stack's config;
# the script prints every change its preview plans, then runs up, before destroy.
#
# The project is copied to a temporary directory (the stack file there gets the simulator's address,
# the passphrase salt and placeholder secrets; the repo's files are not touched) with a local
# file backend. vsphere:vsphereServer becomes 127.0.0.1:<port>, the port the kernel gave lab-vcsim.
# lab and openshift are previewed only: preview runs no Command, so their switches and helper
# node are never contacted; `--up` is refused for them.
#
# Exit 0 when every step passed, 1 on the first failure (the engine's output is printed),
# 77 with "SKIP <reason>" when the engine or a provider plugin the venv's SDKs pin is not
# installed (docs/engine.md says how to build them).
#
# Env: PULUMI_CACHE_DIR (default <repo>/.cache/pulumi), VENV (default <repo>/.venv),
#      VCSIM (default <repo>/build/bin/lab-vcsim), SIM_KEEP=1 keeps the work dir,
#      SIM_VCSIM_ARGS extra lab-vcsim flags (e.g. "-cluster 1 -host 8"),
#      SIM_PARALLEL the engine's --parallel for up and destroy (default: the engine's own),
#      SIM_EVENT_LOG a file for the engine's event log of up (pulumi up --event-log).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${PULUMI_CACHE_DIR:-$ROOT/.cache/pulumi}
VENV=${VENV:-$ROOT/.venv}
PY=$VENV/bin/python
# shellcheck source=scripts/lib-vcsim.sh
source "$ROOT/scripts/lib-vcsim.sh"
find_vcsim

STACK=sim UP=0 POLICY=1 ADD_WORKER=0 READ_ONLY=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --stack) STACK=$2; shift 2 ;;
        --up) UP=1; shift ;;
        --add-worker) ADD_WORKER=1; shift ;;
        --no-policy) POLICY=0; shift ;;
        --read-only) READ_ONLY=1; shift ;;
        *) echo "usage: $0 [--stack sim|lab|openshift] [--up [--add-worker]] [--no-policy] [--read-only]" >&2; exit 2 ;;
    esac
done
[[ -f $ROOT/Pulumi.$STACK.yaml ]] || { echo "no stack file Pulumi.$STACK.yaml" >&2; exit 2; }
# up runs Commands and changes vSphere: only a stack that configures nothing but vSphere (the sim
# stack, or one generated from it like tools/bench/up.py's), whose vCenter is this simulator.
if [[ $UP = 1 ]] && { [[ $STACK != sim* ]] || grep -qE '^  gpu-lab:(switches|openshift|addons):' "$ROOT/Pulumi.$STACK.yaml"; }; then
    echo "--up runs only on the sim stack: $STACK configures real switches and hosts" >&2; exit 2
fi

skip() { echo "SKIP $*"; exit 77; }
[[ -x $CACHE/bin/pulumi ]] || skip "no Pulumi engine in $CACHE: run make setup-pulumi"
[[ -x $PY ]] || skip "no virtualenv at $VENV: run make setup"
[[ -n $VCSIM ]] || skip "no lab-vcsim: run make simulator"

export PATH=$CACHE/bin:$PATH PULUMI_HOME=$CACHE/home
export PULUMI_SKIP_UPDATE_CHECK=1 PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
export PULUMI_CONFIG_PASSPHRASE=sim-$RANDOM$RANDOM

# The resource plugins the stack's sections use, at exactly the versions the venv's SDKs pin:
# the engine asks for those.
missing=$("$PY" - "$PULUMI_HOME/plugins" "$ROOT/Pulumi.$STACK.yaml" <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import yaml

plugins = Path(sys.argv[1])
config = yaml.safe_load(open(sys.argv[2]))["config"]
needed = {"vsphere": "gpu-lab:vsphere" in config,
          "command": "gpu-lab:switches" in config or "gpu-lab:openshift" in config,
          "kubernetes": "gpu-lab:addons" in config}
for name in (n for n, used in needed.items() if used):
    try:
        want = version(f"pulumi-{name}")
    except PackageNotFoundError:
        print(f"the pulumi-{name} SDK is not in the venv")
        continue
    if not (plugins / f"resource-{name}-v{want}" / f"pulumi-resource-{name}").is_file():
        print(f"resource plugin {name} {want} is not installed")
EOF
)
[[ -z $missing ]] || skip "$(echo "$missing" | paste -sd ';' -) (pulumi plugin ls; see docs/engine.md)"

make_work_dir sim-preview "${SIM_KEEP:-0}"
export PULUMI_BACKEND_URL=file://$WORK/state

T0=$SECONDS
step_start=$SECONDS
pass() { echo "PASS $* ($((SECONDS - step_start))s)"; step_start=$SECONDS; }
fail() { echo "FAIL $*"; exit 1; }
run() {
    local log=$WORK/$1; shift
    local rc=0
    "$@" >"$log" 2>&1 || rc=$?
    [[ $rc = 0 ]] || { cat "$log"; fail "$* (exit $rc)"; }
}

# ---------------------------------------------------------------- lab-vcsim
SIM_USER=lab-admin  # the simulator refuses user names with '@'
SIM_PASSWORD=sim-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
SIM_READER=lab-reader  # the Read-only login (--read-only)
SIM_READER_PASSWORD=reader-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
READER_ARGS=()
[[ $READ_ONLY = 1 ]] && READER_ARGS=(-readonly-username "$SIM_READER" -readonly-password "$SIM_READER_PASSWORD")
# shellcheck disable=SC2086  # SIM_VCSIM_ARGS is a list of flags
start_vcsim "$SIM_USER" "$SIM_PASSWORD" "${READER_ARGS[@]}" ${SIM_VCSIM_ARGS:-}
pass "lab-vcsim on 127.0.0.1:$SIM_PORT${SIM_VCSIM_ARGS:+ $SIM_VCSIM_ARGS}${READER_ARGS[*]:+ with the Read-only user $SIM_READER}"

# ---------------------------------------------------------------- project copy + stack
PROJ=$WORK/proj
mkdir -p "$PROJ" "$WORK/state"
# Tracked and untracked (not ignored) files: the working tree as it is.
(cd "$ROOT" && git ls-files -co --exclude-standard -z | grep -zvE '^(\.venv|\.cache)(/|$)' \
    | xargs -0 cp -P --parents -t "$PROJ")
ln -s "$VENV" "$PROJ/.venv"
cd "$PROJ"
run stack.log pulumi stack init "$STACK"
run config.log pulumi config set vsphere:vsphereServer "127.0.0.1:$SIM_PORT"
run config.log pulumi config set vsphere:allowUnverifiedSsl true
# Secrets from stdin, never on a command line. The placeholders only have to be well-formed:
# preview sends none of them anywhere, and the sim stack uses only the vCenter password.
secret() { run config.log pulumi config set --secret "$@" < <(printf '%s' "$SECRET"); }
# login_as USER PASSWORD: the vCenter login the program (pulumi-vsphere and pyvmomi) uses.
login_as() {
    run config.log pulumi config set vsphere:user "$1"
    SECRET=$2 secret vsphere:password
}
if [[ $READ_ONLY = 1 && $UP = 0 ]]; then
    login_as "$SIM_READER" "$SIM_READER_PASSWORD"
else
    login_as "$SIM_USER" "$SIM_PASSWORD"
fi
if [[ $STACK != sim ]]; then
    SECRET='{"auths":{"registry.example":{"auth":"cGxhY2Vob2xkZXI="}}}' secret gpu-lab:pullSecret
    SECRET='ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPlaceholderPlaceholderPlaceholderPlaceh sim' secret gpu-lab:sshPublicKey
    [[ $READ_ONLY = 1 ]] || SECRET=placeholder-key secret gpu-lab:helperSshPrivateKey
    SECRET='{"auths":{"registry.example":{"auth":"cGxhY2Vob2xkZXI="}}}' secret gpu-lab:registryAuth
    SECRET=placeholder-token secret gpu-lab:nvidiaLicenseToken
    SECRET=placeholder-kubeconfig secret gpu-lab:kubeconfig
    [[ $READ_ONLY = 1 ]] || for sw in $("$PY" -c 'import sys, yaml; print(" ".join(s["name"] for s in (yaml.safe_load(open(sys.argv[1]))["config"].get("gpu-lab:switches") or [])))' "Pulumi.$STACK.yaml"); do
        SECRET=placeholder-password secret --path "gpu-lab:switchPasswords.$sw"
    done
fi
grep -qF "$SIM_PASSWORD" "Pulumi.$STACK.yaml" && fail "the stack file holds the vCenter password in clear"
grep -qF "$SIM_READER_PASSWORD" "Pulumi.$STACK.yaml" && fail "the stack file holds the read-only password in clear"
if [[ $READ_ONLY = 1 ]] && grep -qE '^  gpu-lab:(helperSshPrivateKey|switchPasswords):' "Pulumi.$STACK.yaml"; then
    fail "--read-only: the stack sets the helper key or switch passwords"
fi
pass "stack $STACK in $PROJ (file backend), vsphere:vsphereServer=127.0.0.1:$SIM_PORT"

# ---------------------------------------------------------------- preview
PACK_ARGS=()
[[ $POLICY = 1 ]] && PACK_ARGS=(--policy-pack policies)
t=$SECONDS
run preview.log pulumi preview --non-interactive --diff "${PACK_ARGS[@]}"
if [[ $POLICY = 1 ]]; then
    # The pack must have run; a mandatory violation would have failed the preview above.
    grep -qE 'gpu-lab(@v0\.1\.0 \(local: policies\)|\|local\|policies)' "$WORK/preview.log" \
        || { cat "$WORK/preview.log"; fail "the gpu-lab policy pack did not run"; }
fi
creates=$(grep -E '^ +\+ [0-9]+ to create' "$WORK/preview.log" | grep -oE '[0-9]+' || echo 0)
pass "preview ${PACK_ARGS[*]}: $creates to create, $((SECONDS - t))s"

# sim_state: what the sim stack changes in vSphere, as pyvmomi reads it (one line per host, then
# the inventory's VMs, switches and networks: port groups, uplink ones too), to compare before up and
# after destroy.
sim_state() {
    SIM_PORT=$SIM_PORT SIM_USER=$SIM_USER SIM_PASSWORD=$SIM_PASSWORD PYTHONPATH=$ROOT "$PY" - <<'EOF'
import os
from pyVmomi import vim
from components.dynamic import hostops

with hostops.session("127.0.0.1", os.environ["SIM_USER"], os.environ["SIM_PASSWORD"],
                     port=int(os.environ["SIM_PORT"]), insecure=True) as si:
    for host in sorted(hostops._inventory(si, vim.HostSystem), key=lambda h: h.name):
        print(host.name, f"ruleset={hostops.get_ruleset_enabled(host, 'pvrdma')}",
              f"option={hostops.get_advanced_option(host, 'Net.PVRDMAVmknic')!r}",
              f"graphics={hostops.get_graphics_type(host)}",
              f"modules={hostops.get_module_options(host, 'nmlx5_core')!r}",
              "vnics=" + ",".join(v.device for v in host.config.network.vnic))
    print("vms=" + ",".join(sorted(vm.name for vm in hostops._inventory(si, vim.VirtualMachine))))
    print("switches=" + ",".join(sorted(s.name for s in hostops._inventory(si, vim.DistributedVirtualSwitch))))
    print("networks=" + ",".join(sorted(n.name for n in hostops._inventory(si, vim.Network))))
EOF
}

UP_FAILED=0
if [[ $UP = 1 ]]; then
    PARALLEL_ARGS=()
    [[ -n ${SIM_PARALLEL:-} ]] && PARALLEL_ARGS=(--parallel "$SIM_PARALLEL")
    EVENT_ARGS=()
    # --event-log is among the CLI's debug flags (PULUMI_DEBUG_COMMANDS, pulumi/pulumi
    # pkg/cmd/pulumi/operations/up.go).
    [[ -n ${SIM_EVENT_LOG:-} ]] && { EVENT_ARGS=(--event-log "$SIM_EVENT_LOG"); export PULUMI_DEBUG_COMMANDS=true; }
    sim_state >"$WORK/state-before" || fail "reading the simulator's state before up"
    # --continue-on-error: create everything that can be, then list each resource that failed.
    rc=0 t=$SECONDS
    pulumi up --yes --non-interactive --continue-on-error "${PARALLEL_ARGS[@]}" "${EVENT_ARGS[@]}" "${PACK_ARGS[@]}" \
        >"$WORK/up.log" 2>&1 || rc=$?
    up_seconds=$((SECONDS - t))
    par=${PARALLEL_ARGS[*]:+ ${PARALLEL_ARGS[*]}}  # " --parallel N" when given
    # The "Resources:" summary at the end: "    + N created".
    created=$(grep -E '^ +\+ [0-9]+ created' "$WORK/up.log" | grep -oE '[0-9]+' || echo 0)
    if [[ $rc = 0 ]]; then
        pass "up$par: $created created, ${up_seconds}s"
        # Right after up, the program and vSphere agree: nothing to change.
        run noop.log pulumi preview --non-interactive --diff --expect-no-changes
        pass "preview --expect-no-changes: no changes after up"
        if [[ $READ_ONLY = 1 ]]; then
            # The lab as built, previewed as the Read-only user: it must run, and plan no create,
            # replace or delete; the script prints what it does plan.
            login_as "$SIM_READER" "$SIM_READER_PASSWORD"
            run ro-preview.log pulumi preview --non-interactive --diff "${PACK_ARGS[@]}"
            echo "read-only preview of the built lab plans:"
            # one line per planned change: the step's "(op)" and the resource's type and name
            awk 'match($0, /^ *[-+~]+ [a-z].*: \((create|update|replace|delete|create-replacement|delete-replaced)\)/) {
                     op = $NF; next }
                 op != "" && match($0, /\[urn=[^]]*/) {
                     n = split(substr($0, RSTART + 5, RLENGTH - 5), p, "::"); k = split(p[n - 1], t, "\\$")
                     print "  " op "\t" t[k] "  " p[n]; op = "" }' "$WORK/ro-preview.log"
            changed=$(grep -oE '^ +[-+~]+ [0-9]+ to (create|replace|delete)' "$WORK/ro-preview.log" || true)
            [[ -z $changed ]] || { cat "$WORK/ro-preview.log"; fail "the read-only preview plans: $changed"; }
            grep -E '^ +~ [0-9]+ to update' "$WORK/ro-preview.log" | sed -E 's/^ +/  /' || true
            pass "read-only preview as $SIM_READER: nothing to create, replace or delete"
            login_as "$SIM_USER" "$SIM_PASSWORD"
        fi
        if [[ $ADD_WORKER = 1 ]]; then
            count=$("$PY" -c 'import sys, yaml; print(len(yaml.safe_load(open(sys.argv[1]))["config"]["gpu-lab:vsphere"]["workers"]["names"]))' "Pulumi.$STACK.yaml")
            worker=$(printf 'simw%02d' $((count + 1)))
            run config.log pulumi config set --path "gpu-lab:vsphere.workers.names[$count]" "$worker"
            run day2-preview.log pulumi preview --non-interactive --diff "${PACK_ARGS[@]}"
            echo "day 2: add worker $worker; the preview plans:"
            # One line per planned change: the step's "(op)" and the first URN after it (an update
            # shows its [id=...] line before the URN).
            awk 'match($0, /^ *[-+~]+ [a-z].*: \((create|update|replace|delete|create-replacement|delete-replaced)\)/) {
                     op = $NF; next }
                 op != "" && match($0, /\[urn=[^]]*/) { print "  " op "\t" substr($0, RSTART + 1, RLENGTH - 1); op = "" }' \
                "$WORK/day2-preview.log"
            t=$SECONDS
            run day2-up.log pulumi up --yes --non-interactive "${PARALLEL_ARGS[@]}" "${PACK_ARGS[@]}"
            summary=$(grep -E '^ +[-+~]+ [0-9]+ (created|updated|replaced|deleted)' "$WORK/day2-up.log" | sed -E 's/^ +//' | paste -sd ',' -)
            added=$(grep -E '^ +\+ [0-9]+ created' "$WORK/day2-up.log" | grep -oE '[0-9]+' || echo 0)
            created=$((created + added))
            pass "day-2 up (worker $worker): $summary, $((SECONDS - t))s"
        fi
    else
        UP_FAILED=1
        echo "STOPPED up$par (exit $rc): $created created in ${up_seconds}s; failed:"
        grep -E '\*\*(creating|updating) failed\*\*' "$WORK/up.log" | sed -E 's/^ *[+~-]? *//; s/^/  /' | sort -u
        step_start=$SECONDS
    fi
    t=$SECONDS
    run destroy.log pulumi destroy --yes --non-interactive "${PARALLEL_ARGS[@]}"
    deleted=$(grep -E '^ +- [0-9]+ deleted' "$WORK/destroy.log" | grep -oE '[0-9]+' || echo 0)
    [[ $deleted = "$created" ]] || { cat "$WORK/destroy.log"; fail "destroy deleted $deleted of $created"; }
    sim_state >"$WORK/state-after" || fail "reading the simulator's state after destroy"
    diff "$WORK/state-before" "$WORK/state-after" || fail "destroy left vSphere different from before up (diff above)"
    pass "destroy$par: $deleted deleted, $((SECONDS - t))s; hosts, VMs, switches and port groups as before up"
fi
echo "total $((SECONDS - T0))s"
[[ $UP_FAILED = 0 ]] || exit 1
