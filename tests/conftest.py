"""Shared fixtures: one embedded runtime per test session (starting clusters is slow)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def runtime():
    """The embedded default runtime (in-process cluster, CPU workers)."""
    from taskbfs.runtime.cluster import default_runtime

    return default_runtime()


@pytest.fixture
def setting():
    """``setting(name, value)`` sets ``taskbfs.<name>`` in ``dask.config`` for this test
    (taken back after it)."""
    import dask

    applied = []

    def set_value(name: str, value) -> None:
        applied.append(dask.config.set({f"taskbfs.{name}": value}))

    yield set_value
    for change in reversed(applied):
        change.__exit__(None, None, None)
