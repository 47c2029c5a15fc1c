"""Helpers of the openshift tests (a unique module name: every test area has a conftest)."""

from __future__ import annotations

import shlex

import builders
from required_tools import require_tool

from components.shell_templates import VALUES_BEGIN, VALUES_END

INSTALL_HINT = "run scripts/install-openshift-test-tools.sh"


def sections(shape: str) -> dict:
    """gpu-lab:<section> values of a test stack (tests/builders.py: "lab" or "baremetal"), fresh."""
    return builders.sections(builders.stack(shape))


def tool(name: str) -> str:
    """Path of a tool the tests need (required_tools.require_tool: fails under CI, skips elsewhere)."""
    return require_tool(name, hint=INSTALL_HINT)


def script_values(script: str) -> dict[str, str]:
    """The values a rendered script template was given, unquoted the way sh reads them."""
    block = script.split(VALUES_BEGIN + "\n", 1)[1].split(VALUES_END + "\n", 1)[0]
    return dict(word.split("=", 1) for word in shlex.split(block, comments=True))
