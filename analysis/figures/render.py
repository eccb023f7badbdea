"""Drawing a grid's figures to PNG and PDF, each with a sidecar JSON saying how it was made.

The sidecar holds the figure's SQL, the number and SHA-256 of the rows it drew (so a changed
result is visible), the code commit, the harness version and the time. Files are written
through a temporary name and renamed, so a reader never sees half a figure.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pandas as pd

from analysis.figures import FIGURES, FigureSpec
from analysis.load import Selection
from analysis.metrics import DEFAULT_METRIC
from analysis.values import prepare
from harness import paths
from harness.errors import UserError


@dataclass(frozen=True, slots=True)
class Rendered:
    """One figure's outcome."""

    name: str
    """Figure name."""
    files: tuple[Path, ...]
    """PNG, PDF and sidecar JSON written (empty when skipped)."""
    skipped: str = ""
    """Why the figure was not drawn (empty when drawn)."""


def render_figures(sel: Selection, names: Sequence[str], metric: str, goal: str) -> list[Rendered]:
    """Draw ``names`` from the selection into ``<root>/<grid>/figures/``.

    A figure the data cannot make (e.g. no SGD baseline for ``gap_closure``) is skipped with a
    reason; the others are still drawn.

    Raises:
        UserError: an unknown figure name.
    """
    from analysis.figures.style import apply

    for n in names:
        if n not in FIGURES:
            from harness.errors import unknown_choice

            raise unknown_choice("figure", n, FIGURES)
    apply()
    out_dir = paths.figures_dir(sel.root, sel.grid)
    return [_one(sel, FIGURES[n], metric, goal, out_dir) for n in names]


def _one(sel: Selection, spec: FigureSpec, metric: str, goal: str, out_dir: Path) -> Rendered:
    import matplotlib.pyplot as plt

    from analysis.figures.common import FigureData, FigureSkipped, add_methods

    frames = {q: sel.frame(q) for q in spec.queries}
    prep = prepare(frames["runs"], metric, goal)
    if prep.rows.empty:
        return Rendered(spec.name, (), skipped=f"no completed or diverged runs with {metric}")
    data = FigureData(rows=add_methods(prep.rows), metric=metric, goal=goal, frames=frames)
    try:
        fig = spec.drawer()(data)
    except (FigureSkipped, UserError) as e:
        return Rendered(spec.name, (), skipped=str(e))
    stem = spec.name + (f"-{metric}" if metric != DEFAULT_METRIC else "")
    stem += "-local" if sel.scale == "local" else ""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for ext in ("png", "pdf"):
        files.append(_atomic(out_dir / f"{stem}.{ext}", lambda p: fig.savefig(p, dpi=200)))
    plt.close(fig)
    side = sidecar(sel, spec, metric, goal, frames, prep.notes(), files)
    text = json.dumps(side, indent=1)
    files.append(_atomic(out_dir / f"{stem}.json", lambda p: p.write_text(text)))
    return Rendered(spec.name, tuple(files))


def _atomic(path: Path, write) -> Path:
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def rows_sha256(frames: dict[str, pd.DataFrame]) -> str:
    """SHA-256 of the rows drawn: each named frame as CSV, in name order."""
    h = hashlib.sha256()
    for name in sorted(frames):
        h.update(name.encode() + b"\n")
        h.update(frames[name].to_csv(index=False).encode())
    return h.hexdigest()


def sidecar(
    sel: Selection,
    spec: FigureSpec,
    metric: str,
    goal: str,
    frames: dict[str, pd.DataFrame],
    notes: Sequence[str],
    files: Sequence[Path],
) -> dict[str, object]:
    """The provenance record written next to a figure."""
    return {
        "figure": spec.name,
        "description": spec.description,
        "grid": sel.grid,
        "scale": sel.scale,
        "metric": metric,
        "goal": goal,
        "where": sel.where,
        "sql": {q: sel.sql(q) for q in spec.queries},
        "rows": {q: len(f) for q, f in frames.items()},
        "rows_sha256": rows_sha256(frames),
        "notes": list(notes),
        "code_commit": code_commit(),
        "harness_version": _version(),
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "files": [p.name for p in files],
    }


def code_commit() -> str | None:
    """The git commit of the code drawing the figure (``+dirty`` with local changes); None
    outside a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "-uno"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "") if head else None


def _version() -> str | None:
    try:
        return metadata.version("harness")
    except metadata.PackageNotFoundError:
        return None
