"""Analysis steps whose cost does not grow by a Python call per run (issue 28: ``analyze best``
and ``gap`` over 100,000 runs): the work each does is counted, never timed
(``benchmarks/scale.py`` times them)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from harness.analysis.present.figures.render import rows_sha256
from harness.analysis.rows import selectors
from harness.analysis.rows.load import select
from harness.analysis.rows.selectors import ARM, label_arms, parse_selector
from harness.analysis.rows.tuning import seed_stats, tune
from harness.analysis.stats.frame import VALUE
from harness.analysis.testing import make_run, write_run
from harness.metrics.catalogue import Goal


def test_rows_of_no_arm_are_labelled_once_per_distinct_combination(monkeypatch):
    """``analyze gap`` labels every row no selector picks by its values; 100,000 such rows took
    seconds when each was labelled on its own. The labels stay those of each row."""
    calls = []
    real = selectors._other_label

    def counting(row, keys):
        calls.append(tuple(row))
        return real(row, keys)

    monkeypatch.setattr(selectors, "_other_label", counting)
    n = 900
    df = pd.DataFrame(
        {
            "optimizer": np.array(["sgd", "adamw", "signum"] * (n // 3), dtype=object),
            "beta1": [0.9, None, math.nan] * (n // 3),  # NULL and NaN both print "null"
            "seed": np.arange(n),
        }
    )
    arms = {"--baseline": parse_selector("optimizer=sgd,beta1=0.9", "--baseline")}
    out = label_arms(df, arms, others=True)
    mine = arms["--baseline"].label
    expected = [mine, "optimizer=adamw,beta1=null", "optimizer=signum,beta1=null"]
    assert list(out[ARM]) == expected * (n // 3)
    assert len(calls) == 2  # two combinations besides the arm's, not 600 rows


def test_diverged_seeds_are_counted_per_cell_with_null_keys_kept():
    """The count of non-finite values per configuration and per cell (one pass over the rows,
    not a Python call per cell) matches the rows, with a NULL key a cell of its own."""
    rows = pd.DataFrame(
        {
            "opt": ["a", "a", "a", "a", None, None, "b", "b"],
            "lr": [1.0, 1.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0],
            VALUE: [1.0, math.inf, 2.0, 2.5, math.nan, 3.0, 0.5, 0.6],
        }
    )
    st = seed_stats(rows, ["opt", "lr"])
    got = {
        (o if isinstance(o, str) else None, lr): n
        for o, lr, n in zip(st["opt"], st["lr"], st["n_diverged"], strict=True)
    }
    assert got == {("a", 1.0): 1, ("a", 2.0): 0, (None, 1.0): 1, ("b", 1.0): 0}
    assert st["n_diverged"].dtype == np.int64
    best = tune(rows, ["opt"], ["lr"], Goal.MIN)
    cells = zip(best["opt"], best["diverged"], strict=True)
    by_cell = {(o if isinstance(o, str) else None): d for o, d in cells}
    assert by_cell == {"a": 1, "b": 0, None: 1}


def test_a_selection_reads_each_statement_once_and_hands_out_copies(tmp_path):
    """A figure command asked for the rows of every run five times (1 s of CPU each at 100,000
    runs): the second read of a statement comes from the first, without the database, and a
    caller that changes its frame changes no one else's."""
    for s in range(3):
        write_run(tmp_path, make_run(grid="g", optimizer="sgd", lr=0.1, seed=s))
    sel = select("g", results=tmp_path)
    first = sel.frame("runs")
    first["lr"] = 5.0
    sel.con.close()  # a second read that went to the database would fail now
    again = sel.frame("runs")
    assert len(again) == 3 and list(again["lr"]) == [0.1] * 3


def test_the_rows_hash_formats_no_text(monkeypatch):
    """The sidecar's hash of the rows drawn (20M curve points at 100,000 runs) hashes the
    values, never writes the rows out as CSV; it changes when one value does."""
    frame = pd.DataFrame({"run_id": ["a", "b"], "step": [2, 4], "train_loss": [1.0, None]})
    monkeypatch.setattr(pd.DataFrame, "to_csv", lambda *a, **k: pytest.fail("CSV written"))
    before = rows_sha256({"curves": frame})
    assert rows_sha256({"curves": frame.copy()}) == before
    changed = frame.assign(train_loss=[1.0, 2.0])
    assert rows_sha256({"curves": changed}) != before
