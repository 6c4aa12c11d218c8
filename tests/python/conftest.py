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


class _ReloadedEnv:
    """monkeypatch's setenv and delenv, each followed by tgemm.reload_config(): the library reads
    its TGEMM_* variables at import and on reload_config() only."""

    def __init__(self, monkeypatch):
        self._monkeypatch = monkeypatch

    def setenv(self, name, value):
        import tgemm

        self._monkeypatch.setenv(name, value)
        tgemm.reload_config()

    def delenv(self, name):
        import tgemm

        self._monkeypatch.delenv(name, raising=False)
        tgemm.reload_config()


@pytest.fixture
def tgemm_env(monkeypatch):
    """Sets and unsets TGEMM_* variables for one test with the library reloaded after each change,
    and again once monkeypatch has put them back (which _restore_tgemm_env, torn down after
    monkeypatch has restored the variables, cannot see)."""
    yield _ReloadedEnv(monkeypatch)
    monkeypatch.undo()
    import tgemm

    tgemm.reload_config()
