"""The live taskbfs page of the Dask dashboard: ``/taskbfs`` (and its data, ``/taskbfs/data.json``).

Returns
    :func:`install` ``(runtime)``: the BFS calls it when a search gets its runtime (the
    runtime itself installs no page; it only offers the hook,
    :meth:`~taskbfs.runtime.Runtime.add_listener`). It serves the page on the runtime's
    scheduler — the embedded one or one started separately with ``dask scheduler``
    (taskbfs must be installed there) — once per scheduler. The page then
    refreshes while searches run and shows, for the latest search: the current level and
    direction, the work (frontier vertices, or unvisited vertices on bottom-up levels) of
    each task of that level coloured by the device the plugin chose, against the threshold
    λ; the tasks per device per level; the frontier per level; vertices and edges visited
    and TEPS so far; a timeline of its tasks like the paper's Fig. 11 (one row per worker
    thread, a bar per task from start to stop, dispatched or included, coloured by the
    device that ran it), made of the execution records ``r.trace`` is made of; a table of
    the earlier searches. While a search runs, its timeline grows: the page (or a reader
    of ``data.json``) pulls the records its tasks have left on the workers since the last
    pull, every ``LIVE_PULL_S``, and shows the latest ``LIVE_MAX_ROWS``
    (:meth:`~taskbfs.live_runs.LiveRuns.follow`). Once it has finished: every level (a table too), and the
    timeline of all its tasks, which the client keeps with every level's summary and
    sends when the page asks (:func:`~taskbfs.finished_runs.keep_finished`). A selector shows any remembered search instead of the
    latest. ``/individual-taskbfs`` is the same plots without the dashboard's frame,
    listed in the dashboard's ``individual-plots.json`` so that JupyterLab's
    dask-labextension offers it as a panel.

The searches it shows are the board's (:class:`taskbfs.live_runs.LiveRuns`, one per
scheduler): how it is fed and what it counts is said there.
"""

from __future__ import annotations

import json
import logging
import weakref

from taskbfs.live_runs import LiveRuns

logger = logging.getLogger(__name__)


#: Path of the page (under the dashboard's prefix) and of its data.
PAGE = "/taskbfs"
DATA = "/taskbfs/data.json"
#: The plots alone, for dask-labextension (listed by the dashboard's individual-plots.json).
INDIVIDUAL_PAGE = "/individual-taskbfs"
#: Refresh period of the page (ms).
REFRESH_MS = 250
#: The page's listener on the placement plugin.
LISTENER = "taskbfs-dashboard"
DEVICE_COLORS = {"CPU": "#4c72b0", "GPU": "#2ca02c"}

_boards: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()




# ----------------------------------------------------------------------------- installation
def install(runtime):
    """Serve the live page on ``runtime``'s scheduler, fed by its placement decisions.

    Idempotent: once per runtime it costs one scheduler call, later calls nothing; the
    page and its board are made once per scheduler. A scheduler without Bokeh, or
    without a dashboard, gets the JSON data route only, or just the board; a failure is
    logged on the scheduler and never raised (the page must not stop a search).

    Parameters
    ----------
    runtime : taskbfs.runtime.Runtime

    Returns
    -------
    The runtime, for chaining (``rt = install(rt)``).
    """
    from taskbfs import config

    try:  # within runtime.connect-timeout: a stopped scheduler must not hold a search
        runtime.add_listener(LISTENER, board_on, config.get("runtime.connect-timeout"))
    except Exception:  # e.g. a scheduler that cannot import taskbfs.dashboard
        logger.warning("taskbfs: the /taskbfs dashboard page could not be added", exc_info=True)
    return runtime


