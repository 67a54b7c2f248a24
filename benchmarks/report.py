"""Regenerate ``benchmarks/RESULTS.md`` (and its plots) from ``benchmarks/results/*.csv``.

Returns
    Writes the page: one section per question, in the order of :data:`QUESTIONS`; in it,
    for each machine and command, the rows of the latest run (older runs stay in the CSV
    and in git, not on the page), headed by the machine, the date, the command, the commit
    and where the figures come from (``source``: ``run`` for a measurement made by the
    script, ``transcribed ...`` for figures copied from the page this one replaced).
    Where matplotlib is installed, PNG plots of the scaling (``compare``) and granularity
    curves beside the page in ``results/``. The page stays under :data:`MAX_LINES` lines:
    a question with many runs shows its latest ones, saying how many it left out.

    python benchmarks/report.py [--results DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
MAX_LINES = 400
MAX_ROWS = 24  # rows of one run's table on the page
META = ["question", "run", "date", "cpu", "cores", "gpu", "commit", "command", "source"]

#: question -> (script, the question it answers)
QUESTIONS = {
    "compare": ("compare.py", "How fast is taskbfs against its peers, at each scale and strategy?"),
    "granularity": ("granularity.py", "How many tasks T: what does cutting the graph finer cost?"),
    "lam": ("lam.py", "Which λ should the hybrid strategy use?"),
    "deep_graphs": ("deep_graphs.py", "How long does a search take on a deep graph?"),
    "workers": ("workers.py", "What do several worker processes or GPUs give?"),
    "build": ("build.py", "How long does it take to make or read a graph, and in how much memory?"),
    "dispatch": ("dispatch.py", "What does a dispatched task cost?"),
    "soak": ("soak.py", "Does anything grow or slow down over many searches?"),
    "first_search": ("first_search.py", "How long is the first search against the steady ones?"),
    "timeline": ("timeline.py", "Where does one search's time go, level by level?"),
}


def load(results: Path) -> dict[str, pd.DataFrame]:
    """Every CSV of ``results`` that has the harness's columns, by question."""
    frames: dict[str, list] = {}
    for path in sorted(results.glob("*.csv")):
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        if not set(META) <= set(df.columns):
            continue  # not a question's CSV
        for q, part in df.groupby("question"):
            frames.setdefault(q, []).append(part)
    return {q: pd.concat(parts, ignore_index=True).fillna("") for q, parts in frames.items()}


def machine(row) -> str:
    gpu = f", {row['gpu']}" if row["gpu"] else ""
    return f"{row['cpu']} ({row['cores']} cores{gpu})"


def current(df: pd.DataFrame) -> list[pd.DataFrame]:
    """The latest run's rows for each (machine, command), newest first."""
    df = df.assign(_machine=df.apply(machine, axis=1))
    runs = []
    for _, group in df.groupby(["_machine", "command"], sort=False):
        latest = group["run"].max()
        runs.append(group[group["run"] == latest].drop(columns="_machine"))
    return sorted(runs, key=lambda r: r["run"].iloc[0], reverse=True)


def _number(value: str) -> str:
    try:
        x = float(value)
    except ValueError:
        return value
    if x != x:
        return ""
    if abs(x) < 100 and x != int(x):
        return f"{x:.3g}"
    x = round(x)
    return f"{x:,}" if abs(x) >= 10_000 else str(x)


def table(rows: pd.DataFrame) -> list[str]:
    cols = [c for c in rows.columns if c not in META and (rows[c] != "").any()]
    shown = rows.head(MAX_ROWS)
    lines = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for _, r in shown.iterrows():
        lines.append("| " + " | ".join(_number(r[c]) for c in cols) + " |")
    if len(rows) > len(shown):
        lines.append(f"\n({len(rows) - len(shown)} more rows in the CSV)")
    return lines


