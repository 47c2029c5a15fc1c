import plan_fixtures
import pytest


@pytest.fixture
def lab() -> dict:
    """A fresh compliant stack: the program's plan of the test lab (tests/plan_fixtures.py); tests mutate it."""
    return plan_fixtures.lab()
