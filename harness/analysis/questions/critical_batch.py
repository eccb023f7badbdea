"""``harness analyze critical-batch``: steps to a target loss at each batch size, and the
critical batch size (the statistics: :mod:`harness.analysis.stats.critical_batch` and
:mod:`harness.analysis.stats.batch_fit`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import Query, load, tuned
from harness.analysis.rows.load import select
from harness.analysis.stats import (
    CONFIDENCE,
    METHODS,
    OVERHEAD,
    curves_by_run,
    default_target,
    reading,
    steps_table,
)
from harness.analysis.stats.critical_batch import LOSS
from harness.core.errors import UserError


def answer(
    q: Query,
    *,
    by: Sequence[str],
    over: Sequence[str],
    x: str = "batch_size",
    target: float | None = None,
    reference_batch: float = 0.0,
    confidence: float = CONFIDENCE,
) -> Answer:
    """``analyze critical-batch``."""
    prep, goal = load(q)
    rows = prep.rows
    if x not in rows.columns or rows[x].nunique() < 2:
        raise UserError(f"--x {x!r}: needs a column with at least 2 values (batch sizes)")
    if not reference_batch >= 0:
        raise UserError(f"--reference-batch {reference_batch!r}: expected a batch size >= 0")
    cells = [*by, "optimizer"] if "optimizer" not in by else list(by)
    t = tuned(prep, goal, [*cells, x], over)
    curves = select(q.grid, results=q.results, scale=q.scale, where=q.where).frame("curves")
    by_run = curves_by_run(curves, t.seeds["run_id"])
    if not by_run:
        raise UserError("no loss curves for the tuned runs: critical-batch reads the curves")
    given = target is not None
    target = target if target is not None else default_target(by_run)
    cells += t.added
    table = steps_table(t.seeds, by_run, cells, x, float(target), confidence, reference_batch)
    censored = _left_censored(t.seeds, by_run, float(target))
    censored = censored.groupby([t.seeds[c] for c in [*cells, x]], dropna=False).transform("any")
    if censored.any():  # the whole batch size: its mean steps are an upper bound
        kept = t.seeds[~censored]
        fit = steps_table(kept, by_run, cells, x, float(target), confidence, reference_batch)
        table = _refit(table, fit, t.seeds[censored], cells, x)
        n = t.seeds[censored][[*cells, x]].drop_duplicates().shape[0]
        left = [
            f"{n} batch size(s) with a run already at the target at its first logged point "
            "(left-censored): out of the S(B) fit, steps interval from 0"
        ]
    else:
        left = []
    ref = f"B_ref = {reference_batch:g}" if reference_batch else "B_ref = 0 (the fit's limit)"
    notes = [
        *t.notes,
        f"target: {LOSS} <= {target:.4g} "
        + ("(--target)" if given else "(default: the highest loss every tuned run reaches)"),
        f"critical batch: S(B) = a + b/B fitted over every batch size (weights 1/(B S)^2); "
        f"B* where the steps exceed linear scaling from {ref} by {100 * OVERHEAD:g} % "
        f"(Zhang et al. 2024): B* = {1 + OVERHEAD:g} B_ref + {OVERHEAD:g} b/a; "
        "overhead: B S(B) / (a B_ref + b)",
        f"steps interval: {METHODS['mean']}; critical batch interval: {METHODS['ratio']} on "
        f"b/a; {100 * confidence:g}%",
        *left,
        *_length_notes(table),
    ]
    return Answer(table=table, notes=notes)


#: The fit's columns, replaced by those of the fit without left-censored batch sizes.
FIT_COLUMNS = ("overhead", "reference_batch", "critical_batch", "ci_low", "ci_high", "fit_check")


def _left_censored(
    seeds: pd.DataFrame, by_run: dict[str, pd.DataFrame], target: float
) -> pd.Series:
    """Whether each seed's run is already at ``target`` at its first logged point."""
    flags = [str(r) in by_run and reading(by_run[str(r)], target).censored for r in seeds["run_id"]]
    return pd.Series(flags, index=seeds.index, dtype=bool)


def _refit(
    table: pd.DataFrame,
    fit: pd.DataFrame,
    censored: pd.DataFrame,
    cells: Sequence[str],
    x: str,
) -> pd.DataFrame:
    """``table`` with each cell's critical batch from ``fit`` (the batch sizes none of whose
    runs is left-censored; NaN and "no verdict" where the cell keeps fewer than 3), and the
    left-censored batch sizes' steps intervals from 0 (their steps are upper bounds)."""
    out = table.copy()
    bad = censored[[*cells, x]].drop_duplicates().rename(columns={x: "batch_size"})
    flagged = out.merge(bad.assign(_bad=True), on=[*cells, "batch_size"], how="left")["_bad"]
    mask = flagged.fillna(False).astype(bool).to_numpy()
    out.loc[mask, "steps_ci_low"] = 0.0
    out.loc[mask, "steps_ci_high"] = out.loc[mask, ["steps", "steps_ci_high"]].max(axis=1)
    keep = fit.drop_duplicates(subset=list(cells)) if cells else fit.head(1)
    enough = fit.groupby(list(cells), dropna=False).size() if cells else pd.Series([len(fit)])
    for i, row in out.iterrows():
        match = keep
        for c in cells:
            match = match[match[c] == row[c]]
        key = tuple(row[c] for c in cells)
        n = int(enough.get(key[0] if len(key) == 1 else key, 0)) if cells else len(fit)
        if match.empty or n < 3:
            out.loc[i, list(FIT_COLUMNS)] = [
                np.nan,
                row["reference_batch"],
                np.nan,
                np.nan,
                np.nan,
                "no verdict",
            ]
            out.loc[i, "note"] = (
                "no verdict: fewer than 3 batch sizes reach the target after their first point"
            )
            continue
        for c in FIT_COLUMNS:
            if c != "overhead":
                out.loc[i, c] = match[c].iloc[0]
        if mask[out.index.get_loc(i)]:
            out.loc[i, "overhead"] = np.nan
            out.loc[i, "note"] = "left-censored: out of the fit"
    return out


def _length_notes(table: pd.DataFrame) -> list[str]:
    lengths = table.attrs.get("lengths", ())
    if len(set(lengths)) < 2:
        return []
    phases = table["phase"].dropna()
    return [
        f"runs of different lengths compared ({min(lengths):g}..{max(lengths):g} steps): each "
        f"reaches the target at a different phase of its schedule (phase "
        f"{phases.min():.2f}..{phases.max():.2f} of its run)"
    ]
