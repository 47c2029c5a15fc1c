"""Fixtures of the openshift tests: the stacks' sections, fresh for each test."""

from __future__ import annotations

import pytest
from openshift_helpers import sections


@pytest.fixture
def lab_sections() -> dict:
    return sections("lab")


@pytest.fixture
def openshift_sections() -> dict:
    return sections("baremetal")
