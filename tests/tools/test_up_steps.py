"""The up job runs no text it reads: scripts/up-steps.sh on the stack's recorded commit and on the
lab environment's settings, and the job's private directories (.github/workflows/up.yml).

The recorded commit comes from a stand-in `pulumi` whose `stack tag get` answers what the test
writes; a stand-in `make` records every call. A tag that is not 40 hex digits naming a commit of
HEAD's history stops the step before make is called, and nothing written in the tag runs.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from tools import up_environment

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "up-steps.sh"
WORKFLOW = REPO / ".github" / "workflows" / "up.yml"

PULUMI = """#!/bin/sh
# stand-in: `pulumi stack tag get NAME --stack S` answers the file $TAG_FILE, exit 1 when it is absent
[ "$1 $2 $3" = "stack tag get" ] || { echo "unexpected: pulumi $*" >&2; exit 3; }
[ -f "$TAG_FILE" ] || { echo "error: stack tag not found" >&2; exit 1; }
cat "$TAG_FILE"
"""
MAKE = """#!/bin/sh
# stand-in: records its arguments, writes a verdict with no change
printf '%s\\n' "$*" >> "$MAKE_CALLS"
mkdir -p build/up-diff
echo '{"changes": []}' > build/up-diff/diff.json
echo "make diff: no changes"
"""


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid", "HOME": str(repo)}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A clone of main with two commits, and a commit of another branch that main does not contain."""
    repo = tmp_path_factory.mktemp("clone")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "built")
    built = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "evil")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "not on main")
    other = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "deployed now")
    head = _git(repo, "rev-parse", "HEAD")
    return {"repo": repo, "built": built, "head": head, "other": other}


def _run_step(history, tmp_path, tag: str | None, command: str = "offline-diff", make: str = MAKE,
              allow: str = "") -> subprocess.CompletedProcess:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("pulumi", PULUMI), ("make", make)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    if tag is not None:
        (tmp_path / "tag").write_text(tag)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "TAG_FILE": str(tmp_path / "tag"),
           "MAKE_CALLS": str(tmp_path / "make-calls"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
           "PYTHON": sys.executable, "PYTHONPATH": str(REPO), "ALLOW": allow, "STACK": "lab",
           "HOME": str(tmp_path)}
    return subprocess.run(["bash", str(SCRIPT), command], cwd=history["repo"], env=env, capture_output=True,
                          text=True, timeout=60)


def _marker(tmp_path: Path) -> Path:
    return tmp_path / "ran"


# Each one a tag an attacker with the backend's credentials could write.
SHELL_TEXT = ["`touch {m}`", "$(touch {m})", "; touch {m}", "'; touch {m}; '", "\"; touch {m}; \"",
              "x' || touch {m} || '", "{built}\n$(touch {m})", "{built}; touch {m}", "$(touch {m}){built}"]
NOT_A_COMMIT = ["origin/evil", "HEAD", "main", "{short}", "{upper}", " {built}", "--output={m}", "-{built39}"]


@pytest.mark.parametrize("tag", SHELL_TEXT + NOT_A_COMMIT)
def test_a_tag_that_is_not_40_hex_stops_the_job_and_runs_nothing(history, tmp_path, tag):
    built = history["built"]
    text = tag.format(m=_marker(tmp_path), built=built, short=built[:12], upper=built.upper(), built39=built[:39])
    done = _run_step(history, tmp_path, text)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "tag gpu-lab:commit holds" in done.stderr and "is not a commit id (exactly 40 lowercase hex digits)" \
        in done.stderr
    assert "Allowed: the 40-hex id of a commit on main's history" in done.stderr
    assert not _marker(tmp_path).exists()
    assert not (tmp_path / "make-calls").exists()  # make diff (and so the tag's tree) never ran
    assert not (tmp_path / "summary").exists()
    # shown on one line, quoted: no line of the log starts with the tag's own text
    assert len([line for line in done.stderr.splitlines() if "holds" in line]) == 1


