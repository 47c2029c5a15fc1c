#!/usr/bin/env bash
# `make setup-pulumi`: puts a Pulumi engine for gpu-lab into .cache/pulumi (engine-bootstrap/README.md):
#   bin/    pulumi CLI, python language host (+ its exec script), dynamic-provider and
#           policy-pack launchers
#   home/   PULUMI_HOME, with resource provider plugins installed (`pulumi plugin ls`)
#   stamps/ one file per built component+version+recipe hash; a rerun skips what is current
#
# Where Pulumi's installer is reachable it uses that, as any site would. Without it (only
# package registries reachable) it builds the CLI and our language host from Go modules with the
# local Go toolchain (the recipes beside this script); what the module proxy does not serve is
# reported as blocked (see docs/engine.md) and the script still succeeds as long as the CLI and
# the language host are in place.
#
# Usage: engine-bootstrap/setup-pulumi.sh [--force] [--check]
#   --force  rebuild everything      --check  only report what is installed
# PLUGINS=required (make setup-pulumi PLUGINS=required): the provider plugins the program needs
# (command, vsphere, kubernetes at the SDKs' versions) are required too: exit 3 naming the ones
# missing, and how to install them by hand (docs/engine.md). Without it they are reported only.
# Env: PULUMI_CACHE_DIR (default <repo>/.cache/pulumi), VENV (default <repo>/.venv),
#      GOCACHE/GOMODCACHE as usual for Go (defaults keep builds warm across clones).
set -euo pipefail

BUILD=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BUILD")
CACHE=${PULUMI_CACHE_DIR:-$ROOT/.cache/pulumi}
VENV=${VENV:-$ROOT/.venv}
BIN=$CACHE/bin
STAMPS=$CACHE/stamps
LOGS=$CACHE/logs
export PULUMI_HOME=$CACHE/home
export PULUMI_SKIP_UPDATE_CHECK=1 PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
# The newest github.com/pulumi/pulumi/pkg/v3 whose source the module proxy serves here
# (3.260.0-3.274.0 answer 403); the Python SDK in the venv is 3.272.0, which this CLI drives
# fine (the engine protocol is versioned by feature, not by release).
CLI_VERSION=3.259.0
# gobuild DIR ARGS...: two cores, so at most two compile jobs, and one build at a time.
gobuild() { local dir=$1; shift; go -C "$dir" build -p 2 -trimpath "$@"; }
export GOFLAGS="-mod=mod -buildvcs=false"

FORCE=0 CHECK=0
for arg in "$@"; do
    case $arg in
        --force) FORCE=1 ;;
        --check) CHECK=1 ;;
        *) echo "usage: $0 [--force] [--check]" >&2; exit 2 ;;
    esac
done
case ${PLUGINS:-} in
    required|'') ;;
    *) echo "PLUGINS=${PLUGINS}: allowed: 'required' (the provider plugins must be installed) or empty" >&2; exit 2 ;;
esac

mkdir -p "$BIN" "$STAMPS" "$LOGS" "$PULUMI_HOME"
declare -A STATE=()

say() { printf '[setup-pulumi] %s\n' "$*" >&2; }

# Hash of the recipe files of a component, so editing a wrapper module rebuilds it.
recipe_hash() { cat "$@" | sha256sum | cut -c1-12; }

# fresh NAME VERSION HASH: true when the stamp matches and FORCE is off.
fresh() { [[ $FORCE = 0 && -f $STAMPS/$1 && $(cat "$STAMPS/$1") = "$2 $3" ]]; }
stamp() { printf '%s %s\n' "$2" "$3" > "$STAMPS/$1"; }

# timed NAME CMD...: runs CMD, logs to logs/NAME.log, records seconds in STATE.
timed() {
    local name=$1; shift
    local t0=$SECONDS
    if "$@" > "$LOGS/$name.log" 2>&1; then
        STATE[$name]="built in $((SECONDS - t0))s"
        return 0
    fi
    STATE[$name]="FAILED after $((SECONDS - t0))s: $(grep -v '^go: downloading' "$LOGS/$name.log" | tail -n 3 | tr '\n' ' ')"
    return 1
}