def board_on(scheduler) -> LiveRuns:
    """The :class:`LiveRuns` of ``scheduler``, made and its page served the first time.

    Runs on the scheduler (:meth:`~taskbfs.runtime.Runtime.add_listener` sends it there).
    Without an HTTP server only the board is kept; without Bokeh (or with the dashboard
    off) only the JSON data route is served.
    """
    board = _boards.get(scheduler)
    if board is not None:
        return board
    board = _boards[scheduler] = LiveRuns()
    http = getattr(scheduler, "http_application", None)
    if http is None:
        return board
    prefix = _dashboard_prefix(http)
    from tornado.web import RequestHandler

    class DataHandler(RequestHandler):
        def get(self):
            self.set_header("Content-Type", "application/json")
            self.set_header("Cache-Control", "no-store")
            program = self.get_argument("program", None)
            board.follow(scheduler, program)
            self.write(json.dumps(board.snapshot(program)))

    http.add_handlers(r".*", [(prefix + DATA.replace(".", r"\."), DataHandler)])
    if prefix is not None and _has_bokeh_dashboard(http):
        _add_bokeh_page(scheduler, http, prefix)
    return board


def _dashboard_prefix(http) -> str:
    """The dashboard's URL prefix ("" or "/something"), read from its Bokeh app."""
    for app in getattr(http, "applications", ()):
        prefix = getattr(app, "prefix", None)
        if isinstance(prefix, str):
            return prefix.rstrip("/")
    return ""


def _has_bokeh_dashboard(http) -> bool:
    return any(type(app).__name__.endswith("BokehTornado") for app in getattr(http, "applications", ()))


def _add_bokeh_page(scheduler, http, prefix: str) -> None:
    from distributed.dashboard.core import BokehApplication
    from tornado.ioloop import IOLoop

    variables = {}
    try:
        from distributed.dashboard.scheduler import template_variables

        variables = template_variables(scheduler)
        if PAGE.strip("/") not in variables["pages"]:
            variables["pages"].append(PAGE.strip("/"))  # a link in the dashboard's top bar
    except Exception:  # the navigation bar is a nicety
        logger.debug("taskbfs: dashboard navigation not extended", exc_info=True)
    app = BokehApplication({PAGE: taskbfs_doc, INDIVIDUAL_PAGE: individual_taskbfs_doc}, scheduler,
                           prefix=prefix, template_variables=variables)
    http.add_application(app)
    app.initialize(IOLoop.current())
    app.start()
    _list_individual_page(http, app)


def _list_individual_page(http, app) -> None:
    """Name :data:`INDIVIDUAL_PAGE` among the paths of the dashboard's own Bokeh application,
    which is where its ``individual-plots.json`` (read by dask-labextension) looks for
    ``individual-*`` pages. Our application serves the page; the entry only lists it."""
    ours = app.applications[INDIVIDUAL_PAGE]
    for other in http.applications:
        if other is not app and type(other).__name__.endswith("BokehTornado"):
            other.applications.setdefault(INDIVIDUAL_PAGE, ours)
            return


# ----------------------------------------------------------------------------- the page
def taskbfs_doc(scheduler, extra, doc) -> None:
    """Build the Bokeh document of ``/taskbfs`` (called by Bokeh for every browser session)."""
    board = _boards.get(scheduler) or LiveRuns()
    page = _Page(board, scheduler)
    doc.title = "taskbfs: live BFS"
    doc.add_root(page.root)
    doc.add_periodic_callback(page.update, REFRESH_MS)
    page.update()
    try:
        from distributed.dashboard.components.scheduler import BOKEH_THEME, env

        doc.template = env.get_template("simple.html")
        doc.template_variables.update(extra)
        doc.theme = BOKEH_THEME
    except Exception:  # plain page without distributed's frame
        logger.debug("taskbfs: dashboard template unavailable", exc_info=True)


def individual_taskbfs_doc(scheduler, extra, doc) -> None:
    """Build the Bokeh document of ``/individual-taskbfs``: the page's plots without the
    dashboard's frame (a dask-labextension panel)."""
    page = _Page(_boards.get(scheduler) or LiveRuns(), scheduler)
    doc.title = "taskbfs"
    page.root.sizing_mode = "stretch_both"
    doc.add_root(page.root)
    doc.add_periodic_callback(page.update, REFRESH_MS)
    page.update()


