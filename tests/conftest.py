"""Shared fixtures: one embedded runtime per test session (starting clusters is slow)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def runtime():
    """The embedded default runtime (in-process cluster, CPU workers)."""
    from taskbfs.runtime.cluster import default_runtime

    return default_runtime()