# Plugin versions the Python SDKs in the venv ask for (their pulumi-plugin.json).
plugin_version() {
    "$VENV/bin/python" - "$1" <<'EOF'
import importlib.util, json, os, sys
spec = importlib.util.find_spec("pulumi_" + sys.argv[1])
print(json.load(open(os.path.join(os.path.dirname(spec.origin), "pulumi-plugin.json")))["version"])
EOF
}

install_launchers() {
    local py=$VENV/bin/python f
    for f in pulumi-resource-pulumi-python pulumi-analyzer-policy-python; do
        sed "s|@DEFAULT_PYTHON@|$py|" "$BUILD/launchers/$f" > "$BIN/$f.tmp"
        chmod 755 "$BIN/$f.tmp"
        mv "$BIN/$f.tmp" "$BIN/$f"
    done
    install -m 755 "$BUILD/langhost/pulumi-language-python-exec" "$BIN/pulumi-language-python-exec"
    STATE[launchers]="installed"
}

build_cli() {
    local h; h=$(recipe_hash "$BUILD/cli/go.mod" "$BUILD/cli/go.sum")
    if fresh cli "$CLI_VERSION" "$h" && [[ -x $BIN/pulumi ]]; then STATE[cli]="cached"; return 0; fi
    say "building pulumi CLI $CLI_VERSION (cold: ~5 min on 2 cores)"
    timed cli gobuild "$BUILD/cli" \
        -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$CLI_VERSION" \
        -o "$BIN/pulumi.new" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi || return 1
    mv "$BIN/pulumi.new" "$BIN/pulumi"
    stamp cli "$CLI_VERSION" "$h"
}

build_langhost() {
    local v=$CLI_VERSION-gpulab.1 h
    h=$(recipe_hash "$BUILD/langhost/go.mod" "$BUILD/langhost/go.sum" "$BUILD/langhost/main.go")
    if fresh langhost "$v" "$h" && [[ -x $BIN/pulumi-language-python ]]; then STATE[langhost]="cached"; return 0; fi
    say "building pulumi-language-python $v"
    timed langhost gobuild "$BUILD/langhost" -ldflags "-s -w -X main.version=$v" \
        -o "$BIN/pulumi-language-python.new" . || return 1
    mv "$BIN/pulumi-language-python.new" "$BIN/pulumi-language-python"
    stamp langhost "$v" "$h"
}

# Earlier versions of this script built a gpu-lab stand-in registered as the real `command`
# provider; `pulumi plugin ls` could not tell it from pulumi-command, so it is gone. Remove it
# from a PULUMI_HOME it was installed into (its stamp says it is ours, not an upstream plugin).
remove_command_standin() {
    [[ -f $STAMPS/command ]] || return 0
    local v; v=$(cut -d' ' -f1 "$STAMPS/command")
    "$BIN/pulumi" plugin rm resource command "$v" --yes >/dev/null 2>&1 || true
    rm -f "$STAMPS/command" "$CACHE/build/pulumi-resource-command" "$LOGS/command.log"
    rmdir "$CACHE/build" 2>/dev/null || true
    say "removed the old gpu-lab stand-in for the command provider $v"
}

# The upstream provider modules are not served by the module proxy reachable here; probe once
# per run (well under a second each) so the day they are, the log says so.
probe_provider() {
    local name=$1 module=$2 want; want=$(plugin_version "$name")
    if "$BIN/pulumi" plugin ls 2>/dev/null | grep -q "^$name .*$want"; then STATE[$name]="installed"; return 0; fi
    local out proxy
    # The proxy alone: a `direct` fallback would only add a github.com DNS error.
    proxy=$(go env GOPROXY); proxy=${proxy%%[,|]direct}
    # Outside any module, so nothing of ours is touched.
    if out=$(cd "$CACHE" && GOPROXY=$proxy GOFLAGS=-mod=mod go mod download -json "$module@v$want" 2>&1); then
        STATE[$name]="module $module@v$want is now downloadable: add a build recipe (docs/engine.md)"
    else
        STATE[$name]="blocked: $(printf '%s' "$out" | grep -o '"Error": "[^"]*' | head -n1 | cut -c11- | sed 's/\\[nt]/ /g' | cut -c1-300)"
    fi
}

install_from_internet() {
    say "internet reachable: using Pulumi's installer"
    local sdk; sdk=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("pulumi"))')
    curl -fsSL https://get.pulumi.com | sh -s -- --version "$sdk" --install-root "$CACHE" --no-edit-path
    local p v
    for p in command kubernetes vsphere; do
        v=$(plugin_version "$p")
        if "$BIN/pulumi" plugin install resource "$p" "$v"; then STATE[$p]="installed $v"; else STATE[$p]="FAILED $v"; fi
    done
    STATE[cli]="installed $sdk from get.pulumi.com"
}

