#!/usr/bin/env bash
# The real Pulumi engine (make setup-pulumi) on the repo's own pyvmomi dynamic resources
# (components.dynamic: every one of them) against the project's vCenter simulator
# (lab-vcsim, `make simulator`) on a loopback port: preview with the project's policy pack, up,
# checks of the vSphere state and of secrets in the state file, an update, destroy, and a check
# that destroy put every host setting back (the VM keeps the vGPU its roll gave it: in a lab the VM
# is deleted with its roll).
# Prints one PASS line per step with its time and ends with "N passed, 0 failed"; stops with
# FAIL and the engine's output at the first failure. Nothing leaves 127.0.0.1.
#
# Env: PULUMI_CACHE_DIR (default <repo>/.cache/pulumi), VENV (default <repo>/.venv),
#      VCSIM (default <repo>/build/bin/lab-vcsim), ENGINE_SIM_KEEP=1 keeps the work dir.
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

export PATH=$CACHE/bin:$PATH PULUMI_HOME=$CACHE/home
export PULUMI_SKIP_UPDATE_CHECK=1 PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
# The dynamic provider process unpickles the providers by module name: it must find the repo.
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
export PULUMI_CONFIG_PASSPHRASE=engine-sim-$RANDOM$RANDOM
# A fresh password per run, so finding it anywhere in the state means it leaked from this run.
SIM_PASSWORD=sim-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
SIM_USER=lab-admin  # the simulator refuses user names with '@'
PACK=$ROOT/policies

make_work_dir engine-sim "${ENGINE_SIM_KEEP:-0}"
export PULUMI_BACKEND_URL=file://$WORK/state

# shellcheck source=scripts/lib-steps.sh
source "$ROOT/scripts/lib-steps.sh"

# vsphere prepare|state: reads the simulator with pyvmomi, independently of the engine. prepare
# (which waits until it answers) prints "host vmId vmName"; state prints one comparable line.
vsphere() {
    SIM_PORT=$SIM_PORT SIM_USER=$SIM_USER SIM_PASSWORD=$SIM_PASSWORD "$PY" - "$@" <<'EOF'
import os, sys, time
from pyVmomi import vim
from components.dynamic import hostops

what = sys.argv[1]
login = (os.environ["SIM_USER"], os.environ["SIM_PASSWORD"])
for attempt in range(100):  # the simulator prints its URL a moment before it answers
    try:
        with hostops.session("127.0.0.1", *login, port=int(os.environ["SIM_PORT"]), insecure=True) as si:
            content = si.RetrieveContent()
            host = content.rootFolder.childEntity[0].hostFolder.childEntity[0].host[0]
            vm = host.vm[0]
            if what == "prepare":
                print(host.name, vm._moId, vm.name)
            else:
                print(f"ruleset={hostops.get_ruleset_enabled(host, 'pvrdma')}"
                      f" option={hostops.get_advanced_option(host, 'Net.PVRDMAVmknic')!r}"
                      f" graphics={hostops.get_graphics_type(host)}"
                      f" modules={hostops.get_module_options(host, 'nmlx5_core')!r}"
                      f" vgpu={hostops.get_vgpu_profile(vm)!r} devices={len(hostops.vgpu_devices(vm))}"
                      f" power={vm.runtime.powerState}")
        break
    except (ConnectionError, OSError):
        if what != "prepare" or attempt == 99:
            raise
        time.sleep(0.1)
EOF
}

# expect_state WHAT LINE: the simulator's state as pyvmomi reads it must be LINE.
expect_state() {
    local got; got=$(vsphere state) || fail "reading the simulator's state ($1)"
    [[ $got = "$2" ]] || fail "$1: vSphere has '$got', expected '$2'"
}

# ---------------------------------------------------------------- lab-vcsim
start_vcsim "$SIM_USER" "$SIM_PASSWORD"
read -r HOST VM_ID VM_NAME < <(vsphere prepare) || fail "reading the simulator's inventory"
[[ -n $VM_NAME ]] || fail "reading the simulator's inventory: no host/VM found"
BEFORE=$(vsphere state)
# As a fresh ESXi host: ruleset off, option empty, graphics shared, no module options.
[[ $BEFORE = "ruleset=False option='' graphics=shared modules='' vgpu='' devices=0 power=poweredOn" ]] \
    || fail "unexpected start state: $BEFORE"
pass "lab-vcsim on 127.0.0.1:$SIM_PORT, host $HOST, VM $VM_NAME ($VM_ID): $BEFORE"

