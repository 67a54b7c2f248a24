"""Settings of taskbfs, read through ``dask.config`` under the key ``taskbfs``.

The documented defaults are in ``taskbfs/taskbfs.yaml`` beside this module. Set a value as
any Dask setting: ``dask.config.set({"taskbfs.lambda": 5000})``, the environment variable
``DASK_TASKBFS__LAMBDA=5000``, or a YAML file in Dask's configuration folders. A Runtime
sends the caller's ``taskbfs`` settings to its workers when a search starts
(``Runtime.share_settings``), so they also reach the worker processes of a remote cluster.
"""

from __future__ import annotations

import copy
import pathlib
from typing import Any

import dask.config
import yaml

_DEFAULTS_FILE = pathlib.Path(__file__).with_name("taskbfs.yaml")


def _load_defaults() -> None:
    with open(_DEFAULTS_FILE) as f:
        defaults = yaml.safe_load(f)
    # Values already set (environment variables, config files, dask.config.set) win.
    dask.config.update_defaults(defaults)


_load_defaults()


def get(name: str) -> Any:
    """The current value of the setting ``taskbfs.<name>``.

    Parameters
    ----------
    name : str
        Dotted name below ``taskbfs``, e.g. ``"lambda"`` or ``"search.retries-on-worker-loss"``
        (``-`` and ``_`` are interchangeable, as everywhere in ``dask.config``).
    """
    return dask.config.get(f"taskbfs.{name}")


def snapshot() -> dict:
    """A copy of every ``taskbfs`` setting as it stands now (what a Runtime sends its workers)."""
    return copy.deepcopy(dask.config.get("taskbfs"))
