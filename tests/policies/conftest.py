import sys
from pathlib import Path

import pytest

# the helpers module sits next to this file; make it importable under any pytest import mode
sys.path.insert(0, str(Path(__file__).resolve().parent))

from policy_helpers import build  # noqa: E402


@pytest.fixture
def lab() -> dict:
    """A fresh compliant lab stack (tests mutate it)."""
    return build.lab()
