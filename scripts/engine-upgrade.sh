#!/usr/bin/env bash
# The upgrade test on the real engine: a lab part built by the previous release, then this tree's
# preview must find nothing to do. What CI can run: the repo's pyvmomi dynamic resources
# (components.dynamic) against the vCenter simulator on a loopback port, on a file backend.
#
#   1. the previous release (PREVIOUS, default the last of release/releases.txt) in a worktree;
#   2. `pulumi up` with its components/ on the program's and the dynamic provider's PYTHONPATH;
#      the provider classes its state pickles (by module and name) read back from the export;
#   3. `pulumi up` with this tree's components/: the release's retirements and nothing else (the vGPU
#      resource is dropped and its delete leaves the vGPU on the running VM; the node's roll that holds
#      it now is created and finds the VM as asked: no power cycle, checked on the VM; the vCenter
#      connection moves into the explicit providers: the pyvmomi provider is updated, the rolls' created,
#      no resource updated), the credentials in no resource's inputs, and after `pulumi refresh` in none
#      of their outputs either; then `pulumi preview --expect-no-changes` (the engine fails it on any
#      create, update, replace or delete; and, as a control, fails once an input changes);
#   4. the stack tag the up workflow records (gpu-lab:commit) set and read back on this backend;
#   5. destroy with this tree: vSphere back as it was.
# Prints one PASS line per step and "N passed, 0 failed"; FAIL and the engine's output otherwise.
#
# Env: PULUMI_CACHE_DIR (default <repo>/.cache/pulumi), VENV (default <repo>/.venv), PREVIOUS,
#      ENGINE_UPGRADE_KEEP=1 keeps the work dir. Nothing leaves 127.0.0.1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${PULUMI_CACHE_DIR:-$ROOT/.cache/pulumi}
VENV=${VENV:-$ROOT/.venv}
PY=$VENV/bin/python
# shellcheck source=scripts/lib-vcsim.sh
source "$ROOT/scripts/lib-vcsim.sh"
find_vcsim
[[ -x $CACHE/bin/pulumi ]] || { echo "FAIL no Pulumi engine in $CACHE: run make setup-pulumi"; exit 1; }
[[ -n $VCSIM ]] || { echo "FAIL no lab-vcsim: run make simulator"; exit 1; }
# PREVIOUS: a release name (v0.1.0) or any revision, default the last release of release/releases.txt;
# tools/releases.py finds its commit: the tag where the clone has it, else release/releases.txt
read -r PREV_VERSION _ < <(grep -v '^#' "$ROOT/release/releases.txt" | tail -n 1)
PREVIOUS=${PREVIOUS:-v$PREV_VERSION}
PREVIOUS_COMMIT=$(cd "$ROOT" && "$PY" -m tools.releases resolve "$PREVIOUS") || exit 2

export PATH=$CACHE/bin:$PATH PULUMI_HOME=$CACHE/home
export PULUMI_SKIP_UPDATE_CHECK=1 PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
export PULUMI_CONFIG_PASSPHRASE=engine-upgrade-$RANDOM$RANDOM
SIM_PASSWORD=sim-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
SIM_USER=lab-admin

make_work_dir engine-upgrade "${ENGINE_UPGRADE_KEEP:-0}"
export PULUMI_BACKEND_URL=file://$WORK/state
OLD=$WORK/previous
_remove_old_tree() { git -C "$ROOT" worktree remove --force "$OLD" 2>/dev/null || true; _remove_work_dir; }
trap _remove_old_tree EXIT

# shellcheck source=scripts/lib-steps.sh
source "$ROOT/scripts/lib-steps.sh"

# ---------------------------------------------------------------- the previous release
git -C "$ROOT" worktree add --quiet --detach "$OLD" "$PREVIOUS_COMMIT" || fail "git worktree of $PREVIOUS"
start_vcsim "$SIM_USER" "$SIM_PASSWORD"
# host, VM id and VM name from the simulator, through this tree's hostops (read only; seeds the option ESXi has)
read -r HOST VM_ID VM_NAME VM_CPUS VM_MEMORY < <(SIM_PORT=$SIM_PORT SIM_USER=$SIM_USER SIM_PASSWORD=$SIM_PASSWORD \
    PYTHONPATH=$ROOT "$PY" - <<'EOF'
import os, time
from pyVmomi import vim
from components.dynamic import hostops
for attempt in range(100):
    try:
        with hostops.session("127.0.0.1", os.environ["SIM_USER"], os.environ["SIM_PASSWORD"],
                             port=int(os.environ["SIM_PORT"]), insecure=True) as si:
            host = si.RetrieveContent().rootFolder.childEntity[0].hostFolder.childEntity[0].host[0]
            host.configManager.advancedOption.UpdateOptions(
                changedValue=[vim.option.OptionValue(key="Net.PVRDMAVmknic", value="")])
            settings = hostops.get_roll_settings(host.vm[0])
            print(host.name, host.vm[0]._moId, host.vm[0].name, settings["cpus"], settings["memoryMb"])
        break
    except (ConnectionError, OSError):
        if attempt == 99:
            raise
        time.sleep(0.1)
EOF
) || fail "reading the simulator"
[[ -n $VM_NAME ]] || fail "the simulator has no host with a VM"
pass "previous release $PREVIOUS ($(git -C "$OLD" rev-parse --short HEAD)) in a worktree; simulator on 127.0.0.1:$SIM_PORT"