#: Columns of the table of searches: (field of a history row, title).
HISTORY_COLUMNS = (("program", "search"), ("state", "state"), ("vertices", "vertices"),
                   ("levels", "levels"), ("visited", "visited"), ("edges", "edges"),
                   ("elapsed", "seconds"), ("mteps", "MTEPS"))


class _Page:
    """The Bokeh models of the page and their refresh."""

    def __init__(self, board: LiveRuns, scheduler=None):
        from bokeh.layouts import column, row
        from bokeh.models import (
            BasicTicker,
            ColumnDataSource,
            DataRange1d,
            DataTable,
            Div,
            HoverTool,
            NumberFormatter,
            Select,
            TableColumn,
        )
        from bokeh.plotting import figure

        self.board = board
        self.scheduler = scheduler  # where the running search's records are pulled from
        self.seen = None
        self.chosen: str | None = None  # the search the selector names; None: the latest
        self.select = Select(title="Search", value=LATEST, options=[(LATEST, "the latest")],
                             name="taskbfs-select", width=420)
        self.select.on_change("value", self._choose)
        self.header = Div(text=_header({"state": "idle"}), name="taskbfs-header",
                          sizing_mode="stretch_width")
        self.tasks = ColumnDataSource({"task": [], "size": [], "device": [], "color": []}, name="taskbfs-tasks")
        self.lam = ColumnDataSource({"x": [], "y": []}, name="taskbfs-lambda")
        self.levels = ColumnDataSource({"level": [], "direction": [], "frontier": [], "cpu": [], "gpu": []},
                                       name="taskbfs-levels")
        common = {"height": 320, "sizing_mode": "stretch_width", "tools": "pan,wheel_zoom,box_zoom,reset,save"}

        work = figure(title="Work per task against λ (dashed)",
                      y_axis_type="log", y_range=DataRange1d(start=0.5), name="taskbfs-work", **common)
        work.vbar(x="task", top="size", bottom=0.5, width=0.8, color="color", legend_field="device",
                  source=self.tasks)
        work.line(x="x", y="y", source=self.lam, color="#d62728", line_dash="dashed", line_width=2)
        work.xaxis.axis_label = "task"
        work.yaxis.axis_label = "size placed by (vertices; unvisited, bottom-up)"
        work.add_tools(HoverTool(tooltips=[("task", "@task"), ("size", "@size"), ("device", "@device")]))
        work.legend.location = "top_left"
        work.legend.background_fill_alpha = 0.6

        devices = figure(title="Tasks per device per level", name="taskbfs-devices", **common)
        devices.vbar_stack(["cpu", "gpu"], x="level", width=0.8, source=self.levels,
                           fill_color=[DEVICE_COLORS["CPU"], DEVICE_COLORS["GPU"]], line_color=None,
                           legend_label=["CPU", "GPU"])
        devices.xaxis.axis_label = "level"
        devices.yaxis.axis_label = "tasks"
        devices.legend.location = "top_left"

        frontier = figure(title="Frontier per level", y_axis_type="log", y_range=DataRange1d(start=0.5),
                          name="taskbfs-frontier", **common)
        frontier.vbar(x="level", top="frontier", bottom=0.5, width=0.8, source=self.levels, color="#ffcc00")
        frontier.xaxis.axis_label = "level"
        frontier.yaxis.axis_label = "vertices"
        frontier.add_tools(HoverTool(tooltips=[("level", "@level"), ("direction", "@direction"),
                                               ("frontier", "@frontier"), ("CPU tasks", "@cpu"),
                                               ("GPU tasks", "@gpu")]))
        for fig in (work, devices, frontier):  # task ids and levels are integers
            fig.xaxis.ticker = BasicTicker(min_interval=1)
        self.work = work
        self.timeline = ColumnDataSource({field: [] for field in TIMELINE_FIELDS}, name="taskbfs-timeline")
        self.timeline_plot = _timeline_figure(self.timeline)
        self.level_rows = ColumnDataSource({field: [] for field, _ in LEVEL_COLUMNS}, name="taskbfs-level-rows")
        level_table = DataTable(source=self.level_rows, name="taskbfs-level-table", height=220,
                                sizing_mode="stretch_width", index_position=None,
                                columns=[TableColumn(field=f, title=t) for f, t in LEVEL_COLUMNS])
        self.history = ColumnDataSource({field: [] for field, _ in HISTORY_COLUMNS},
                                        name="taskbfs-history")
        formats = {"elapsed": "0.000", "mteps": "0,0.0", "visited": "0,0", "edges": "0,0",
                   "vertices": "0,0"}
        columns = [TableColumn(field=field, title=title, **(
                       {"formatter": NumberFormatter(format=formats[field])} if field in formats else {}))
                   for field, title in HISTORY_COLUMNS]
        table = DataTable(source=self.history, columns=columns, name="taskbfs-history-table",
                          height=220, sizing_mode="stretch_width", index_position=None)
        self.root = column(self.select, self.header, row(work, devices, sizing_mode="stretch_width"),
                           frontier, self.timeline_plot, Div(text="<h3>Levels</h3>"), level_table,
                           Div(text="<h3>Searches (newest first)</h3>"), table,
                           sizing_mode="stretch_width", name="taskbfs-root")

    def _choose(self, attr, old, new) -> None:
        self.chosen = None if new == LATEST else new
        self.update()

    def update(self) -> None:
        if self.chosen is not None and self.board.latest(self.chosen) is None:
            self.chosen = None  # dropped from the board: back to the latest
        self.board.follow(self.scheduler, self.chosen)
        snap = self.board.snapshot(self.chosen)
        run = self.board.latest(self.chosen)
        stamp = (snap["program"], run.version if run else None, snap["state"])
        self.header.text = _header(snap)  # elapsed time moves on while running
        history = {field: [row[field] for row in snap["history"]] for field, _ in HISTORY_COLUMNS}
        if history != dict(self.history.data):
            self.history.data = history
        options = [(LATEST, "the latest")] + [(row["program"], f"{row['program']} ({row['state']})")
                                              for row in snap["history"]]
        if options != [tuple(o) for o in self.select.options]:
            self.select.options = options
        if self.select.value != (self.chosen or LATEST):
            self.select.value = self.chosen or LATEST
        if stamp == self.seen:
            return
        self.seen = stamp
        self._show_timeline(snap["timeline"])
        self.level_rows.data = {field: snap["levels"][field] for field, _ in LEVEL_COLUMNS}
        tasks = snap["tasks"]
        self.tasks.data = {"task": tasks["task"], "size": tasks["size"], "device": tasks["device"],
                           "color": [DEVICE_COLORS.get(d, "#999999") for d in tasks["device"]]}
        which = "current level" if snap["state"] == "running" else "largest level"
        self.work.title.text = (f"Work per task at the {which} ({tasks['level']}) against λ (dashed)"
                                if tasks["level"] is not None else "Work per task against λ (dashed)")
        lam = snap["lam"]
        if lam and tasks["task"]:
            self.lam.data = {"x": [min(tasks["task"]) - 0.5, max(tasks["task"]) + 0.5], "y": [lam, lam]}
        else:
            self.lam.data = {"x": [], "y": []}
        self.levels.data = snap["levels"]


    def _show_timeline(self, timeline: dict) -> None:
        full = [not c for c in timeline["container"]]
        self.timeline.data = {
            **{field: timeline[field] for field in TIMELINE_FIELDS if field in timeline},
            "top": [r + (0.4 if f else 0.48) for r, f in zip(timeline["row"], full, strict=True)],
            "bottom": [r - (0.4 if f else 0.48) for r, f in zip(timeline["row"], full, strict=True)],
            "color": [DEVICE_COLORS.get(d, "#999999") for d in timeline["device"]],
            "alpha": [1.0 if f else 0.25 for f in full],
            "duration": [b - a for a, b in zip(timeline["start"], timeline["stop"], strict=True)],
        }
        plot = self.timeline_plot
        plot.yaxis.ticker = list(range(len(timeline["rows"])))
        plot.yaxis.major_label_overrides = {i: label for i, label in enumerate(timeline["rows"])}
        plot.height = max(160, 60 + 26 * len(timeline["rows"]))
        if timeline.get("live"):
            plot.title.text = (f"The latest {len(timeline['start']):,} of the {timeline['total']:,} "
                               "tasks finished so far, one row per worker thread (the paper's "
                               "Fig. 11): the search is running")
        elif timeline["rows"]:
            plot.title.text = ("Tasks over time, one row per worker thread (the paper's Fig. 11); "
                               "faint: a task that ran others included in it")
        else:
            plot.title.text = "Tasks over time: drawn as the search's tasks finish"


