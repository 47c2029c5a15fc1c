"""Shared fixtures: the repository on sys.path and the stacks' raw configuration."""

import copy
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.mockrun import stack_config  # noqa: E402


def sections_of(config: dict) -> dict:
    """gpu-lab:<section> keys of a stack config, as load_lab takes them."""
    return {k.split(":", 1)[1]: v for k, v in config.items() if k.startswith("gpu-lab:")}


@pytest.fixture
def lab_config() -> dict:
    """A fresh, mutable copy of Pulumi.lab.yaml's config block."""
    return copy.deepcopy(stack_config("lab"))


@pytest.fixture
def lab_sections(lab_config) -> dict:
    return sections_of(lab_config)


IN_CI = os.environ.get("CI") == "true"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true nothing may skip: a missing tool, engine or data set fails with the skip's reason.

    Locally a skip stays a skip, and `-rs` (pytest.ini) prints why. The one exception is a test
    marked `built_by_hand`: it needs what no script may install (provider plugins built from
    their source on the developer's machine), so CI, too, skips it with the reason.
    """
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped and not hasattr(report, "wasxfail") and not item.get_closest_marker("built_by_hand"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"CI=true: this test may not be skipped here ({reason})"
