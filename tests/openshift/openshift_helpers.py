"""Helpers of the openshift tests (a unique module name: every test area has a conftest)."""

from __future__ import annotations

import copy
import shlex
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from components.shell_templates import VALUES_BEGIN, VALUES_END  # noqa: E402
from tools.mockrun import stack_config  # noqa: E402

INSTALL_HINT = "run scripts/install-openshift-test-tools.sh"


def sections(stack: str) -> dict:
    """gpu-lab:<section> values of Pulumi.<stack>.yaml, deep-copied so tests may edit them."""
    config = copy.deepcopy(stack_config(stack))
    return {k.split(":", 1)[1]: v for k, v in config.items() if k.startswith("gpu-lab:")}


def tool(name: str) -> str:
    """Path of a tool the tests need; a missing tool fails the test (a skip would hide it)."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if not found:
        pytest.fail(f"{name} is not installed; {INSTALL_HINT}")
    return found


def script_values(script: str) -> dict[str, str]:
    """The values a rendered script template was given, unquoted the way sh reads them."""
    block = script.split(VALUES_BEGIN + "\n", 1)[1].split(VALUES_END + "\n", 1)[0]
    return dict(word.split("=", 1) for word in shlex.split(block, comments=True))