# ---------------------------------------------------------------- project
python_project engine-sim
cat >"$WORK/proj/__main__.py" <<'EOF'
"""The repo's pyvmomi resources under the real engine, against lab-vcsim."""
import pulumi

from components.dynamic.host_settings import (
    HostAdvancedOption,
    HostFirewallRuleset,
    HostGraphicsType,
    HostModuleOptions,
)
from components.dynamic.provider import VcenterConnection, node_roll_provider, vcenter_provider
from components.dynamic.roll import NodeRoll
from labrules.openshift import DEFAULT_OC, NODE_DRAIN_TIMEOUT_S

cfg = pulumi.Config()
conn = VcenterConnection(server="127.0.0.1", port=cfg.require_int("port"), user=cfg.require("user"),
                         password=cfg.require_secret("password"), insecure=True)  # the simulator: self-signed
host = cfg.require("host")
# The explicit providers hold the connection (and the rolls' cluster access: none here), as the program's do.
opts = pulumi.ResourceOptions(provider=vcenter_provider(conn))
HostFirewallRuleset("pvrdma-firewall", host, "pvrdma", True, opts=opts)
HostAdvancedOption("pvrdma-vmknic", host, "Net.PVRDMAVmknic", cfg.require("vmknic"), opts=opts)
HostGraphicsType("graphics", host, "sharedDirect", opts=opts)
HostModuleOptions("connectx-qos", host, "nmlx5_core", cfg.require("moduleOptions"), opts=opts)
# The node's roll, as for a VM the same deployment creates: its create attaches the vGPU, a change of
# the profile is rolled.
rolls = node_roll_provider(conn, None, cfg.get("oc") or DEFAULT_OC)
NodeRoll("roll", vm_id=cfg.require("vmId"), vm_name=cfg.require("vmName"), role="worker",
         cpus=cfg.require_int("cpus"), memory_mb=cfg.require_int("memoryMb"), memory_reservation_mb=None,
         hardware_version=None, vgpu_profile=cfg.require("vgpuProfile"), drain_timeout_s=NODE_DRAIN_TIMEOUT_S,
         new_vm=True, opts=pulumi.ResourceOptions(provider=rolls))
EOF
cd "$WORK/proj"
run stack.log pulumi stack init sim
# A stack without any config yet: the program must run and fail on its own missing config.
if pulumi preview >"$WORK/noconfig.log" 2>&1 \
        || ! grep -q "Missing required configuration variable 'engine-sim:port'" "$WORK/noconfig.log"; then
    cat "$WORK/noconfig.log"; fail "preview of a stack without config reports the missing key"
fi
# From stdin, so the password is not on a command line.
run config.log pulumi config set --secret password < <(printf '%s' "$SIM_PASSWORD")
for kv in "port=$SIM_PORT" "user=$SIM_USER" "host=$HOST" "vmId=$VM_ID" "vmName=$VM_NAME" \
          vmknic=vmk1 vgpuProfile=grid_v100-8c cpus=1 memoryMb=32 "moduleOptions=pfctx=0x08 pfcrx=0x08 trust_state=2"; do
    run config.log pulumi config set "${kv%%=*}" "${kv#*=}"
done
grep -qF "$SIM_PASSWORD" Pulumi.sim.yaml && fail "config file holds the password in clear"
{ grep -q 'password:' Pulumi.sim.yaml && grep -q 'secure:' Pulumi.sim.yaml; } || fail "password is not a secure config value"
pass "project + stack sim (file backend): missing config reported, password set with config set --secret"

# ---------------------------------------------------------------- preview + policy pack
run preview.log pulumi preview --policy-pack "$PACK"
# The pack's verdict line: a check mark only when no policy reported a violation.
PACK_VERSION=$(sed -n 's/^version: *//p' "$PACK/PulumiPolicy.yaml")
grep -qF "✅ gpu-lab@v$PACK_VERSION (local: $PACK)" "$WORK/preview.log" \
    || { cat "$WORK/preview.log"; fail "preview did not pass the gpu-lab policy pack"; }
grep -qE '\+ 8 to create' "$WORK/preview.log" || { cat "$WORK/preview.log"; fail "preview plans 8 creates"; }
pass "preview --policy-pack $PACK: gpu-lab pack loaded, no mandatory violation, 8 to create (the stack, 2 providers, 5 resources)"