#: The page's choice of "the latest search".
LATEST = "latest"
#: Columns of the timeline's data source (besides the drawn geometry).
TIMELINE_FIELDS = ("row", "start", "stop", "device", "name", "level", "task", "included", "top",
                   "bottom", "color", "alpha", "duration")
#: Columns of the table of levels: (field of the snapshot's levels, title).
LEVEL_COLUMNS = (("level", "level"), ("direction", "direction"), ("frontier", "frontier"),
                 ("cpu", "CPU tasks"), ("gpu", "GPU tasks"))


def _timeline_figure(source):
    """The timeline plot: a bar per task, from its start to its stop, on its thread's row,
    coloured by device."""
    from bokeh.models import HoverTool
    from bokeh.plotting import figure

    plot = figure(title="Tasks over time", height=160, sizing_mode="stretch_width",
                  tools="xpan,xwheel_zoom,box_zoom,reset,save", name="taskbfs-timeline-plot")
    plot.quad(left="start", right="stop", bottom="bottom", top="top", source=source,
              fill_color="color", fill_alpha="alpha", line_color=None, legend_field="device")
    plot.xaxis.axis_label = "seconds since the search's first task started"
    plot.yaxis.ticker = []
    plot.ygrid.grid_line_color = None
    plot.legend.location = "top_right"
    plot.add_tools(HoverTool(tooltips=[("task", "@name"), ("level", "@level"), ("task id", "@task"),
                                       ("device", "@device"), ("seconds", "@duration{0.000000}"),
                                       ("included", "@included")]))
    return plot


