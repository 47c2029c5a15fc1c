#!/usr/bin/env bash
# The steps of .github/workflows/up.yml that read text from outside the repository: the commit the
# stack records (stack tag gpu-lab:commit; whoever holds the backend's credentials can write it) and
# the lab environment's settings from the GitHub API. Each value is checked against what it may be
# and then passed as one argument, never as shell text; a value that fails stops the job.
#
#   up-steps.sh built-commit   print the recorded commit, nothing when the stack has none; exit 1
#                              unless it is 40 hex digits naming a commit of HEAD's history
#   up-steps.sh offline-diff   make diff against that commit, its table into the step summary, then
#                              tools.up_gate on its verdict (ALLOW: the dispatch's allowed effects)
#   up-steps.sh environment    the environment must need another's review and deploy main only
#                              (tools/up_environment.py; GH_TOKEN, API, REPOSITORY)
#   up-steps.sh python         the interpreter the job builds its virtualenv from is not writable by it
# Env: STACK (default lab), ENVIRONMENT (default lab), PYTHON (default .venv/bin/python),
#      GITHUB_STEP_SUMMARY (offline-diff).
set -euo pipefail

STACK=${STACK:-lab}
PYTHON=${PYTHON:-.venv/bin/python}
TAG=gpu-lab:commit

[[ $STACK =~ ^[A-Za-z0-9._-]+$ ]] || { echo "STACK: not a stack name" >&2; exit 2; }

# refuse VALUE WHY: the tag's text is shown quoted on one line (printf %q), never run or echoed raw.
refuse() {
    local shown
    shown=$(printf '%q' "${1:0:100}")
    echo "error: the stack's tag $TAG holds $shown, which $2." >&2
    echo "  Allowed: the 40-hex id of a commit on main's history (up.yml records github.sha there after" >&2
    echo "  each update). Nothing was run. After checking who wrote it, record the commit the lab was" >&2
    echo "  built from: pulumi stack tag set $TAG <40-hex commit> --stack $STACK" >&2
    exit 1
}

built_commit() {
    local built
    built=$(pulumi stack tag get "$TAG" --stack "$STACK" 2>/dev/null) || built=""
    [[ -n $built ]] || return 0
    [[ $built =~ ^[0-9a-f]{40}$ ]] || refuse "$built" "is not a commit id (exactly 40 lowercase hex digits)"
    git cat-file -e "$built^{commit}" 2>/dev/null || refuse "$built" "is no commit of this repository"
    git merge-base --is-ancestor "$built" HEAD \
        || refuse "$built" "is not an ancestor of HEAD ($(git rev-parse HEAD)), the main commit this run deploys"
    printf '%s\n' "$built"
}

offline_diff() {
    local built
    built=$(built_commit)
    if [[ -z $built ]]; then
        echo "the stack records no $TAG tag yet (first update with this workflow): the real preview below is the gate"
        return 0
    fi
    make diff STACK="$STACK" BASE="$built" OUT=build/up-diff | tee diff.log
    { echo "### make diff ($STACK) against $built"; echo '```'; cat diff.log; echo '```'; } >> "${GITHUB_STEP_SUMMARY:-/dev/null}"
    "$PYTHON" -m tools.up_gate diff build/up-diff/diff.json --allow "${ALLOW:-}"
}

environment() {
    python3 -m tools.up_environment --api "${API:?}" --repository "${REPOSITORY:?}" --environment "${ENVIRONMENT:-lab}"
}

# A planted sitecustomize.py or stdlib module would run with every secret: the job's Python must be
# one its user cannot change (the OS's, root-owned), not a tool cache an earlier job could write.
check_python() {
    local exe dirs dir
    # root may write every directory: the runner runs as a user of its own
    [[ $(id -u) != 0 ]] || { echo "error: the job runs as root; run the up runner as an unprivileged user" >&2; exit 1; }
    exe=$(command -v python3) || { echo "error: no python3 on PATH (the OS's python3 >= 3.11 with venv)" >&2; exit 1; }
    python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || { echo "error: $exe is older than 3.11" >&2; exit 1; }
    dirs=$(python3 -I -c 'import sys, sysconfig; print(sys.executable); print(*{sysconfig.get_path(k) for k in ("stdlib", "platstdlib")}, sep="\n")')
    while IFS= read -r dir; do
        dir=$(readlink -f -- "$dir")
        if [[ -w $dir ]]; then
            echo "error: $dir is writable by $(id -un): a job could plant code there; use the OS's python3" >&2
            exit 1
        fi
    done <<<"$dirs"
    echo "python3: $exe ($(python3 -V)), not writable by $(id -un)"
}

case ${1:-} in
    built-commit) built_commit ;;
    offline-diff) offline_diff ;;
    environment) environment ;;
    python) check_python ;;
    *) echo "usage: $0 built-commit|offline-diff|environment|python" >&2; exit 2 ;;
esac
