"""Fixtures of the add-on tests: one mock run per platform, shared by the test modules."""

import pytest

from addons_harness import ALL_JOBS, full_addons, run_addons
from tools.mockrun import Run


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
    """The whole program on Pulumi.lab.yaml (every component, the lab's add-ons block)."""
    from tools.mockrun import run_stack

    return run_stack("lab")