def _header(snap: dict) -> str:
    if snap.get("program") is None:
        return ("<h2>taskbfs</h2><p>No search yet: run <code>taskbfs.search(..., runtime=...)</code> "
                "on this cluster and this page follows it.</p>")
    lam = "–" if snap["lam"] is None else f"{snap['lam']:g}"
    teps = snap["teps"]
    if snap["state"] == "running":
        where = f"<b>level {snap['level']}</b> ({snap['direction'] or 'barrier only'})"
    else:
        where = f"<b>{len(snap['levels']['level'])} levels</b>"
    return (
        f"<h2>taskbfs: search {snap['program']} — {snap['state']}</h2>"
        f"<p>{where} · policy {snap['policy'] or '–'}, "
        f"λ = {lam} · {len(snap['tasks']['task'])} tasks at level {snap['tasks']['level']} · "
        f"visited {snap['visited']:,} of {snap['vertices'] or 0:,} vertices, {snap['edges']:,} edges · "
        f"{snap['elapsed']:.3f} s · <b>{teps / 1e6:,.2f} MTEPS{' so far' if snap['state'] == 'running' else ''}"
        f"</b> · {snap['placed']:,} tasks placed</p>"
    )


__all__ = ["DATA", "INDIVIDUAL_PAGE", "LISTENER", "PAGE", "board_on", "individual_taskbfs_doc",
           "install", "taskbfs_doc"]