def test_a_commit_that_is_not_mains_stops_the_job(history, tmp_path):
    done = _run_step(history, tmp_path, history["other"])
    assert done.returncode == 1
    assert f"holds {history['other']}, which is not an ancestor of HEAD ({history['head']})" in done.stderr
    done = _run_step(history, tmp_path, "0123456789abcdef" * 2 + "01234567")
    assert done.returncode == 1 and "which is no commit of this repository" in done.stderr
    assert not (tmp_path / "make-calls").exists()


@pytest.mark.parametrize("which", ["built", "head"])
def test_an_ancestor_of_head_is_diffed_against(history, tmp_path, which):
    sha = history[which]
    done = _run_step(history, tmp_path, sha + "\n")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "make-calls").read_text() == f"diff STACK=lab BASE={sha} OUT=build/up-diff\n"
    assert f"### make diff (lab) against {sha}" in (tmp_path / "summary").read_text()
    assert "make diff: no changes" in done.stdout
    printed = _run_step(history, tmp_path, sha, "built-commit")
    assert printed.returncode == 0 and printed.stdout == f"{sha}\n"


def test_no_tag_leaves_the_gate_to_the_real_preview(history, tmp_path):
    done = _run_step(history, tmp_path, None)
    assert done.returncode == 0 and "records no gpu-lab:commit tag yet" in done.stdout
    assert not (tmp_path / "make-calls").exists()


def test_the_gate_still_stops_on_the_diffs_verdict(history, tmp_path):
    deleting = MAKE.replace('{"changes": []}', '{"changes": [{"type": "t", "name": "n", "op": "delete", '
                                               '"keys": [], "effects": ["delete"]}]}')
    done = _run_step(history, tmp_path, history["built"], make=deleting)
    assert done.returncode == 1 and "delete: t n (delete)" in done.stdout
    assert _run_step(history, tmp_path, history["built"], make=deleting, allow="delete").returncode == 0


# ---------------------------------------------------------------- the lab environment

RULES = [{"id": 3736, "node_id": "a", "type": "wait_timer", "wait_timer": 30},
         {"id": 3755, "node_id": "b", "type": "required_reviewers", "prevent_self_review": True,
          "reviewers": [{"type": "Team", "reviewer": {"slug": "lab-admins"}}]}]
MAIN_ONLY = {"protected_branches": False, "custom_branch_policies": True}
PROTECTED = {"name": "lab", "protection_rules": RULES, "deployment_branch_policy": MAIN_ONLY}
MAIN = {"total_count": 1, "branch_policies": [{"id": 361471, "node_id": "c", "name": "main", "type": "branch"}]}


def _with_reviewers(**rule):
    return {**PROTECTED, "protection_rules": [RULES[0], {**RULES[1], **rule}]}


@pytest.mark.parametrize(("environment", "policies", "problem"), [
    (PROTECTED, MAIN, None),
    ({**PROTECTED, "deployment_branch_policy": {"protected_branches": True, "custom_branch_policies": False}},
     None, "deploys every protected branch, not main alone"),
    ({**PROTECTED, "deployment_branch_policy": None}, None, "it deploys any branch"),
    ({k: v for k, v in PROTECTED.items() if k != "deployment_branch_policy"}, None, "it deploys any branch"),
    (_with_reviewers(prevent_self_review=False), MAIN, "whoever starts the run may approve it"),
    (_with_reviewers(prevent_self_review=None), MAIN, "Prevent self-review"),
    ({**PROTECTED, "protection_rules": [RULES[0]]}, MAIN, "it requires no reviewer"),
    (_with_reviewers(reviewers=[]), MAIN, "it requires no reviewer"),
    (PROTECTED, {"total_count": 1, "branch_policies": [{"name": "release/*", "type": "branch"}]},
     "its deployment branch rules are branch 'release/*', not the branch 'main' alone"),
    (PROTECTED, {"total_count": 1, "branch_policies": [{"name": "main", "type": "tag"}]}, "tag 'main'"),
    (PROTECTED, {"total_count": 2, "branch_policies": [MAIN["branch_policies"][0], {"name": "dev", "type": "branch"}]},
     "branch 'main', branch 'dev'"),
    (PROTECTED, {"total_count": 0, "branch_policies": []}, "rules are none"),
    (PROTECTED, {"total_count": 1, "branch_policies": [{"name": "main"}]}, "? 'main'"),  # no type: not a branch
])
def test_the_environment_must_deploy_main_only_after_anothers_review(environment, policies, problem):
    found = up_environment.problems(environment, policies)
    assert (found == []) == (problem is None), found
    if problem:
        assert any(problem in p for p in found), found


