"""The test-tool installers and the CI rule for skips: clear messages, never exit 127."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from required_tools import require_tool

REPO = Path(__file__).resolve().parents[2]


def bare_path(tmp_path: Path) -> str:
    """A PATH with only what the scripts need to start: no apt-get, no test tools."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "id"):
        (bin_dir / tool).symlink_to(require_tool(tool))
    return str(bin_dir)


# Packages whose tools live in /usr/bin (the scripts also look in /usr/sbin, whatever PATH says).
@pytest.mark.parametrize("script, packages", [
    ("install-test-tools.sh", ["shellcheck", "bind9-dnsutils", "openssh-client"]),
    ("install-switch-test-tools.sh", ["openssh-client"]),
])
def test_without_apt_get_the_installer_names_the_packages_and_exits_2(tmp_path, script, packages):
    proc = subprocess.run(["bash", str(REPO / "scripts" / script)], cwd=REPO, capture_output=True, text=True,
                          timeout=60, env={"PATH": bare_path(tmp_path), "HOME": str(tmp_path)})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no apt-get" in proc.stderr and "install them with its package manager" in proc.stderr
    for package in packages:
        assert package in proc.stderr, (package, proc.stderr)


def test_installers_check_tools_not_dpkg():
    for script in ("install-test-tools.sh", "install-switch-test-tools.sh", "install-openshift-test-tools.sh"):
        text = (REPO / "scripts" / script).read_text()
        assert "dpkg" not in text and "command -v" in text, script
        assert "root" in text, script  # says when root or sudo is needed


def test_shellcheck_is_among_the_installed_tools():
    assert "[shellcheck]=shellcheck" in (REPO / "scripts" / "install-test-tools.sh").read_text()


def test_under_ci_a_skip_is_a_failure(tmp_path):
    test = tmp_path / "test_skips.py"
    test.write_text("import pytest\n\ndef test_needs_a_tool():\n    pytest.skip('needs frobnicate')\n")
    shutil.copy(REPO / "tests" / "conftest.py", tmp_path / "conftest.py")
    args = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(test)]
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    local = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert local.returncode == 0 and "SKIPPED" in local.stdout and "needs frobnicate" in local.stdout, local.stdout
    ci = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120, env={**env, "CI": "true"})
    assert ci.returncode == 1 and "may not be skipped here" in ci.stdout and "needs frobnicate" in ci.stdout, ci.stdout
