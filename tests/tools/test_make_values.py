"""A value given to make is data, never shell or make text: each one a recipe or mk/*.mk uses is
refused (exit 2, naming the variable and its pattern) before anything runs, and BASE reaches
tools.diff through the environment. tools.diff itself refuses a base that is not a plain revision.

`make -n` runs no recipe, but make still expands what it reads: a `$(shell ...)` in a value would
run there, so the marker file tells whether anything ran at all.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tools.diff import cli

REPO = Path(__file__).resolve().parents[2]
RELEASE = "8b1e349d8fedb68beec43c65e684dd35051145a1"  # release/releases.txt, 0.1.0

INJECTIONS = ["`touch {m}`", "$(touch {m})", "$(shell touch {m})", "; touch {m}", "'; touch {m}; '",
              "\"; touch {m}; \"", "x\ntouch {m}", "x && touch {m}"]
CHECKED = ["STACK", "SIM_STACK", "OUT", "VENV", "PYTHON", "PULUMI_CACHE_DIR", "LOGS", "BASE", "FAIL_ON",
           "PLUGINS", "ACCEPTANCE_NS", "SIZES", "TIME_LIMIT", "REPORT_ARGS"]


def make(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPO), *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **(env or {})})


@pytest.fixture
def stub(tmp_path):
    """A PYTHON that records how it was called, and a venv make takes as built."""
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".installed").touch()  # newer than requirements.lock: setup has nothing to do
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nprintf "%s|%s\\n" "$GPU_LAB_BASE" "$*" >> "{tmp_path}/calls"\n')
    python.chmod(0o755)
    return {"venv": venv, "python": python, "calls": tmp_path / "calls"}


@pytest.mark.parametrize("variable", CHECKED)
@pytest.mark.parametrize("text", INJECTIONS)
def test_shell_or_make_text_in_any_value_is_refused_before_anything_runs(tmp_path, variable, text):
    marker = tmp_path / "ran"
    value = text.format(m=marker)
    done = make("-n", "help", f"{variable}={value}")
    assert done.returncode == 2, (variable, done.stdout, done.stderr)
    assert f"*** {variable}=" in done.stderr and f"is refused: {variable} must be" in done.stderr
    assert not marker.exists()
    # the same from the environment
    done = make("-n", "help", env={variable: value})
    assert done.returncode == 2 and f"is refused: {variable} must be" in done.stderr
    assert not marker.exists()


def test_make_diff_with_a_base_in_backquotes_runs_nothing(tmp_path, stub):
    marker = tmp_path / "X"
    for base in (f"`touch {marker}`", f"$(touch {marker})", "-x", "--output=x", "HEAD; touch x", "a b"):
        done = make("diff", f"BASE={base}", f"VENV={stub['venv']}", f"PYTHON={stub['python']}")
        assert done.returncode == 2, base
        assert "BASE must be a release (v0.1.0) or a git revision" in done.stderr
        assert not marker.exists() and not stub["calls"].exists()


@pytest.mark.parametrize("base", ["v0.1.0", "0.1.0", "HEAD", "HEAD~1", "main", "origin/main", "main@{1}", RELEASE])
def test_make_diff_passes_a_revision_as_data(stub, base):
    done = make("diff", f"BASE={base}", f"VENV={stub['venv']}", f"PYTHON={stub['python']}")
    assert done.returncode == 0, done.stderr
    # through the environment: the recipe's shell never parsed it
    assert stub["calls"].read_text() == f"{base}|-m tools.diff --stack lab --base {base} --fail-on  --out build/lab\n"
    assert '--base "$GPU_LAB_BASE"' in done.stdout


@pytest.mark.parametrize(("variable", "value"), [
    ("STACK", "lab-2.old_1"), ("OUT", "build/pr-plan"), ("OUT", "/tmp/a+b@c:d%e"), ("FAIL_ON", "reboot,network"),
    ("FAIL_ON", ""), ("LOGS", ""), ("PLUGINS", "required"), ("SIZES", "4,64,512"), ("TIME_LIMIT", "1.5"),
    ("ACCEPTANCE_NS", "gpu-lab-acceptance"), ("PULUMI_CACHE_DIR", ".cache/pulumi"),
    ("REPORT_ARGS", "--link-gbps 100 --min-speedup=1.5"),
])
def test_the_values_people_use_pass(variable, value):
    done = make("-n", "help", f"{variable}={value}")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("variable", "value"), [
    ("STACK", ""), ("STACK", "-lab"), ("STACK", "a/b"), ("OUT", "-rf"), ("OUT", "a b"), ("LOGS", "/x y"),
    ("REPORT_ARGS", "--link-gbps\t100"), ("REPORT_ARGS", "a|b"), ("ACCEPTANCE_NS", "a_b"), ("SIZES", "4 64"),
])
def test_values_outside_their_pattern_are_refused(variable, value):
    done = make("-n", "help", f"{variable}={value}")
    assert done.returncode == 2 and f"is refused: {variable} must be" in done.stderr


@pytest.mark.parametrize("base", ["`touch x`", "$(touch x)", "-x", "--output=/tmp/x", "HEAD;x", "a b", "HEAD:path",
                                  "'", "", "main\nx"])
def test_tools_diff_refuses_a_base_that_is_not_a_plain_revision(base):
    with pytest.raises(cli.BadInput, match="is not a plain revision"):
        cli.resolve_base(base)


def test_tools_diff_stops_before_any_plan_on_such_a_base(tmp_path, capsys):
    assert cli.main(["--base=--output=x", "--out", str(tmp_path)]) == 2
    assert "is not a plain revision" in capsys.readouterr().err
    assert not (tmp_path / "diff.json").exists()


@pytest.mark.parametrize("base", ["HEAD", "v0.1.0", "0.1.0", RELEASE, "HEAD^{commit}"])
def test_tools_diff_still_resolves_releases_and_revisions(base):
    commit = cli.resolve_base(base)
    assert len(commit) == 40
    if base in ("v0.1.0", "0.1.0", RELEASE):
        assert commit == RELEASE