class _Api(BaseHTTPRequestHandler):
    answers: dict[str, object] = {}
    seen: list[tuple[str, str | None]] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        type(self).seen.append((self.path, self.headers.get("Authorization")))
        body = self.answers.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps(body if body is not None else {"message": "Not Found"}).encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def api():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Api.seen = []
    yield server, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _environment_step(url: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "GH_TOKEN": "t0ken", "API": url, "REPOSITORY": "o/r"}
    return subprocess.run(["bash", str(SCRIPT), "environment"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize(("environment", "policies", "rc", "said"), [
    (PROTECTED, MAIN, 0, "lab environment: 1 required reviewer(s), no self-review, deploys main only"),
    (_with_reviewers(prevent_self_review=False), MAIN, 1, "whoever starts the run may approve it"),
    (PROTECTED, {"total_count": 1, "branch_policies": [{"name": "*", "type": "branch"}]}, 1, "branch '*'"),
    ({**PROTECTED, "deployment_branch_policy": {"protected_branches": True, "custom_branch_policies": False}},
     None, 1, "every protected branch"),
    (PROTECTED, None, 2, "could not be read"),  # the policies endpoint answers 404
])
def test_the_environment_step_asks_the_api(api, environment, policies, rc, said):
    _, url = api
    _Api.answers = {"/repos/o/r/environments/lab": environment,
                    "/repos/o/r/environments/lab/deployment-branch-policies?per_page=100": policies}
    done = _environment_step(url)
    assert done.returncode == rc, done.stdout + done.stderr
    assert said in (done.stdout if rc == 0 else done.stderr)
    assert all(auth == "Bearer t0ken" for _, auth in _Api.seen)
    custom = (environment.get("deployment_branch_policy") or {}).get("custom_branch_policies")
    assert len(_Api.seen) == (2 if custom else 1)


# ---------------------------------------------------------------- the job's private directories


def _steps():
    return yaml.safe_load(WORKFLOW.read_text())["jobs"]["up"]["steps"]


def _step(needle: str) -> dict:
    return next(s for s in _steps() if needle in s.get("run", ""))


def _read_env_file(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def test_the_job_works_in_private_directories_and_removes_them_whatever_happened(tmp_path):
    steps = _steps()
    private = _step('mktemp -d "$RUNNER_TEMP/')
    checkout = next(i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/checkout@"))
    assert steps.index(private) < checkout  # the checkout's git already runs with the private HOME
    runner_temp = tmp_path / "_temp"
    runner_temp.mkdir()
    github_env, github_path = tmp_path / "github_env", tmp_path / "github_path"
    base = {"PATH": os.environ["PATH"], "RUNNER_TEMP": str(runner_temp), "GITHUB_ENV": str(github_env),
            "GITHUB_PATH": str(github_path)}
    subprocess.run(["bash", "-e", "-c", private["run"]], env=base, check=True, timeout=30)
    env = _read_env_file(github_env)
    job = Path(env["GPU_LAB_JOB_DIR"])
    assert job.parent == runner_temp and stat.S_IMODE(job.stat().st_mode) == 0o700
    for name in ("HOME", "TMPDIR", "TMP", "TEMP", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
                 "PIP_CACHE_DIR", "GOCACHE", "GOPATH", "GOMODCACHE", "PULUMI_HOME", "PULUMI_CACHE_DIR"):
        assert Path(env[name]).is_relative_to(job), name
    for name in ("HOME", "TMPDIR", "XDG_CACHE_HOME"):
        assert Path(env[name]).is_dir() and stat.S_IMODE(Path(env[name]).stat().st_mode) == 0o700, name
    # the Pulumi CLI comes from there, not from the runner's tool cache
    assert github_path.read_text().splitlines() == [f"{job}/pulumi/bin"]
    assert any(s.get("run") == "make setup-pulumi" for s in steps)
    assert not any(s.get("uses", "").startswith(("pulumi/actions@", "actions/setup-python@")) for s in steps)

    # the node roll writes the cluster's admin kubeconfig with tempfile.mkstemp (components/dynamic/roll.py):
    # with the job's environment it lands in the private TMPDIR
    roll = (REPO / "components" / "dynamic" / "roll.py").read_text()
    assert re.search(r'tempfile\.mkstemp\(prefix="gpu-lab-kubeconfig-"[^)]*\)', roll)
    assert not re.search(r"tempfile\.mkstemp\([^)]*\bdir=", roll)  # so TMPDIR decides where
    made = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.mkstemp(prefix='gpu-lab-kubeconfig-')[1])"],
                          env={**base, **env}, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(made).parent == Path(env["TMPDIR"])

    # Go leaves its module cache read-only; the cleanup removes it all the same
    readonly = Path(env["GOMODCACHE"]) / "example.com" / "m@v1"
    readonly.mkdir(parents=True)
    (readonly / "go.mod").write_text("module m\n")
    (readonly / "go.mod").chmod(0o444)
    readonly.chmod(0o555)
    cleanup = steps[-1]
    assert cleanup["if"] == "always()"
    workspace = tmp_path / "workspace"
    (workspace / "build" / "lab" / "openshift-install").mkdir(parents=True)
    subprocess.run(["bash", "-e", "-c", cleanup["run"]], env={**base, **env}, cwd=workspace, check=True, timeout=30)
    assert not job.exists() and not (workspace / "build" / "lab" / "openshift-install").exists()
    # a job stopped before the directories existed: the cleanup still passes
    subprocess.run(["bash", "-e", "-c", cleanup["run"]], env=base, cwd=workspace, check=True, timeout=30)


def test_every_step_gets_outside_text_through_the_environment_only():
    for step in _steps():
        assert "${{" not in step.get("run", ""), step.get("name")
    for needle in ("up-steps.sh offline-diff", "up-steps.sh environment"):
        step = _step(needle)
        assert step["run"] == f"bash scripts/{needle}", step["run"]
    assert _step("up-steps.sh offline-diff")["env"]["STACK"] == "lab"


def test_the_job_refuses_a_python_it_could_change(tmp_path):
    # a stand-in python3 whose standard library is a directory the job may write
    writable = tmp_path / "lib"
    writable.mkdir()
    stub = tmp_path / "bin" / "python3"
    stub.parent.mkdir()
    stub.write_text(f'#!/bin/sh\ncase "$1" in -I) echo "{writable}";; -V) echo Python 3.11.9;; esac\nexit 0\n')
    stub.chmod(0o755)
    env = {"PATH": f"{stub.parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(SCRIPT), "python"], env=env, capture_output=True, text=True, timeout=30)
    if os.geteuid() == 0:  # root may write anywhere: refused as such
        assert done.returncode == 1 and "the job runs as root" in done.stderr
        return
    assert done.returncode == 1 and f"{writable} is writable by" in done.stderr
    # the OS's own python3 passes for an unprivileged user (where it is 3.11 or newer)
    done = subprocess.run(["bash", str(SCRIPT), "python"], env={"PATH": "/usr/bin:/bin"}, capture_output=True,
                          text=True, timeout=30)
    assert ("not writable by" in done.stdout) if done.returncode == 0 else ("older than 3.11" in done.stderr), \
        done.stderr


def test_the_up_job_writes_every_checkpoint_gzipped_and_never_skips_one():
    """The runbook's state setting holds in the job that applies it: PULUMI_DIY_BACKEND_GZIP (sdk
    go/common/env/env.go at v3.259.0) compresses each save and keeps all of them; the settings that
    drop a save or its check never appear, nor zstd, which the backend refuses beside gzip
    (pkg/backend/diy/backend.go:1722; docs/benchmark.md, "Checkpoints")."""
    job = yaml.safe_load(WORKFLOW.read_text())["jobs"]["up"]
    assert job["env"]["PULUMI_DIY_BACKEND_GZIP"] == "true"
    text = WORKFLOW.read_text()
    for refused in ("PULUMI_SKIP_CHECKPOINTS", "--disable-integrity-checking", "PULUMI_DIY_BACKEND_ZSTD"):
        assert refused not in text, refused
