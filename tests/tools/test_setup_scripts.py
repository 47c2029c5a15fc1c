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


# ---------------------------------------------------------------- setup-pulumi: PLUGINS=required

SETUP_PULUMI = Path(__file__).resolve().parents[2] / "engine-bootstrap" / "setup-pulumi.sh"


def _cache_with(tmp_path: Path, plugins: list[str]) -> Path:
    """A PULUMI_CACHE_DIR whose `pulumi plugin ls` lists `plugins` (name version) and nothing runs for real."""
    from importlib.metadata import version

    cache = tmp_path / "cache"
    (cache / "bin").mkdir(parents=True)
    rows = "\n".join(f"{name}  resource  {version(f'pulumi-{name}')}  1 MB  n/a  n/a" for name in plugins)
    (cache / "bin" / "pulumi").write_text(
        "#!/bin/sh\ncase \"$1 $2\" in\n  'plugin ls') printf 'NAME  KIND  VERSION  SIZE  INSTALLED  LAST USED\\n"
        f"{rows}\\n' ;;\n  version) echo v3.259.0 ;;\nesac\n")
    (cache / "bin" / "pulumi-language-python").write_text("#!/bin/sh\n")
    for f in (cache / "bin").iterdir():
        f.chmod(0o755)
    return cache


def _check(cache: Path, plugins: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PLUGINS"}
    env.update(PULUMI_CACHE_DIR=str(cache), **({"PLUGINS": plugins} if plugins is not None else {}))
    return subprocess.run(["bash", str(SETUP_PULUMI), "--check"], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)


def test_setup_pulumi_says_which_plugins_are_missing_and_fails_when_they_are_required(tmp_path):
    cache = _cache_with(tmp_path, ["command"])
    assert _check(cache, None).returncode == 0  # CI's run: the plugins are reported, not required
    required = _check(cache, "required")
    assert required.returncode == 3, required.stderr
    assert "not installed: vsphere" in required.stderr and "kubernetes" in required.stderr
    assert "command" not in required.stderr.split("not installed:")[1].splitlines()[0]
    assert "pulumi plugin install resource <name> <version> --file" in required.stderr


def test_setup_pulumi_passes_with_every_plugin_installed(tmp_path):
    done = _check(_cache_with(tmp_path, ["command", "vsphere", "kubernetes"]), "required")
    assert done.returncode == 0, done.stderr
    assert "every provider plugin is installed" in done.stderr


def test_setup_pulumi_refuses_an_unknown_plugins_value(tmp_path):
    done = _check(_cache_with(tmp_path, []), "yes")
    assert done.returncode == 2 and "PLUGINS=yes" in done.stderr and "required" in done.stderr
