"""Shared fixtures: the tests' own lab stack (tests/builders.py), lab-vcsim for the tests of
components/vsphere and of the dynamic providers (tests/lab_vcsim.py), and the CI rule for skips.

pytest.ini puts the repository, policies/ and tests/ on the import path: helpers that the tests of
more than one area use live in tests/ and are imported by bare name (docs/tests.md).
"""

import os

import pytest


@pytest.fixture
def lab_config() -> dict:
    """A fresh, mutable copy of the test lab's `config:` mapping (builders.lab_stack)."""
    import builders  # here, not at the top: tests/tools/test_setup_scripts.py runs this file alone

    return builders.lab_stack()


@pytest.fixture
def lab_sections(lab_config) -> dict:
    import builders

    return builders.sections(lab_config)


@pytest.fixture(scope="session")
def vcsim(tmp_path_factory: pytest.TempPathFactory):
    """lab-vcsim on a loopback port with the test admin, for the whole session (tests/lab_vcsim.py)."""
    from lab_vcsim import running_lab_vcsim

    with running_lab_vcsim(tmp_path_factory, "vcsim") as sim:
        yield sim


@pytest.fixture(scope="session")
def si(vcsim):
    """A session of our own, to read vSphere state independently of the code under test."""
    from components.dynamic import hostops

    with hostops.session(vcsim.server, vcsim.user, vcsim.password, port=vcsim.port, insecure=True) as service:
        yield service


@pytest.fixture()
def conn_props(vcsim) -> dict:
    """The connection its explicit provider holds (tests/lab_vcsim.py, `provider_config`)."""
    return vcsim.connection()


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
