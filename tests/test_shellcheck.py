"""shellcheck on every shell script of the repository: the templates as they are, the scripts
under scripts/, and what the program renders from the templates and for the switches.

shellcheck is a Debian package (scripts/install-test-tools.sh installs it). Under CI (CI=true)
a missing shellcheck fails; elsewhere these tests skip with the reason.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from required_tools import require_tool
from shell_plans import rendered_scripts

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = sorted(ROOT.glob("components/*/scripts/*.sh"))
_SHELL_SHEBANG = re.compile(rb"^#!\s*(/usr/bin/env\s+)?(/bin/|/usr/bin/)?(sh|bash|dash)\b")
SHELLCHECK_MISSING = "shellcheck is not installed: run scripts/install-test-tools.sh (Debian package shellcheck)"


@pytest.fixture(scope="module")
def shellcheck() -> str:
    return require_tool("shellcheck", SHELLCHECK_MISSING.split(": ", 1)[1])


def repository_scripts() -> list[Path]:
    """Files under scripts/ and engine-bootstrap/ that start with a sh or bash shebang, whatever their name."""
    found = []
    for path in sorted([*(ROOT / "scripts").rglob("*"), *(ROOT / "engine-bootstrap").rglob("*")]):
        if path.is_file():
            with path.open("rb") as f:
                if _SHELL_SHEBANG.match(f.readline()):
                    found.append(path)
    return found


def check(shellcheck: str, paths: list[Path], *options: str) -> None:
    # every severity, down to style; -x follows `source`d files named in directives
    result = subprocess.run([shellcheck, "--norc", "-x", "-f", "gcc", *options, *map(str, paths)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_templates_pass_shellcheck_as_they_are(shellcheck):
    assert len(TEMPLATES) >= 8  # the openshift lifecycle and helper steps, the bare-metal QoS script
    for path in TEMPLATES:
        assert path.read_text().startswith("#!/bin/sh\n"), f"{path}: templates are POSIX sh, run by /bin/sh"
    check(shellcheck, TEMPLATES)


def test_repository_scripts_pass_shellcheck(shellcheck):
    scripts = repository_scripts()
    assert ROOT / "scripts" / "engine-sim.sh" in scripts
    assert ROOT / "engine-bootstrap" / "setup-pulumi.sh" in scripts
    check(shellcheck, scripts)


def test_rendered_scripts_pass_shellcheck(shellcheck, tmp_path):
    sh, bash = [], []
    for name, text in rendered_scripts().items():
        path = tmp_path / name
        path.write_text(text)
        (bash if name.endswith(".bash") else sh).append(path)
    for path in sh:
        assert path.read_text().startswith("#!/bin/sh\n"), path.name
    check(shellcheck, sh)
    check(shellcheck, bash, "--shell=bash")


def test_shellcheck_finds_what_it_should(shellcheck, tmp_path):
    # the check is only worth something if a real finding fails it
    bad = tmp_path / "bad.sh"
    bad.write_text('#!/bin/sh\nrm -rf $1/\n')
    with pytest.raises(AssertionError, match="SC2086"):
        check(shellcheck, [bad])
