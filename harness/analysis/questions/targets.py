"""``harness analyze targets``: every run's tokens- and time-to-target."""

from __future__ import annotations

from harness.analysis.questions.answer import Answer
from harness.analysis.questions.target_query import TargetQuery, runs, tuned_columns
from harness.analysis.rows.arm_labels import panel_keys
from harness.analysis.stats.frame import METHOD
from harness.analysis.stats.to_target import CENSORED, TIME_TO_TARGET, TOKENS_TO_TARGET


def answer(q: TargetQuery) -> Answer:
    """``analyze targets``: every run's tokens- and time-to-target."""
    _, rows, _, notes = runs(q)
    keys = panel_keys(rows, q.pool)
    cols = [
        "run_id",
        METHOD,
        *keys,
        *tuned_columns(rows, keys),
        "seed",
        "status",
        TOKENS_TO_TARGET,
        TIME_TO_TARGET,
        CENSORED,
    ]
    table = rows[list(dict.fromkeys(cols))].sort_values([METHOD, "run_id"])
    return Answer(table=table.reset_index(drop=True), notes=notes)