def plot_compare(df: pd.DataFrame, out: Path) -> bool:
    rows = df[(df.get("status", "") == "ok") & (df["mteps"] != "")]
    if rows.empty:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for run in current(rows):
        m = machine(run.iloc[0])
        label_of = run["impl"] + run["strategy"].map(lambda s: f" {s}" if s else "")
        for name, part in run.assign(label=label_of).groupby("label"):
            part = part.assign(scale=part["scale"].astype(int)).sort_values("scale")
            ax.plot(part["scale"], part["mteps"].astype(float), "o-", label=f"{name} · {m}")
    ax.set_yscale("log")
    ax.set_xlabel("Kronecker scale")
    ax.set_ylabel("MTEPS (harmonic mean, wall)")
    ax.set_title("taskbfs and its peers")
    ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


def plot_granularity(df: pd.DataFrame, out: Path) -> bool:
    if df.empty:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for run in current(df):
        m = machine(run.iloc[0])
        for (strategy, scale, dispatch), part in run.groupby(["strategy", "scale", "dispatch"]):
            part = part.assign(tasks=part["tasks"].astype(int)).sort_values("tasks")
            ax.plot(part["tasks"], part["vs_one_task"].astype(float), "o-",
                    label=f"{strategy} {dispatch}, scale {scale} · {m}")
    ax.set_xscale("log", base=2)
    ax.axhline(1.0, color="0.6", lw=0.8)
    ax.set_xlabel("tasks T")
    ax.set_ylabel("TEPS / TEPS at T = 1")
    ax.set_title("Task granularity")
    ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


def page(frames: dict[str, pd.DataFrame], plots_dir: Path | None) -> list[str]:
    """The page, at most :data:`MAX_LINES` lines: while longer, the question with the most
    runs shows one run fewer (its oldest), so that every question keeps its latest."""
    shown = {q: len(current(df)) for q, df in frames.items() if df is not None and not df.empty}
    while True:
        lines = _page(frames, plots_dir, shown)
        if len(lines) <= MAX_LINES or max(shown.values(), default=1) <= 1:
            return lines[:MAX_LINES]
        most = max(shown, key=shown.get)
        shown[most] -= 1


def _page(frames: dict[str, pd.DataFrame], plots_dir: Path | None, shown: dict) -> list[str]:
    lines = ["# Benchmark results", "",
             "Generated by `python benchmarks/report.py` from `benchmarks/results/*.csv`; do not "
             "edit by hand. Each table is the latest run of one command on one machine; older "
             "runs are in the CSVs and in git. `source` says whether the script measured the "
             "figures (`run`) or they were copied from the page this one replaced "
             "(`transcribed ...`: their command names a script of that time, in git history). "
             "How to run each question: `benchmarks/README.md`.", ""]
    plotters = {"compare": plot_compare, "granularity": plot_granularity}
    for q, (script, title) in QUESTIONS.items():
        lines += [f"## {title}", "", f"`benchmarks/{script}`", ""]
        df = frames.get(q)
        if df is None or df.empty:
            lines += ["No results yet.", ""]
            continue
        if plots_dir is not None and q in plotters:
            png = plots_dir / f"{q}.png"
            try:
                if plotters[q](df, png):
                    lines += [f"![{q}](results/{png.name})", ""]
            except ImportError:
                pass  # matplotlib not installed: tables only
        runs = current(df)
        for run in runs[:shown[q]]:
            r = run.iloc[0]
            lines += [f"**{machine(r)}**, {r['date']}, commit `{r['commit']}`, source: {r['source']}  ",
                      f"`{r['command']}`", ""]
            lines += table(run) + [""]
        if len(runs) > shown[q]:
            lines += [f"({len(runs) - shown[q]} older runs in `results/{q}.csv`)", ""]
    return lines


def main(argv=None) -> Path:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default=str(HERE / "results"), help="the CSVs' folder")
    p.add_argument("--out", default=str(HERE / "RESULTS.md"), help="the page to write")
    p.add_argument("--no-plots", action="store_true")
    args = p.parse_args(argv)
    results = Path(args.results)
    lines = page(load(results), None if args.no_plots else results)
    out = Path(args.out)
    out.write_text("\n".join(lines).rstrip() + "\n")
    print(f"{out}: {len(lines)} lines")
    return out


if __name__ == "__main__":
    main()
