# shellcheck shell=bash
# Step reporting for the engine scripts (engine-sim.sh, engine-upgrade.sh), sourced after WORK is
# set: one PASS line per step with its time; at the first failure FAIL, the count and exit 1.

PASSED=0
T0=$SECONDS
step_start=$SECONDS
pass() { echo "PASS $* ($((SECONDS - step_start))s)"; PASSED=$((PASSED + 1)); step_start=$SECONDS; }
fail() {
    echo "FAIL $*"
    echo "$PASSED passed, 1 failed"
    exit 1
}
# run LOG CMD...: the engine's output goes to WORK/LOG and is printed when the command fails.
run() {
    local log=$WORK/$1; shift
    local rc=0
    "$@" >"$log" 2>&1 || rc=$?
    [[ $rc = 0 ]] || { cat "$log"; fail "$* (exit $rc)"; }
}
# finish: the total time and the count, after the last step.
finish() {
    echo "total $((SECONDS - T0))s"
    echo "$PASSED passed, 0 failed"
}

# python_project NAME: WORK/proj/Pulumi.yaml of a Python project run by the venv VENV.
python_project() {
    mkdir -p "$WORK/state" "$WORK/proj"
    cat >"$WORK/proj/Pulumi.yaml" <<YAML
name: $1
runtime:
  name: python
  options:
    virtualenv: $VENV
YAML
}