report() {
    local k
    for k in cli langhost launchers command vsphere kubernetes; do
        printf '%-10s %s\n' "$k" "${STATE[$k]:-not attempted}"
    done
    if [[ -x $BIN/pulumi ]]; then
        printf '%-10s %s\n' version "$("$BIN/pulumi" version 2>/dev/null)"
        "$BIN/pulumi" plugin ls 2>/dev/null | sed 's/^/plugins    /'
    fi
    echo "use: PATH=$BIN:\$PATH PULUMI_HOME=$PULUMI_HOME pulumi ..."
}

# PLUGINS=required: exit 3 when a provider plugin the program needs is not installed, saying which
# and what to do; otherwise a missing plugin is only reported (the CI run does not need them).
require_plugins() {
    [[ ${PLUGINS:-} = required ]] || return 0
    [[ -x $VENV/bin/python ]] || { say "PLUGINS=required: no virtualenv at $VENV to read the plugin versions from: run make setup"; exit 3; }
    local p v absent=()
    for p in command vsphere kubernetes; do
        v=$(plugin_version "$p")
        [[ -x $BIN/pulumi ]] && "$BIN/pulumi" plugin ls 2>/dev/null | grep -q "^$p .*$v" || absent+=("$p $v")
    done
    [[ ${#absent[@]} = 0 ]] && { say "PLUGINS=required: every provider plugin is installed"; return 0; }
    local list; list=$(IFS=,; echo "${absent[*]}")
    say "PLUGINS=required: not installed: ${list//,/, }"
    say "where they cannot be downloaded, install each from a file: on a machine that can, download"
    say "  the plugin archive (pulumi-resource-<name>-v<version>-linux-amd64.tar.gz from the provider's release),"
    say "  then here: PULUMI_HOME=$PULUMI_HOME $BIN/pulumi plugin install resource <name> <version> --file <tarball>"
    say "  (docs/engine.md, provider plugins)"
    exit 3
}

if [[ $CHECK = 1 ]]; then
    [[ -x $BIN/pulumi ]] && STATE[cli]="present" || STATE[cli]="missing"
    [[ -x $BIN/pulumi-language-python ]] && STATE[langhost]="present" || STATE[langhost]="missing"
    report
    [[ -x $BIN/pulumi && -x $BIN/pulumi-language-python ]] || exit 1
    require_plugins
    exit 0
fi

t_all=$SECONDS
if curl -fsS -m 5 -o /dev/null https://get.pulumi.com 2>/dev/null; then
    install_from_internet
    STATE[langhost]="from the installer" STATE[launchers]="from the installer"
else
    command -v go >/dev/null || { say "no internet and no Go toolchain: cannot build Pulumi"; exit 1; }
    ok=1
    build_cli || ok=0
    build_langhost || ok=0
    install_launchers
    if [[ $ok = 1 ]]; then
        remove_command_standin
        probe_provider command github.com/pulumi/pulumi-command/provider
        probe_provider vsphere github.com/pulumi/pulumi-vsphere/provider/v4
        probe_provider kubernetes github.com/pulumi/pulumi-kubernetes/provider/v4
    fi
fi
report
say "done in $((SECONDS - t_all))s"
[[ -x $BIN/pulumi && -x $BIN/pulumi-language-python ]] || exit 1
require_plugins
