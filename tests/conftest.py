"""Shared fixtures. Browser tests drive Debian's Chromium through Playwright (never a downloaded browser)."""

from __future__ import annotations

import os
import shutil

if os.environ.get("PYTEST_XDIST_WORKER"):
    # one thread each for torch's and the BLAS libraries' pools in an xdist worker (CI: two workers on two cores):
    # their pools' threads spin on a core another worker needs (set before either is loaded: read at load time)
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import pytest
from hypothesis import settings

from grpo_lab.testing.chromium import CHROMIUM, launch

# property tests call scipy (quad, betabinom); wall-clock deadlines only measure how loaded the machine is
settings.register_profile("grpo-lab", deadline=None, max_examples=100, derandomize=True)
settings.load_profile("grpo-lab")



#: measurements of the drift a test process keeps (the product keeps grpo_lab.sims.doctor.drift.MEASURED): the same
#: shipped runs are diagnosed by many test files on a worker, and a measurement is a function of its inputs' content
#: (kept by their digest); a test that needs one measured afresh calls drift.forget_measured()
MEASURED_IN_TESTS = 16


@pytest.fixture(scope="session", autouse=True)
def _measurements_kept():
    from grpo_lab.sims.doctor import drift

    drift.MEASURED = MEASURED_IN_TESTS


#: the test files that take longest (CPU seconds measured one file a process, and CI's slowest tests), longest first.
#: Under xdist each worker collects them first (pytest_collection_modifyitems) and CI schedules the files in that
#: order (--no-loadscope-reorder; by default xdist gives the files with most tests first, which left these, few tests
#: each, to the end: a worker still in one of them while the other had nothing left). A stale list only costs time
LONGEST_FIRST = ("test_doctor_when_only.py", "test_fleet_doctor.py", "test_trl_stall_forecast.py",
                 "test_watch_emit.py", "test_drift_prompts.py", "test_watch.py", "test_upload_stress.py",
                 "test_fleet_browser.py", "test_packaging.py", "test_drift_mixed_only.py",
                 "test_doctor_forecast_bands.py", "test_paper_cuts.py")


def pytest_collection_modifyitems(config, items):
    if not hasattr(config, "workerinput"):  # an xdist worker only: a run in one process keeps the files' order
        return
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest in collection order


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the session. Missing Chromium is an error, not a skip: CI installs it."""
    from playwright.sync_api import sync_playwright

    if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium not found at {CHROMIUM}; install it with `apt-get install -y chromium`")
    with sync_playwright() as pw:
        b = launch(pw)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh page in its own context; console errors are collected on ``page.console_errors``."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.console_errors = []
    pg.on("console", lambda msg: pg.console_errors.append(msg.text) if msg.type == "error" else None)
    pg.on("pageerror", lambda exc: pg.console_errors.append(str(exc)))
    yield pg
    context.close()


@pytest.fixture(scope="session")
def lab_url():
    """One lab server (``panel serve lab/app.py``, as :func:`grpo_lab.testing.lab_server.serve` starts it) shared by
    every browser test of the plain lab, started once for the whole run: each visit is a session of its own, so the
    tests do not see each other. A test module that needs a server of its own (other flags, its own quotas: the
    upload and fairness tests) defines its own ``lab_url``, which takes precedence in that module."""
    from grpo_lab.testing.lab_server import serve

    with serve() as url:
        yield url
