"""``harness report``: one self-contained HTML file to share a sweep.

It holds the grid's figures (base64 PNG), loss curves a reader can toggle per arm (inline SVG and
a few lines of JavaScript), the best-per-cell and gap tables with their intervals and notes, and
provenance: code commit, versions, the SHA-256 of the rows, the SQL of every table. Every asset is
inline, nothing is fetched: the file opens offline, from a mail attachment or a laptop.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import platform
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from html import escape
from importlib import metadata

import numpy as np
import pandas as pd

from harness.analysis.present.figures.choose import plan_figures
from harness.analysis.present.figures.options import FigureOptions
from harness.analysis.present.figures.render import draw_figures, every_arm, rows_sha256
from harness.analysis.present.report import page, svg
from harness.analysis.present.report.tables import tables
from harness.analysis.questions.query import Query
from harness.analysis.rows.conditions import check_pool
from harness.analysis.rows.load import Selection, select
from harness.analysis.rows.metric_choice import MetricChoice, choose_metric
from harness.analysis.rows.selectors import Selector
from harness.core.errors import UserError
from harness.core.provenance import git_commit


@dataclass(frozen=True, slots=True)
class ReportRequest:
    """What ``harness report`` was asked."""

    query: Query
    """Which rows (grids, results root, predicate, scale) and which metric; its ``pool`` is
    :attr:`options`' (the figures' and the tables')."""
    figures: tuple[str, ...] = ()
    """Figures to draw (empty: those the grid declares, else the defaults)."""
    options: FigureOptions = field(default_factory=FigureOptions)
    """Figure options; ``baseline``/``reference`` also choose the gap table's arms."""


def build_report(req: ReportRequest) -> str:
    """The report's HTML (see the module docstring).

    Raises:
        UserError: as ``harness figures`` and ``harness analyze`` (unknown grid, scale, metric).
    """
    asked = req.query
    sel = select(asked.grid, results=asked.results, scale=asked.scale, where=asked.where)
    runs = sel.frame("runs")
    check_pool(runs, req.options.pool)
    choice = choose_metric(runs, asked.metric, asked.goal, asked.select_by)
    names, _ = plan_figures(sel, asked.grid or [], list(req.figures))
    blocks = list(_figures(sel, names, req, choice))
    q = dataclasses.replace(
        asked, scale=sel.scale, metric=choice.metric, goal=choice.goal, selection=sel
    )
    curve_points = sel.count("curves")
    drawn: dict[str, pd.DataFrame] = {}
    made = tables(q, runs, req.options.baseline, req.options.reference)
    n_status = runs["status"].value_counts().to_dict()
    counts = ", ".join(f"{n} {s}" for s, n in sorted(n_status.items()))
    scale = req.options.scale_name or f"{sel.scale} scale"
    subtitle = (
        f"{len(runs)} runs at {scale} ({counts}); metric {choice.metric} "
        f"({choice.goal}), configurations selected by {choice.select_by}"
        + "".join(f"; {n}" for n in [*choice.notes, *sel.missing().notes()])
    )
    return page.page(
        title=f"harness report: {sel.grid}",
        subtitle=subtitle,
        figures=blocks,
        curves=_curves(sel, curve_points, choice, req, drawn),
        tables=made,
        provenance=_provenance(sel, runs, curve_points, drawn, names, req.options.scale_name),
        sql=[
            ("runs (every table and figure)", sel.sql("runs")),
            ("curves", sel.sql("curves")),
            *((f"{t.key} table", f"-- {t.command}\n{sel.sql('runs')}") for t in made),
        ],
    )


def _figures(
    sel: Selection, names: Sequence[str], req: ReportRequest, choice: MetricChoice
) -> Iterator[page.FigureBlock]:
    import matplotlib.pyplot as plt

    for d in draw_figures(sel, names, choice, req.options):
        if d.figure is None:
            yield page.FigureBlock(d.spec.name, d.spec.description, None, (d.skipped,))
            continue
        buf = io.BytesIO()
        d.figure.savefig(buf, format="png", dpi=150)
        plt.close(d.figure)
        yield page.FigureBlock(d.spec.name, d.spec.description, buf.getvalue(), d.notes)


#: A chart draws at most this many runs thin: beyond it, every k-th run of the cell by run_id
#: (a few hundred polylines already hide one another; 100,000 made a report of gigabytes).
MAX_THIN = 200


