"""Shared fixtures: the repository on sys.path and the stacks' raw configuration."""

import copy
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
