"""``harness analyze targets``: every run's steps-, tokens- and time-to-target."""

from __future__ import annotations

import pandas as pd

from harness.analysis.questions.answer import Answer
from harness.analysis.questions.target_query import TargetQuery, own_lengths, runs, tuned_columns
from harness.analysis.rows.arm_labels import panel_keys
from harness.analysis.stats import CENSORED, METHOD
from harness.analysis.stats.reaching import LEFT_CENSORED, MEASURES, STOPPED, Crossing


def answer(q: TargetQuery, *, crossing: Crossing = "interpolated") -> Answer:
    """``analyze targets``: every run's steps-, tokens- and time-to-target (``crossing``: how
    the crossing is read, :data:`harness.analysis.stats.reaching.CROSSINGS`)."""
    _, rows, _, notes = runs(q, crossing)
    own = own_lengths(rows)
    keys = panel_keys(rows, [*q.pool, *own])
    cols = [
        "run_id",
        METHOD,
        *keys,
        *own,
        *tuned_columns(rows, keys),
        "seed",
        "status",
        *MEASURES.values(),
        CENSORED,
        LEFT_CENSORED,
        STOPPED,
    ]
    if own:
        notes.append(f"run length ({', '.join(own)}): each arm's own, not a cell")
    notes += device_notes(rows)
    table = rows[list(dict.fromkeys(c for c in cols if c in rows))].sort_values([METHOD, "run_id"])
    return Answer(table=table.reset_index(drop=True), notes=notes)


#: Columns naming the hardware a run's wall-clock time was measured on.
DEVICE_COLUMNS = ("gpus_per_run", "device")


def device_notes(rows: pd.DataFrame) -> list[str]:
    """A note when the runs' hardware differs: their times to target are not comparable."""
    out = []
    for c in DEVICE_COLUMNS:
        if c in rows.columns and rows[c].nunique(dropna=True) > 1:
            per = rows.groupby(METHOD)[c].agg(lambda v: ",".join(sorted({str(x) for x in v})))
            listed = "; ".join(f"{m}: {v}" for m, v in per.items())
            out.append(
                f"{c} differs between runs ({listed}): time_to_target compares different "
                "hardware; compare steps or tokens"
            )
    return out
