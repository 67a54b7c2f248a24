"""Progress of a graph build: :class:`BuildProgress`, the steps done out of those known.

What it returns
---------------
A counter a builder moves on as its steps finish (threads and Dask callbacks included),
shown as a tqdm bar (``tqdm.auto``: a widget in a Jupyter notebook, a line on stderr
elsewhere) or handed to the caller's function.

``progress`` argument of the builders
-------------------------------------
``None`` (the default)
    A bar when someone may be watching (stderr is a terminal, or the code runs in a
    Jupyter kernel), shown only once the build has run the setting
    ``_PROGRESS_DELAY`` seconds: a quick build prints nothing.
``True`` / ``False``
    A bar (after the same delay) / none.
a callable
    Called as ``progress(done, total)`` after each step (``total`` may grow as the build
    learns its work, e.g. its passes).
"""

from __future__ import annotations

import sys
import threading

from taskbfs.errors import InvalidParameterError

#: Seconds a build runs before its progress bar shows (a quick one shows none).
_PROGRESS_DELAY = 2.0

__all__ = ["BuildProgress", "check_progress"]


def check_progress(progress):
    """``progress`` if it is None, a bool or a callable, else InvalidParameterError."""
    if progress is None or isinstance(progress, bool) or callable(progress):
        return progress
    raise InvalidParameterError(
        f"progress must be None, True, False or a function progress(done, total), "
        f"got {progress!r}")


def _watched() -> bool:
    """Whether a person may be watching: stderr is a terminal, or a Jupyter kernel runs."""
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):  # a closed or odd stream
        pass
    shell = sys.modules.get("IPython")
    ipython = getattr(shell, "get_ipython", lambda: None)() if shell else None
    return type(ipython).__name__ == "ZMQInteractiveShell"


class BuildProgress:
    """Steps of one build: :meth:`update` as they finish, :meth:`grow` as more become
    known, :meth:`close` at the end (or use it as a context manager).

    Parameters
    ----------
    progress : None, bool or callable
        See the module's docstring.
    what : str
        The bar's label, e.g. ``"building kronecker(22) on 3 workers"``.
    total : int
        Steps known at the start.
    """

    def __init__(self, progress, what: str, total: int = 0):
        progress = check_progress(progress)
        self.done, self.total = 0, int(total)
        self._lock = threading.Lock()
        self._call = progress if callable(progress) and not isinstance(progress, bool) else None
        self._bar = None
        self._finished = False
        if self._call is None and (progress is True or (progress is None and _watched())):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # tqdm.auto's "use ipywidgets" advice
                from tqdm.auto import tqdm
            self._bar = tqdm(total=self.total, desc=what, unit=" step", leave=False,
                             file=sys.stderr, delay=_PROGRESS_DELAY)

    def grow(self, steps: int) -> None:
        """``steps`` more steps to do."""
        with self._lock:
            self.total += int(steps)
            if self._bar is not None:
                self._bar.total = self.total
                self._bar.refresh()
            done, total = self.done, self.total
        if self._call is not None:
            self._call(done, total)

    def update(self, steps: int = 1, *_) -> None:
        """``steps`` steps done (extra arguments, such as the future of a Dask
        callback, are ignored)."""
        with self._lock:
            if self._finished:  # a Dask callback late after the build returned
                return
            self.done += int(steps)
            if self._bar is not None:
                self._bar.update(int(steps))
            done, total = self.done, self.total
        if self._call is not None:
            self._call(done, total)

    def watch(self, futures) -> None:
        """One step done as each of the Dask ``futures`` finishes (its steps counted
        in the total here)."""
        futures = list(futures)
        self.grow(len(futures))
        for future in futures:
            future.add_done_callback(self.one)

    def one(self, *_) -> None:
        """One step done (a Dask future's callback)."""
        self.update(1)

    def finish(self) -> None:
        """Every step done (the build has its result; Dask callbacks of its futures
        may still be on their way, and are ignored from now on)."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
            if self._bar is not None:
                self._bar.update(self.total - self.done)
            self.done = self.total
            done, total = self.done, self.total
        if self._call is not None:
            self._call(done, total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> BuildProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
