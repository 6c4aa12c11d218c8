"""pytest configuration of the Python tests: every test gets the TGEMM_* environment back.
Helpers (data, references, tolerances) are in tgemm_test_utils.py."""

from __future__ import annotations

import os

import pytest


def pytest_configure(config):
    # torch.profiler's notice that each profile() block starts empty (which the tests rely on).
    config.addinivalue_line("filterwarnings", "ignore:.*Profiler clears events:UserWarning")


@pytest.fixture(autouse=True)
def _restore_tgemm_env():
    """Tests that change TGEMM_* variables get them back, with the library reloaded."""
    before = {k: v for k, v in os.environ.items() if k.startswith("TGEMM_")}
    yield
    after = {k: v for k, v in os.environ.items() if k.startswith("TGEMM_")}
    if after != before:
        for k in after:
            if k not in before:
                del os.environ[k]
        os.environ.update(before)
        import tgemm

        tgemm.reload_config()