python_project engine-upgrade
# The same program text under both releases: what changes between them is components/.
cat >"$WORK/proj/__main__.py" <<'EOF'
"""The pyvmomi resources of whichever components/ is first on PYTHONPATH."""
import pulumi

from pathlib import Path

import components

# By the tree on PYTHONPATH, not by trying the import: the venv's editable install would find a
# module that tree lacks in the repo's own components/.
dynamic = Path(components.__file__).parent / "dynamic"
NodeRoll = VmVgpuProfile = None
providers_hold_the_connection = dynamic.is_dir() and "def vcenter_provider" in (dynamic / "provider.py").read_text()
if dynamic.is_dir():
    from components.dynamic.host_settings import HostAdvancedOption, HostFirewallRuleset
    from components.dynamic.provider import PYVMOMI, VcenterConnection, explicit_provider

    if (dynamic / "roll.py").is_file() and "class VmVgpuProfile" not in (dynamic / "vgpu.py").read_text():
        from components.dynamic.roll import NodeRoll  # the node's roll holds the vGPU
        from labrules.openshift import DEFAULT_OC, NODE_DRAIN_TIMEOUT_S  # the lab's defaults for its rolls
    else:
        from components.dynamic.vgpu import VmVgpuProfile

    def pyvmomi_provider():
        return explicit_provider(PYVMOMI)
else:  # a release before components/dynamic/
    from components.vsphere.dynamic import (
        HostAdvancedOption,
        HostFirewallRuleset,
        VcenterConnection,
        VmVgpuProfile,
        pyvmomi_provider,
    )

cfg = pulumi.Config()
conn = VcenterConnection(server="127.0.0.1", port=cfg.require_int("port"), user=cfg.require("user"),
                         password=cfg.require_secret("password"), insecure=True)
host = cfg.require("host")
vgpu = dict(vm_id=cfg.require("vmId"), vm_name=cfg.require("vmName"), role="worker", cpus=cfg.require_int("vmCpus"),
            memory_mb=cfg.require_int("vmMemory"), memory_reservation_mb=None, hardware_version=None,
            vgpu_profile="grid_v100-8c")  # the VM's own size: the roll asks for nothing but the vGPU it has
if providers_hold_the_connection:  # each explicit provider holds the connection its resources need
    from components.dynamic.provider import node_roll_provider, vcenter_provider

    opts = pulumi.ResourceOptions(provider=vcenter_provider(conn))
    HostFirewallRuleset("pvrdma-firewall", host, "pvrdma", True, opts=opts)
    HostAdvancedOption("pvrdma-vmknic", host, "Net.PVRDMAVmknic", cfg.get("vmknic") or "vmk1", opts=opts)
    NodeRoll("vgpu-roll", **vgpu, drain_timeout_s=NODE_DRAIN_TIMEOUT_S,
             opts=pulumi.ResourceOptions(provider=node_roll_provider(conn, None, DEFAULT_OC)))
else:  # each resource carries the connection
    opts = pulumi.ResourceOptions(provider=pyvmomi_provider())
    HostFirewallRuleset("pvrdma-firewall", conn, host, "pvrdma", True, opts=opts)
    HostAdvancedOption("pvrdma-vmknic", conn, host, "Net.PVRDMAVmknic", cfg.get("vmknic") or "vmk1", opts=opts)
    if NodeRoll is None:
        VmVgpuProfile("vgpu", conn, cfg.require("vmId"), cfg.require("vmName"), "grid_v100-8c", opts=opts)
    else:
        NodeRoll("vgpu-roll", conn, **vgpu, kubeconfig=None, oc=DEFAULT_OC, drain_timeout_s=NODE_DRAIN_TIMEOUT_S,
                 opts=opts)
