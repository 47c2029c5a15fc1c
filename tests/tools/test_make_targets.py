"""Every make target works as the first command of a fresh clone: what needs the virtualenv builds it first.

`make -n` (nothing runs) with VENV pointing at a directory that does not exist shows what a fresh
clone's `make <target>` would do: any command using the venv's Python, or a script that uses the
venv, must come after `python3 -m venv`. The targets are the ones `make help` documents.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# scripts a recipe runs that use the project's virtualenv themselves
USES_VENV = re.compile(r"\.venv|\$VENV|\$\{VENV|\$PY\b|\$\{PYTHON")


def documented_targets() -> list[str]:
    out = subprocess.run(["make", "-s", "-C", str(REPO), "help"], check=True, capture_output=True, text=True).stdout
    return [line.split("\t")[0] for line in out.splitlines() if line.strip()]


def dry_run(target: str, venv: Path, **variables: str) -> list[str]:
    args = [f"VENV={venv}", "LOGS=/nonexistent/logs", *(f"{k}={v}" for k, v in variables.items())]
    done = subprocess.run(["make", "-n", "-C", str(REPO), *args, target], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def needs_venv(line: str, venv: Path) -> bool:
    if f"{venv}/" in line and not line.startswith(f"python3 -m venv {venv}"):
        return True
    for script in re.findall(r"\bbash ((?:scripts|engine-bootstrap)/[\w./-]+\.sh)", line):
        if USES_VENV.search((REPO / script).read_text()):
            return True
    return False


def test_the_documented_targets_are_found():
    targets = documented_targets()
    assert {"setup", "plan", "test", "diff", "report", "engine-by-hand"} <= set(targets)


def test_every_target_the_docs_name_exists():
    # a `make <target>` in the README, the docs or the changelog is one `make help` lists
    named = set()
    for page in [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]:
        named |= set(re.findall(r"`make ([a-z][a-z-]*)", page.read_text()))
    assert {"plan", "test", "diff", "setup-pulumi", "pulumi-check"} <= named
    assert sorted(named - set(documented_targets())) == []


@pytest.mark.parametrize("target", documented_targets())
def test_a_target_builds_the_venv_before_it_uses_it(target, tmp_path):
    venv = tmp_path / "fresh-venv"
    lines = dry_run(target, venv)
    users = [i for i, line in enumerate(lines) if needs_venv(line, venv)]
    if not users:
        return
    built = [i for i, line in enumerate(lines) if line.startswith(f"python3 -m venv {venv}")]
    assert built and built[0] < users[0], f"make {target} uses the venv before building it: {lines[users[0]]}"


def test_the_rule_catches_a_target_without_setup(tmp_path):
    # the same check on a Makefile whose report target lacks `setup`, as it once did
    makefile = tmp_path / "Makefile"
    makefile.write_text("VENV ?= .venv\nPYTHON ?= $(VENV)/bin/python\n"
                        "$(VENV)/.installed:\n\tpython3 -m venv $(VENV)\n\ttouch $@\n"
                        "setup: $(VENV)/.installed\n"
                        "report:\n\t$(PYTHON) -m tools.report\n")
    venv = tmp_path / "fresh-venv"
    out = subprocess.run(["make", "-n", "-C", str(tmp_path), f"VENV={venv}", "report"], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    assert [line for line in out if needs_venv(line, venv)] and not any(line.startswith("python3 -m venv") for line in out)


def test_engine_targets_get_an_absolute_cache_dir(tmp_path):
    lines = dry_run("engine-by-hand", tmp_path / "venv", PULUMI_CACHE_DIR=".cache/pulumi")
    run = next(line for line in lines if "-m pytest" in line)
    assert f'PULUMI_CACHE_DIR="{REPO}/.cache/pulumi"' in run and "-m built_by_hand tests/engine" in run
    assert f'VCSIM="{REPO}/build/bin/lab-vcsim"' in run
    assert re.search(r"\s/\S+/bin/python -m pytest", run), run  # the venv's Python by absolute path