def _thin(cell: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The runs of ``cell`` drawn thin (at most :data:`MAX_THIN`), and a note when not all."""
    if len(cell) <= MAX_THIN:
        return cell, ""
    step = -(-len(cell) // MAX_THIN)
    shown = cell.sort_values("run_id", kind="stable").iloc[::step]
    return shown, f"thin: {len(shown)} of the cell's {len(cell)} runs (one in {step}, by run_id)"


def _curves(
    sel: Selection,
    curve_points: int,
    choice: MetricChoice,
    req: ReportRequest,
    drawn: dict[str, pd.DataFrame],
) -> str:
    """Checkboxes (one per arm) and one chart per condition: every run thin (at most
    :data:`MAX_THIN`), each arm's tuned configuration (mean over seeds) thick, validation
    losses as dots. Only the curve points of the runs drawn are read (into ``drawn``)."""
    from harness.analysis.present.figures.common import (
        FigureSkipped,
        arm_styles,
        panel_title,
        panels,
        restrict,
        tuned_points,
    )
    from harness.analysis.rows.arm_labels import panel_keys
    from harness.analysis.rows.preparation import prepare
    from harness.analysis.stats import METHOD

    if not curve_points:
        return "<p>No loss curves.</p>"
    every = every_arm(sel)
    styles = arm_styles(every)
    done = every[every["status"].notna()]
    rows = prepare(done, choice.metric, choice.goal, choice.select_by, choice.select_goal).rows
    if rows.empty:
        return "<p>No completed or diverged runs.</p>"
    arms = sorted(styles)
    index = {a: k for k, a in enumerate(arms)}
    pool = req.options.pool
    keys = panel_keys(rows, pool)
    try:
        points = tuned_points(rows, [*keys, METHOD], choice.goal, choice.select_goal, pool)
        cells = panels(points.table, keys)
    except (FigureSkipped, UserError) as e:  # shown, not raised: the rest of the report stands
        return f"<p>No loss curves: {e}</p>"
    boxes = "".join(
        f'<label><input type="checkbox" checked data-arm="{index[a]}"><span class="swatch" '
        f'style="background:{styles[a].color}"></span>{escape(a)}</label>'
        for a in arms
        if a in set(rows[METHOD])
    )
    charts = []
    chosen = []
    for key, _ in cells:
        thin, note = _thin(restrict(rows, key)[["run_id", METHOD]])
        chosen.append((key, restrict(points.seeds, key)[["run_id", METHOD]], thin, note))
    ids = {r for _, best, thin, _ in chosen for r in (*best["run_id"], *thin["run_id"])}
    curves = drawn["curves"] = sel.curves_of(ids)
    for n, (key, best, cell, note) in enumerate(chosen):
        lines = []
        for _, part in curves.merge(cell, on="run_id").groupby("run_id", sort=True):
            arm = str(part[METHOD].iloc[0])
            xs, ys = part["tokens"].to_numpy(float), part["train_loss"].to_numpy(float)
            lines.append(svg.Line(index[arm], xs, ys, styles[arm].color, thin=True))
        for key_of_arm, part in curves.merge(best, on="run_id").groupby(METHOD, sort=True):
            arm = str(key_of_arm)
            mean = part.groupby("tokens")["train_loss"].mean()
            val = part.dropna(subset=["val_loss"]).groupby("tokens")["val_loss"].mean()
            color = styles[str(arm)].color
            lines.append(
                svg.Line(index[str(arm)], mean.index.to_numpy(float), mean.to_numpy(float), color)
            )
            if len(val):
                lines.append(
                    svg.Line(
                        index[str(arm)],
                        val.index.to_numpy(float),
                        val.to_numpy(float),
                        color,
                        dots=True,
                    )
                )
        title = panel_title(key) or "all runs"
        charts.append(f"<p>{escape(note)}</p>" * bool(note))
        charts.append(svg.chart(lines, title, _ylim(lines), len(arms), f"c{n}"))
    legend = (
        "<p>Thin: every run of the cell (spikes included); thick: each arm's tuned "
        "configuration, mean over seeds; dots: validation loss. Untick an arm to hide "
        "it.</p>"
    )
    return legend + f'<div class="toggles">{boxes}</div>' + "".join(charts)


def _ylim(lines: Sequence[svg.Line]) -> tuple[float, float]:
    """From the lowest loss to the highest start of a run (spikes above run off the top)."""
    ys = np.concatenate([ln.ys for ln in lines]) if lines else np.array([0.0, 1.0])
    ys = ys[np.isfinite(ys)]
    if ys.size == 0:
        return 0.0, 1.0
    starts = [ln.ys[np.isfinite(ln.ys)][0] for ln in lines if np.isfinite(ln.ys).any()]
    lo, hi = float(ys.min()), float(np.median(starts)) * 1.05
    for ln in lines:  # a tuned configuration is always seen whole
        ok = ln.ys[np.isfinite(ln.ys)]
        if not ln.thin and ok.size:
            hi = max(hi, float(ok.max()))
    return (lo - 0.03 * (hi - lo), hi) if hi > lo else (lo - 1.0, lo + 1.0)


def _provenance(
    sel: Selection,
    runs: pd.DataFrame,
    curve_points: int,
    drawn: dict[str, pd.DataFrame],
    figures: Sequence[str],
    scale_name: str | None = None,
) -> list[tuple[str, str]]:
    def version(pkg: str) -> str:
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return "-"

    commits = sorted({str(c) for c in runs.get("git_commit", pd.Series()).dropna()})
    return [
        ("grids", ", ".join(sel.grids)),
        ("results", str(sel.root)),
        ("scale", scale_name or sel.scale),
        ("where", sel.where or "(every run)"),
        ("rows", f"{len(runs)} runs, {curve_points} curve points"),
        ("rows SHA-256", rows_sha256({"runs": runs, **drawn})),
        ("report code commit", git_commit() or "-"),
        ("commits of the runs", ", ".join(commits) or "-"),
        ("created", dt.datetime.now(dt.UTC).isoformat(timespec="seconds")),
        ("python", platform.python_version()),
        *((pkg, version(pkg)) for pkg in ("harness", "duckdb", "pandas", "numpy", "matplotlib")),
        ("figures", ", ".join(figures) or "-"),
    ]


__all__ = ["ReportRequest", "Selector", "build_report"]