EOF
cd "$WORK/proj"
run stack.log pulumi stack init sim
run config.log pulumi config set --secret password < <(printf '%s' "$SIM_PASSWORD")
for kv in "port=$SIM_PORT" "user=$SIM_USER" "host=$HOST" "vmId=$VM_ID" "vmName=$VM_NAME" "vmCpus=$VM_CPUS" \
          "vmMemory=$VM_MEMORY"; do
    run config.log pulumi config set "${kv%%=*}" "${kv#*=}"
done

# ---------------------------------------------------------------- up with the previous release
PYTHONPATH=$OLD run up.log pulumi up --yes --non-interactive
grep -q '5 created' "$WORK/up.log" || { cat "$WORK/up.log"; fail "up with $PREVIOUS created the stack and 4 resources"; }
pass "up with $PREVIOUS: provider, firewall ruleset, advanced option, vGPU created"

# The classes the state's __provider pickles name (module.name): what this tree must still import.
run export.log pulumi stack export --show-secrets --file "$WORK/previous-state.json"
PICKLED=$("$PY" - "$WORK/previous-state.json" <<'PY'
import base64, json, pickletools, sys
names = set()
for resource in json.load(open(sys.argv[1]))["deployment"]["resources"]:
    pickled = (resource.get("inputs") or {}).get("__provider")
    if isinstance(pickled, dict):  # a secret, shown: {sig, plaintext: JSON text}
        pickled = json.loads(pickled["plaintext"])
    if pickled:
        strings = []
        for opcode, arg, _ in pickletools.genops(base64.b64decode(pickled)):
            strings += [arg] if isinstance(arg, str) else []
            if opcode.name == "STACK_GLOBAL":
                names.add(".".join(strings[-2:]))
print(" ".join(sorted(names)))
PY
) || fail "reading the providers the previous release pickled"
[[ -n $PICKLED ]] || fail "the previous release's state holds no pickled provider"
if [[ ! -d $OLD/components/dynamic && $PICKLED = *components.dynamic.* ]]; then
    fail "the previous release's up pickled this tree's classes ($PICKLED): its own components/ was not used"
fi
pass "the state names the previous release's provider classes: $PICKLED"

# ---------------------------------------------------------------- this tree: its retirements, then no changes
# the VM as the older release left it: its vGPU, its power state and how often vCenter saw it powered off
vm_now() {
    SIM_PORT=$SIM_PORT SIM_USER=$SIM_USER SIM_PASSWORD=$SIM_PASSWORD VM_ID=$VM_ID PYTHONPATH=$ROOT "$PY" - <<'PY'
import os
from pyVmomi import vim
from components.dynamic import hostops
with hostops.session("127.0.0.1", os.environ["SIM_USER"], os.environ["SIM_PASSWORD"], port=int(os.environ["SIM_PORT"]),
                     insecure=True) as si:
    vm = hostops.find_vm(si, os.environ["VM_ID"])
    events = si.RetrieveContent().eventManager.QueryEvents(vim.event.EventFilterSpec(
        entity=vim.event.EventFilterSpec.ByEntity(entity=vm, recursion="self")))
    offs = sum(isinstance(e, (vim.event.VmStoppingEvent, vim.event.VmPoweredOffEvent)) for e in events)
    print(hostops.get_vgpu_profile(vm), vm.runtime.powerState, f"{offs}-power-offs")
PY
}
BEFORE=$(vm_now) || fail "reading the VM after the older release's up"
[[ $BEFORE = grid_v100-8c\ poweredOn* ]] || fail "the older release attached the vGPU to a running VM: $BEFORE"
# the vGPU resource is retired by the release that moved the profile into the node's roll
held_by_resource() { grep -qs 'class VmVgpuProfile' "$1/components/dynamic/vgpu.py" "$1/components/vsphere/dynamic.py"; }
# the connection moves from each resource into its explicit provider
held_by_provider() { grep -qs 'def vcenter_provider' "$1/components/dynamic/provider.py"; }
created=0 updated=0 deleted=0 steps=()
if held_by_resource "$OLD" && ! held_by_resource "$ROOT"; then
    created=$((created + 1)) deleted=$((deleted + 1)) steps+=("the node's roll created, the vGPU resource deleted")
fi
if ! held_by_provider "$OLD" && held_by_provider "$ROOT"; then
    created=$((created + 1)) updated=$((updated + 1))
    steps+=("the connection moved into the providers (pyvmomi updated, node-rolls created), no resource updated")
fi
PYTHONPATH=$ROOT run retire.log pulumi up --yes --non-interactive --diff
for op in created updated deleted; do
    if (( ${!op} )); then
        grep -q "${!op} $op" "$WORK/retire.log" || { cat "$WORK/retire.log"; fail "this tree's up: ${!op} $op"; }
    elif grep -q "[0-9] $op" "$WORK/retire.log"; then
        cat "$WORK/retire.log"; fail "this tree's up: nothing $op"
    fi
