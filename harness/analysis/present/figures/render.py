"""Drawing a grid's figures to PNG and PDF, each with a sidecar JSON saying how it was made.

The sidecar holds the figure's SQL, the number of rows each statement selects, the SHA-256 of
the rows it drew (so a changed result is visible; a figure that draws some runs reads only
their curve points), the code commit, the harness version and the time. Files are written
through a temporary name and renamed, so a reader never sees half a figure.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.present.figures import FIGURES, FigureSpec
from harness.analysis.present.figures.options import FigureOptions
from harness.analysis.rows.direction import DEFAULT_METRIC, default_select
from harness.analysis.rows.load import Selection
from harness.analysis.rows.metric_choice import MetricChoice
from harness.analysis.rows.preparation import prepare
from harness.core import paths
from harness.core.errors import UserError
from harness.core.files import atomic_write, atomic_write_text
from harness.core.provenance import git_commit
from harness.metrics.catalogue import Goal


@dataclass(frozen=True, slots=True)
class Rendered:
    """One figure's outcome."""

    name: str
    """Figure name."""
    files: tuple[Path, ...]
    """PNG, PDF and sidecar JSON written (empty when skipped)."""
    skipped: str = ""
    """Why the figure was not drawn (empty when drawn)."""


@dataclass(frozen=True, slots=True)
class Drawn:
    """One figure drawn in memory (or why not)."""

    spec: FigureSpec
    """The kind of figure."""
    figure: Any | None
    """The matplotlib figure (None when skipped); the caller closes it."""
    skipped: str = ""
    """Why the figure was not drawn."""
    notes: tuple[str, ...] = ()
    """Diverged and dropped runs, arms not shown."""
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    """The rows it drew, by named statement."""
    styles: dict[str, dict[str, str]] = field(default_factory=dict)
    """Arm -> color, marker, line style of the arms drawn."""
    stem: str = ""
    """File name without extension."""
    select_by: str = ""
    """The metric that picked each point's configuration."""


PNG_DPI = 150
"""Resolution of a figure's PNG (dots per inch; a paper-width figure is then about 1,000 pixels
wide, sharp on a screen). The PDF beside it is vector (the dpi only rasterises images in it):
print and papers take the PDF. (Saving was 63% of ``figures``' CPU with the PNG at 200 dpi.)"""


def draw_figures(
    sel: Selection,
    names: Sequence[str],
    choice: MetricChoice,
    options: FigureOptions | None = None,
) -> Iterator[Drawn]:
    """Draw ``names`` from the selection in memory, one at a time.

    Each point is the configuration with the best mean ``choice.select_by`` over seeds, drawn by
    ``choice.metric`` (:func:`~harness.analysis.rows.metric_choice.choose_metric`). A
    figure the data cannot make (e.g. no SGD baseline for ``gap_closure``) is skipped with a reason;
    the others are still drawn. Every figure draws each arm in the same color and marker,
    assigned over every arm of the selection's rows and planned runs (:func:`every_arm`).

    Raises:
        UserError: an unknown figure name, or no run has ``choice.select_by``.
    """
    from harness.analysis.present.figures.style import apply

    specs = [FIGURES[n] for n in names]  # an unknown name lists the known ones
    apply()
    every = every_arm(sel)
    opts = options or FigureOptions()
    for spec in specs:
        yield _draw(sel, spec, choice, every, opts)


def render_figures(
    sel: Selection,
    names: Sequence[str],
    choice: MetricChoice,
    options: FigureOptions | None = None,
) -> list[Rendered]:
    """Draw ``names`` (:func:`draw_figures`) into ``<root>/<grid>/figures/``: PNG, PDF and a
    sidecar JSON each."""
    out_dir = paths.figures_dir(sel.root, sel.grid)
    drawn = draw_figures(sel, names, choice, options)
    return [_write(sel, d, choice, out_dir) for d in drawn]


def every_arm(sel: Selection) -> pd.DataFrame:
    """Every run of the selection, any status, with its ``method`` (arm); without ``--where``
    also the planned runs that have no row yet (``status`` NaN), so that an arm not run yet is
    named and every figure of a grid gets the same colors."""
    from harness.analysis.rows.arm_labels import add_methods

    runs = sel.frame("runs")
    if sel.where is None:
        planned = sel.frame("manifest")
        planned = planned[~planned["run_id"].isin(set(runs["run_id"]))]
        if len(planned):
            runs = pd.concat([runs, planned.assign(status=None)], ignore_index=True)
    return add_methods(runs)


