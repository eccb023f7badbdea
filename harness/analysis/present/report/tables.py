"""The report's tables: each cell's best configuration, and the gap closure when the grid has a
baseline and a reference; each with its notes and the SQL its rows come from."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from harness.analysis.questions import best, gap, query
from harness.analysis.rows.arm_labels import panel_keys
from harness.analysis.rows.axes import varying
from harness.analysis.rows.conditions import METHOD_EXTRAS
from harness.analysis.rows.selectors import Selector, parse_selector
from harness.core.errors import UserError


@dataclass(frozen=True, slots=True)
class Table:
    """One table of the report."""

    key: str
    """Short name (HTML id)."""
    title: str
    """Heading."""
    command: str
    """The ``harness analyze`` command that prints the same table."""
    table: pd.DataFrame | None
    """The rows (None: the table could not be made; ``notes`` say why)."""
    notes: list[str] = field(default_factory=list)
    """Diverged and failed runs, edges, what was tuned, or why there is no table."""


def arm_columns(rows: pd.DataFrame) -> list[str]:
    """Columns naming an arm: ``label`` when every run has one, else ``optimizer`` and the
    variant columns that vary."""
    if "label" in rows.columns and rows["label"].notna().all() and len(rows):
        return ["label"]
    return ["optimizer", *varying(rows, [c for c in METHOD_EXTRAS if c in rows.columns])]


def _selector(
    rows: pd.DataFrame, given: Selector | None, choices: tuple[str, ...], flag: str
) -> Selector | None:
    if given is not None:
        return given
    present = set(rows["optimizer"].astype(str))
    for opt in choices:
        if opt in present:
            return parse_selector(f"optimizer={opt}", flag)
    return None


def tables(
    q: query.Query,
    rows: pd.DataFrame,
    baseline: Selector | None = None,
    reference: Selector | None = None,
) -> list[Table]:
    """The best-per-cell table and the gap table of ``q`` (``rows``: its run rows, to choose
    the cells and the arms)."""
    done = rows[rows["status"].isin(["completed", "diverged"])]
    conditions = panel_keys(done, q.pool) if len(done) else []
    by = [*arm_columns(done), *conditions]
    grids = q.grid if isinstance(q.grid, str) else " ".join(q.grid or [])
    pooled = f" --pool {','.join(q.pool)}" if q.pool else ""
    out = [_best(q, by, grids + pooled)]
    base = _selector(done, baseline, ("sgd",), "--baseline")
    ref = _selector(done, reference, ("adamw", "adam"), "--reference")
    cmd = f"harness analyze gap {grids}" + (f" --by {','.join(conditions)}" if conditions else "")
    cmd += pooled
    if base is None or ref is None:
        why = "no gap table: it needs a baseline (SGD) and a reference (AdamW or Adam) arm; "
        why += "name them with --baseline K=V --reference K=V"
        out.append(Table("gap", "Gap closure", cmd, None, [why]))
        return out
    cmd += f" --baseline {base.text} --reference {ref.text}"
    try:
        ans = gap.answer(q, baseline=base, reference=ref, by=conditions)
        out.append(
            Table(
                "gap",
                f"Gap closure: {base.label} 0 %, {ref.label} 100 %",
                cmd,
                ans.table,
                ans.notes,
            )
        )
    except UserError as e:
        out.append(Table("gap", "Gap closure", cmd, None, [f"no gap table: {e}"]))
    return out


def _best(q: query.Query, by: list[str], grids: str) -> Table:
    cmd = f"harness analyze best {grids} --by {','.join(by)}"
    try:
        ans = best.answer(q, by=by)
    except UserError as e:
        return Table("best", "Best configuration per cell", cmd, None, [f"no table: {e}"])
    return Table("best", "Best configuration per cell", cmd, ans.table, ans.notes)
