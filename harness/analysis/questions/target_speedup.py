"""``harness analyze speedup --target T``: how many times the steps (tokens, seconds) arm a
needs to reach a target arm b needs, read from the curves, with an interval over seeds that keeps
the runs that never reach it (:mod:`harness.analysis.stats.target_speedup`), and optionally the
speed-run's acceptance rule on each arm (``--threshold``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import Query
from harness.analysis.questions.target_query import (
    TargetQuery,
    own_lengths,
    runs,
    tuned_columns,
)
from harness.analysis.questions.targets import device_notes
from harness.analysis.rows.arm_labels import panel_keys
from harness.analysis.rows.axes import check_columns
from harness.analysis.rows.load import select
from harness.analysis.rows.selectors import Selector, label_arms
from harness.analysis.stats import ARM
from harness.analysis.stats.defaults import CONFIDENCE
from harness.analysis.stats.reaching import MEASURES, Crossing, brackets
from harness.analysis.stats.target_speedup import mean_rule, speedup
from harness.core.errors import UserError, unknown_choice


def answer(
    q: Query,
    *,
    a: Selector,
    b: Selector,
    target: float,
    curve: str | None = None,
    by: Sequence[str] = (),
    over: Sequence[str] = (),
    measure: str = "steps",
    crossing: Crossing = "interpolated",
    threshold: float | None = None,
    confidence: float = CONFIDENCE,
    n_boot: int = 2000,
    seed: int = 0,
) -> Answer:
    """b's speed-up over a to ``target`` per cell of ``by`` (default: the conditions that vary
    but each arm's own run length): median(a) / median(b) over seeds, each arm at its fastest
    configuration of ``over``."""
    if measure not in MEASURES:
        raise unknown_choice("--measure", measure, MEASURES)
    if n_boot < 100:
        raise UserError(f"--n-boot {n_boot}: expected at least 100 resamples")
    tq = TargetQuery(q.grid, target, curve, q.results, q.where, q.scale, q.pool)
    _, rows, tgt, notes = runs(tq, crossing)
    rows = label_arms(rows, {"--a": a, "--b": b})
    check_columns(rows, by, "--by")
    keys = [*by, *panel_keys(rows, [*q.pool, *over, *own_lengths(rows, by), "label"], by)]
    keys = [k for k in keys if rows.groupby(ARM)[k].nunique(dropna=False).max() <= 1 or k in by]
    column = MEASURES[measure]
    chosen = _fastest(rows, keys, list(over) or tuned_columns(rows, keys), column)
    curves = select(q.grid, results=q.results, scale=q.scale, where=q.where).frame("curves")
    low, high = brackets(chosen, curves, tgt.column, tgt.value, measure)
    chosen = chosen.assign(_low=low, _high=high)
    out = []
    for cell, part in chosen.groupby(keys, dropna=False, sort=True) if keys else [((), chosen)]:
        cell = cell if isinstance(cell, tuple) else (cell,)
        arm = {s.label: part[part[ARM] == s.label] for s in (a, b)}
        if any(v.empty for v in arm.values()):
            continue
        ra, rb = arm[a.label], arm[b.label]
        high_a = ra[column].where(ra["censored"], ra["_high"]).to_numpy(float)
        high_b = rb[column].where(rb["censored"], rb["_high"]).to_numpy(float)
        s = speedup(
            ra[column].to_numpy(float),
            rb[column].to_numpy(float),
            ra["_low"].to_numpy(float),
            rb["_low"].to_numpy(float),
            a_high=high_a,
            b_high=high_b,
            confidence=confidence,
            n_boot=n_boot,
            seed=seed,
        )
        row: dict[str, Any] = dict(zip(keys, cell, strict=True))
        for lab, r in ((a.label, ra), (b.label, rb)):
            row[f"{measure} {lab}"] = float(r[column].median())
            row[f"n {lab}"] = len(r)
            row[f"reached {lab}"] = int((~r["censored"]).sum())
        row.update(speedup=s.ratio, ci_low=s.low, ci_high=s.high)
        row["faster_by"] = s.ratio - 1 if math.isfinite(s.ratio) else s.ratio
        if threshold is not None:
            for lab, r in ((a.label, ra), (b.label, rb)):
                pts = curves[curves["run_id"].isin(r["run_id"])]
                m = mean_rule(pts, tgt.column, tgt.value, threshold)
                row.update(
                    {
                        f"step {lab}": m.step,
                        f"mean {lab}": m.mean,
                        f"margin {lab}": m.margin,
                        f"passes {lab}": m.passes,
                    }
                )
        out.append(row)
    if not out:
        raise UserError("--a and --b share no cell: nothing to compare")
    notes += _notes(measure, a.label, b.label, confidence, threshold, tgt.value)
    notes += device_notes(chosen) if measure == "time" else []
    return Answer(table=pd.DataFrame(out), notes=notes)


def _fastest(
    rows: pd.DataFrame, keys: Sequence[str], over: Sequence[str], col: str
) -> pd.DataFrame:
    """The runs of each arm's configuration (of ``over``) with the lowest median ``col`` per
    cell of ``keys``."""
    if not over:
        return rows
    group = [*keys, ARM, *over]
    med = rows.groupby(group, dropna=False)[col].median().reset_index()
    best = med.loc[med.groupby([*keys, ARM], dropna=False)[col].idxmin()]
    return rows.merge(best[group], on=group, how="inner")


def _notes(
    measure: str, a: str, b: str, confidence: float, threshold: float | None, target: float
) -> list[str]:
    out = [
        f"speedup: median over seeds of {a}'s {measure}-to-target / {b}'s (> 1: {b} is faster; "
        f"faster_by = speedup - 1); a run that never reaches the target counts as +inf, kept",
        f"interval: {100 * confidence:g}% percentile bootstrap over seeds, each reading taken "
        "anywhere between its logged points (a censored run: beyond its last); none with one seed",
    ]
    if threshold is not None:
        out.append(
            f"rule: mean over seeds at the latest step every seed logged; passes when "
            f"({target:g} - mean) * sqrt(n) >= {threshold:g} (margin)"
        )
    return out