done
# --diff prints each step as "~ <type>: (update)", then its [id=...] and [urn=...] lines
UPDATES=$(awk '/: \(update\)$/ { getline; getline; print $1 }' "$WORK/retire.log" | sort -u)
if (( updated )) && [[ $UPDATES != *"pulumi:providers:pulumi-python::pyvmomi]" || $(wc -l <<<"$UPDATES") -ne 1 ]]; then
    cat "$WORK/retire.log"; fail "this tree's up: the one update is the pyvmomi provider's ($UPDATES)"
fi
(( ${#steps[@]} )) || steps=("nothing to retire")
did=$(printf '%s; ' "${steps[@]}"); did=${did%; }
AFTER=$(vm_now) || fail "reading the VM after this tree's up"
[[ $AFTER = "$BEFORE" ]] || fail "the VM changed: before '$BEFORE', after '$AFTER'"
pass "up with this tree: $did; the VM kept its vGPU, running, not rebooted ($AFTER)"

# what each resource records: this tree's inputs carry no credential at once; the outputs the previous release
# wrote keep theirs until the next refresh (or update) of the resource, which drops them
credentials_in() {
    pulumi stack export --file "$WORK/state-$1.json" >/dev/null 2>&1 || return 2
    "$PY" - "$WORK/state-$1.json" <<'PY'
import json, sys
retired = {"server", "user", "password", "insecure", "port", "kubeconfig", "oc"}
for r in json.load(open(sys.argv[1]))["deployment"]["resources"]:
    if r["type"] == "pulumi-python:dynamic:Resource":
        for side in ("inputs", "outputs"):
            if retired & set(r.get(side) or {}):
                print(f"{r['urn'].rsplit('::', 1)[-1]}.{side}")
PY
}
held_by_provider "$ROOT" || fail "this tree's providers hold the connection"
LEFT=$(credentials_in up) || fail "exporting the state after the upgrade"
! grep -q '\.inputs$' <<<"$LEFT" || fail "a resource's inputs still carry a credential after this tree's up: $LEFT"
PYTHONPATH=$ROOT run refresh.log pulumi refresh --yes --non-interactive
AFTER_REFRESH=$(credentials_in refresh) || fail "exporting the state after the refresh"
[[ -z $AFTER_REFRESH ]] || fail "a resource still carries a credential after the refresh: $AFTER_REFRESH"
[[ $(vm_now) = "$BEFORE" ]] || fail "the refresh changed the VM"
pass "credentials: in no resource's inputs after the up${LEFT:+ (outputs written before: $(wc -l <<<"$LEFT"))}, in none after a refresh; the VM untouched"

PYTHONPATH=$ROOT run preview.log pulumi preview --expect-no-changes --non-interactive --diff
grep -qE '6 unchanged' "$WORK/preview.log" || { cat "$WORK/preview.log"; fail "preview saw the stack, 2 providers and 3 resources unchanged"; }
pass "preview --expect-no-changes with this tree ($(git -C "$ROOT" rev-parse --short HEAD), working tree): 6 unchanged"

# the control: the same check does fail on a change
run config.log pulumi config set vmknic vmk2
if PYTHONPATH=$ROOT pulumi preview --expect-no-changes --non-interactive >"$WORK/changed.log" 2>&1 \
        || ! grep -q '1 to update' "$WORK/changed.log"; then
    cat "$WORK/changed.log"; fail "preview --expect-no-changes fails on a changed input"
fi
run config.log pulumi config rm vmknic
pass "control: preview --expect-no-changes fails when an input changes (1 to update)"

# ---------------------------------------------------------------- the up workflow's record of the built commit
run tag.log pulumi stack tag set gpu-lab:commit "$(git -C "$OLD" rev-parse HEAD)"
[[ $(pulumi stack tag get gpu-lab:commit 2>/dev/null) = "$(git -C "$OLD" rev-parse HEAD)" ]] \
    || fail "stack tag gpu-lab:commit reads back"
pass "stack tag gpu-lab:commit set and read back on the file backend"

# ---------------------------------------------------------------- destroy with this tree
PYTHONPATH=$ROOT run destroy.log pulumi destroy --yes --non-interactive
grep -q '6 deleted' "$WORK/destroy.log" || { cat "$WORK/destroy.log"; fail "destroy with this tree deleted the stack, 2 providers and 3 resources"; }
pass "destroy with this tree: the previous release's resources deleted"

finish
