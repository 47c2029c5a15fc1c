"""One rule for what a test needs from the machine: a tool on PATH, a data directory.

Under CI (env CI=true) a missing tool or data set fails the test with the reason; elsewhere the
test skips with the same reason (`-rs` in pytest.ini prints it). tests/conftest.py also turns any
other skip into a failure under CI, except tests marked `built_by_hand`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI") == "true"
# sshd, dnsmasq and friends live in sbin, which an ordinary user's PATH may lack
SBIN = "/usr/local/sbin:/usr/sbin:/sbin"


def missing(reason: str) -> None:
    """Stop the test: a failure under CI, a skip with the reason elsewhere."""
    if IN_CI:
        pytest.fail(f"CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


def find_tool(name: str) -> str | None:
    """Path of `name` on PATH or in sbin; None when absent (for tests that only note its absence)."""
    return shutil.which(name) or shutil.which(name, path=SBIN)


def require_tool(name: str, hint: str = "") -> str:
    """Path of a tool the test needs; missing: fail under CI, skip elsewhere, saying so and how to get it."""
    found = find_tool(name)
    if not found:
        missing(f"{name} is not installed" + (f"; {hint}" if hint else ""))
    return found


def require_path(path: Path, what: str, hint: str = "") -> Path:
    """A file or directory the test needs (upstream data, a built artefact); same rule as require_tool."""
    if not Path(path).exists():
        missing(f"{what} not found at {path}" + (f"; {hint}" if hint else ""))
    return Path(path)


def require_chart_render() -> Path:
    """build/bin/chart-render, Helm's renderer (chartrender/; `make chartrender`, which `make test` runs through
    scripts/install-test-tools.sh): tools/mirror_list.py and the tests that render the pinned charts need it."""
    from tools.mirror_list import CHART_RENDER
    return require_path(CHART_RENDER, "chart-render (Helm's renderer)", "run make chartrender")
