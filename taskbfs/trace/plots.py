"""Plots of a BFS run's trace (matplotlib, imported only when a plot is drawn).

Returns
    matplotlib Axes: :func:`plot_timeline` (the paper's Fig. 11), :func:`plot_frontier`
    (Fig. 5), :func:`plot_task_times` (Fig. 4); :func:`check_plotting` and
    :func:`check_figure_path` refuse, before any work, a plot that could not be drawn or
    saved.
"""

from __future__ import annotations

from importlib.util import find_spec as _find_spec
from pathlib import Path

import pandas as pd

from taskbfs.errors import InvalidParameterError
from taskbfs.trace.tables import (
    STATE_COLORS,
    MissingDependencyError,
    level_table,
    search_span,
    state_table,
    task_table,
    thread_table,
)

#: Device colours of the plots (CPU blue, GPU green).
DEVICE_COLORS = {"CPU": "#4c72b0", "GPU": "#2ca02c"}


def plot_timeline(result, ax=None, legend: bool = True):
    """The execution timeline: one row per worker thread, coloured by state (paper Fig. 11).

    Parameters
    ----------
    result : BFSResult
    ax : matplotlib Axes, optional
        Where to draw (a new figure if None).
    legend : bool
        Draw the state legend.

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import taskbfs as tb
    >>> from taskbfs.trace import plot_timeline
    >>> r = tb.bfs(tb.Graph.from_edges([0, 1], [1, 2]), 0, tasks=2)
    >>> ax = plot_timeline(r)              # then e.g. ax.figure.savefig("timeline.png")
    >>> ax.get_xlabel()
    'seconds since the search started'
    """
    plt = _pyplot("plot_timeline")
    from matplotlib.patches import Patch

    threads = thread_table(result)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 1.0 + 0.35 * max(len(threads), 1)))
    states = state_table(result)
    for state, group in states.groupby("state"):
        color = _mpl_color(STATE_COLORS[state])
        # busy states get an outline of their own colour, so that a task of a few µs still shows
        outline = {"edgecolor": "none"} if state == "idle" else {"edgecolor": color, "linewidth": 0.5}
        for row, spans in group.groupby("row"):
            ax.broken_barh(list(zip(spans["start"], spans["stop"] - spans["start"], strict=True)),
                           (row - 0.4, 0.8), facecolors=color, **outline)
    ax.set_yticks(threads["row"].tolist(), threads["label"].tolist())
    ax.set_ylim(len(threads) - 0.5, -0.5)
    ax.set_xlim(*search_span(result))
    ax.set_xlabel("seconds since the search started")
    for level in result.levels.itertuples():
        ax.axvline(level.stop, color="0.3", lw=0.4, alpha=0.5)
    ax.set_title(f"BFS from {result.source}: {result.num_tasks} tasks, strategy {result.strategy}, "
                 f"{len(result.levels)} levels")
    if legend:
        handles = [Patch(color=_mpl_color(c), label=s) for s, c in STATE_COLORS.items()]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False,
                  fontsize="small")
    return ax


def plot_frontier(result, ax=None, log: bool = True):
    """Frontier size, newly discovered and visited vertices per level (paper Fig. 5).

    Bottom-up levels are shaded. Returns the matplotlib Axes.

    Examples
    --------
    >>> import taskbfs as tb
    >>> from taskbfs.trace import plot_frontier
    >>> r = tb.bfs(tb.Graph.from_edges([0, 1], [1, 2]), 0, tasks=2)
    >>> ax = plot_frontier(r)
    >>> ax.get_xlabel()
    'BFS level (shaded: bottom-up)'
    """
    plt = _pyplot("plot_frontier")
    levels = level_table(result)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    x = levels["level"].to_numpy()
    width = 0.4
    ax.bar(x - width / 2, levels["frontier_size"], width, label="frontier (vertices at this level)",
           color=_mpl_color(STATE_COLORS["top-down"]), zorder=2)
    ax.bar(x + width / 2, levels["discovered"], width, label="discovered by this level",
           color=DEVICE_COLORS["CPU"], zorder=2)
    ax.plot(x, levels["visited"], "k.-", label="visited so far", zorder=3)
    for level in levels.loc[levels["direction"] == "bottom-up", "level"]:
        ax.axvspan(level - 0.5, level + 0.5, color="0.9", lw=0, zorder=0)
    if log:
        ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xlabel("BFS level (shaded: bottom-up)")
    ax.set_ylabel("vertices")
    ax.set_title(f"Traversal evolution from vertex {result.source}")
    ax.legend(fontsize="small")
    return ax


def plot_task_times(result, ax=None, lam: float | None = None):
    """Task run time against task size, one point per step, coloured by device (paper Fig. 4).

    Parameters
    ----------
    result : BFSResult or pandas.DataFrame
        A result, or a :func:`task_table` (e.g. several runs concatenated).
    lam : float, optional
        Draw the threshold λ as a vertical line.
    """
    plt = _pyplot("plot_task_times")
    tasks = result if isinstance(result, pd.DataFrame) else task_table(result)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for processor, group in tasks.groupby("processor"):
        ax.scatter(group["size"].clip(lower=1), group["duration"].clip(lower=1e-7), s=10, alpha=0.6,
                   label=f"{processor} tasks", color=DEVICE_COLORS.get(processor, "0.5"))
    if lam is not None and lam > 0:
        ax.axvline(lam, color="k", ls="--", lw=1, label=f"λ = {lam:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("task size (frontier vertices)")
    ax.set_ylabel("task run time (s)")
    ax.legend(fontsize="small")
    return ax


def check_figure_path(path, what: str = "the figure") -> Path:
    """``path`` as a Path if matplotlib can save a figure there (a format it writes, an
    existing directory), else a clear error (nothing runs)."""
    check_plotting(what)
    from matplotlib.backend_bases import FigureCanvasBase

    path = Path(path)
    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in formats:
        raise InvalidParameterError(
            f"{what} {str(path)!r}: unknown image suffix {path.suffix or '(none)'!r}; use one "
            f"of {', '.join('.' + f for f in sorted(formats))}")
    if not path.parent.is_dir():
        raise InvalidParameterError(f"{what} {str(path)!r}: no directory {str(path.parent)!r}")
    return path


def check_plotting(what: str = "plotting") -> None:
    """Raise :class:`MissingDependencyError` now if matplotlib is not installed."""
    if _find_spec("matplotlib") is None:
        raise _missing_matplotlib(what)


def _pyplot(what: str):
    """``matplotlib.pyplot``, or :class:`MissingDependencyError` saying ``what`` needs it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise _missing_matplotlib(what) from None
    return plt


def _missing_matplotlib(what: str) -> MissingDependencyError:
    return MissingDependencyError(
        f"{what} needs matplotlib: pip install matplotlib (or \"taskbfs[notebooks]\")")


def _mpl_color(rgb) -> tuple:
    return tuple(c / 255 for c in rgb)