def _draw(
    sel: Selection,
    spec: FigureSpec,
    choice: MetricChoice,
    every: pd.DataFrame,
    options: FigureOptions,
) -> Drawn:
    from harness.analysis.present.figures.common import (
        FigureData,
        FigureSkipped,
        arm_styles,
        missing_arms,
    )

    metric, goal, select_by = choice.metric, choice.goal, choice.select_by
    stem = spec.name + (f"-{metric}" if metric != DEFAULT_METRIC else "")
    stem += f"-by-{select_by}" if select_by != default_select(metric) else ""
    stem += "-local" if sel.scale == "local" else ""
    frames = {q: sel.frame(q) for q in spec.queries if q not in spec.by_run}
    done = every[every["status"].notna()]
    prep = prepare(done, metric, goal, select_by, choice.select_goal)
    if prep.rows.empty:
        return Drawn(
            spec,
            None,
            f"no completed or diverged runs with {metric}",
            stem=stem,
            select_by=select_by,
        )
    missing = missing_arms(every, prep.rows)
    by_run = "curves" in spec.by_run

    def curves_of(run_ids: Collection[str]) -> pd.DataFrame:
        frames["curves"] = sel.curves_of(run_ids)  # the rows drawn, for the sidecar's hash
        return frames["curves"]

    data = FigureData(
        rows=prep.rows,
        metric=metric,
        goal=goal,
        frames=frames,
        select_goal=prep.select_goal,
        styles=arm_styles(every),
        missing=tuple(missing),
        options=options,
        curves_of=curves_of if by_run else None,
        curve_points=sel.count("curves") if by_run else None,
    )
    try:
        fig = spec.drawer()(data)
    except (FigureSkipped, UserError) as e:
        return Drawn(spec, None, str(e), stem=stem, select_by=select_by)
    styles = {arm: data.style(arm).line() for arm in sorted(set(prep.rows["method"]))}
    timed = [f"target: {options.target.describe()}"] if options.target is not None else []
    notes = (*prep.notes(), *missing, *timed)
    return Drawn(spec, fig, "", notes, frames, styles, stem, select_by)


def _write(sel: Selection, d: Drawn, choice: MetricChoice, out_dir: Path) -> Rendered:
    import matplotlib.pyplot as plt

    fig = d.figure
    if fig is None:
        return Rendered(d.spec.name, (), skipped=d.skipped)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for ext in ("png", "pdf"):
        path = out_dir / f"{d.stem}.{ext}"
        atomic_write(path, lambda fh, ext=ext: fig.savefig(fh, format=ext, dpi=PNG_DPI))  # type: ignore[misc]  # ext bound per loop step
        files.append(path)
    plt.close(fig)
    side = sidecar(sel, d.spec, choice.metric, choice.goal, d.frames, d.notes, files)
    side["styles"] = d.styles
    side["select_by"] = d.select_by
    files.append(out_dir / f"{d.stem}.json")
    atomic_write_text(files[-1], json.dumps(side, indent=1))
    return Rendered(d.spec.name, tuple(files))


def rows_sha256(frames: dict[str, pd.DataFrame]) -> str:
    """SHA-256 of the rows drawn: of each named frame, in name order, its name, its columns and
    a 64-bit hash of each row (pandas' ``hash_pandas_object``), so that a changed value changes
    it. (Each frame as CSV took a minute of CPU for the curves of 10,000 runs.)"""
    h = hashlib.sha256()
    for name in sorted(frames):
        frame = frames[name]
        h.update(name.encode() + b"\n" + ",".join(map(str, frame.columns)).encode() + b"\n")
        try:
            h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
        except TypeError:  # a column of unhashable values (lists): as text
            h.update(frame.to_csv(index=False).encode())
    return h.hexdigest()


def sidecar(
    sel: Selection,
    spec: FigureSpec,
    metric: str,
    goal: Goal,
    frames: dict[str, pd.DataFrame],
    notes: Sequence[str],
    files: Sequence[Path],
) -> dict[str, object]:
    """The provenance record written next to a figure."""
    return {
        "figure": spec.name,
        "description": spec.description,
        "grid": sel.grid,
        "grids": list(sel.grids),
        "scale": sel.scale,
        "metric": metric,
        "goal": goal,
        "where": sel.where,
        "sql": {q: sel.sql(q) for q in spec.queries},
        "rows": {q: sel.count(q) for q in spec.queries},
        "rows_sha256": rows_sha256(frames),
        "notes": list(notes),
        "code_commit": git_commit(),
        "harness_version": _version(),
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "files": [p.name for p in files],
    }


def _version() -> str | None:
    try:
        return metadata.version("harness")
    except metadata.PackageNotFoundError:
        return None