# ---------------------------------------------------------------- up
run up.log pulumi up --yes --policy-pack "$PACK"
grep -q '8 created' "$WORK/up.log" || { cat "$WORK/up.log"; fail "up created 8 resources"; }
UP_STATE="ruleset=True option='vmk1' graphics=sharedDirect modules='pfctx=0x08 pfcrx=0x08 trust_state=2'"
expect_state "after up" "$UP_STATE vgpu='grid_v100-8c' devices=1 power=poweredOn"
pass "up --policy-pack: pvrdma ruleset on, Net.PVRDMAVmknic=vmk1, graphics sharedDirect, nmlx5_core options set, $VM_NAME has vGPU grid_v100-8c"

# ---------------------------------------------------------------- secrets in the state
run export.json pulumi stack export --file "$WORK/export.json"
"$PY" - "$WORK/export.json" <<'EOF' || fail "the password is not one secret per provider in pulumi stack export"
import json, sys
SIG = "4dabf18193072939515e22adb298388d"  # the engine's marker of a secret value
resources = json.load(open(sys.argv[1]))["deployment"]["resources"]
dynamic = [r for r in resources if r["type"] == "pulumi-python:dynamic:Resource"]
providers = [r for r in resources if r["type"] == "pulumi:providers:pulumi-python"]
assert len(dynamic) == 5 and sorted(p["urn"].rsplit("::", 1)[-1] for p in providers) == ["node-rolls", "pyvmomi"]
for r in dynamic:  # the connection is its provider's: no resource keeps a copy
    for side in ("inputs", "outputs"):
        assert not {"server", "user", "password", "kubeconfig"} & set(r[side]), (r["urn"], side, sorted(r[side]))
for p in providers:
    pw = p["inputs"]["vcenter:password"]
    assert isinstance(pw, dict) and pw.get(SIG) and pw.get("ciphertext"), (p["urn"], pw)
EOF
STATE_FILE=$WORK/state/.pulumi/stacks/engine-sim/sim.json
grep -qF "$VM_ID" "$STATE_FILE" || fail "no state file at $STATE_FILE (the grep below would prove nothing)"
# State, its backups and history, the stack config, the export.
grep -rqF "$SIM_PASSWORD" "$WORK/state" "$WORK/proj" "$WORK/export.json" && fail "the password is in clear in the state"
pass "password: secret ciphertext once in each of the 2 providers, in none of the 5 resources, nowhere in clear in the state"

# ---------------------------------------------------------------- a provider's configuration changes
# What a rotated password or a renewed kubeconfig does: the provider is updated (the engine configures a new
# provider process with it) and its resources take no step.
mkdir -p "$WORK/bin" && ln -sf "$(command -v true)" "$WORK/bin/oc"
run config.log pulumi config set oc "$WORK/bin/oc"
run up-provider.log pulumi up --yes --policy-pack "$PACK"
{ grep -q '1 updated' "$WORK/up-provider.log" && grep -q '7 unchanged' "$WORK/up-provider.log" \
    && grep -qE 'node-rolls[[:space:]]+updated' "$WORK/up-provider.log" \
    && ! grep -qE 'replace|created|deleted' "$WORK/up-provider.log"; } \
    || { cat "$WORK/up-provider.log"; fail "a change of the rolls' provider configuration updates it and nothing else"; }
expect_state "after the provider's change" "$UP_STATE vgpu='grid_v100-8c' devices=1 power=poweredOn"
pass "a provider's configuration changed (cluster:oc): the provider updated, its resources unchanged"

# ---------------------------------------------------------------- update
run config.log pulumi config set vgpuProfile grid_v100-16c
run up2.log pulumi up --yes --policy-pack "$PACK"
{ grep -q '1 updated' "$WORK/up2.log" && ! grep -q 'replace' "$WORK/up2.log"; } \
    || { cat "$WORK/up2.log"; fail "the profile change is one in-place update (the roll's)"; }
grep -qE 'roll[[:space:]]+updated' "$WORK/up2.log" || { cat "$WORK/up2.log"; fail "the roll made the profile change"; }
expect_state "after update" "$UP_STATE vgpu='grid_v100-16c' devices=1 power=poweredOn"
pass "update: vGPU profile changed in place to grid_v100-16c by the node's roll"

# ---------------------------------------------------------------- destroy
run destroy.log pulumi destroy --yes
grep -q '8 deleted' "$WORK/destroy.log" || { cat "$WORK/destroy.log"; fail "destroy deleted 8 resources"; }
# the host settings as before; the roll's delete leaves the VM its vGPU
AFTER_DESTROY=${BEFORE/vgpu=\'\' devices=0/vgpu=\'grid_v100-16c\' devices=1}
expect_state "after destroy" "$AFTER_DESTROY"
pass "destroy: host settings back as before; $VM_NAME keeps its vGPU ($AFTER_DESTROY)"

finish
