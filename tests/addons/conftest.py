"""Fixtures of the add-on tests: one mock run per platform, shared by the test modules."""

import builders
import pytest
from addons_harness import ALL_JOBS, full_addons, run_addons

from tools.mockrun import Run, run_program


@pytest.fixture(scope="session")
def full_run() -> Run:
    return run_addons(full_addons())


@pytest.fixture(scope="session")
def openshift_run() -> Run:
    return run_addons(full_addons(), openshift=True)


@pytest.fixture(scope="session")
def baremetal_run() -> Run:
    addons = full_addons(
        gpuOperator={"enabled": True, "gpudirectRdma": True},
        jobs={**ALL_JOBS, "nodes": ["gpu01", "gpu02"], "gpusPerWorker": 8},
    )
    return run_addons(addons, vsphere=False)


@pytest.fixture(scope="session")
def stack_run() -> Run:
    """The whole program on the test lab (tests/builders.py: every component, its add-ons block)."""
    return run_program(builders.lab_stack())
