"""Analysis steps whose cost does not grow by a Python call per run (issue 28: ``analyze best``
and ``gap`` over 100,000 runs): the work each does is counted, never timed
(``benchmarks/scale.py`` times them)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from harness.analysis.present.figures.render import rows_sha256
from harness.analysis.questions.query import Query
from harness.analysis.rows import axes, selectors, tuning
from harness.analysis.rows.edges import edge_note
from harness.analysis.rows.load import select
from harness.analysis.rows.selectors import ARM, label_arms, parse_selector
from harness.analysis.rows.tuning import seed_stats, tune
from harness.analysis.stats.frame import VALUE
from harness.analysis.testing import make_run, write_run
from harness.core.result import Status
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


def _edges_cell_by_cell(rows: pd.DataFrame, by: list[str], over: list[str], best) -> list[str]:
    """The ``edge`` column as it was found before: a frame per cell, the line through its best
    for each axis (:func:`line_values`)."""
    out = []
    for _, b in best.iterrows():
        mask = pd.Series(True, index=rows.index)
        for k in by:
            mask &= rows[k].isna() if pd.isna(b[k]) else rows[k] == b[k]
        cell = rows[mask]
        found = [edge_note(a, tuning.line_values(cell, b, over, a), b[a]) for a in over]
        out.append("; ".join(n for n in found if n))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_edge_notes_come_from_one_pass_and_equal_the_lines_cell_by_cell(monkeypatch, seed):
    """The ``edge`` column cost a pandas frame per cell (0.3 to 0.5 s of CPU for 300 cells of
    100,000 runs): it is found in one pass over the cells' distinct configurations, and says
    what the line through each cell's best said cell by cell: NULL keys and NULL values, a
    column that follows the lr (``lr_min: 0.1 * lr``) in some cells, a held axis."""
    rng = np.random.default_rng(seed)
    n = 600
    lrs = np.array([1e-3, 3e-3, 1e-2, 3e-2])
    lr = rng.choice(lrs, n)
    follows = rng.random(n) < 0.5
    rows = pd.DataFrame(
        {
            "optimizer": rng.choice(np.array(["sgd", "adamw", None], dtype=object), n),
            "batch_size": rng.choice([16.0, 32.0, math.nan], n),
            "lr": lr,
            "beta1": rng.choice([0.8, 0.9, 0.95, math.nan], n),
            "lr_min": np.where(follows, 0.1 * lr, rng.choice([1e-5, 1e-4], n)),
            VALUE: rng.normal(size=n),
        }
    )
    rows.loc[rng.random(n) < 0.05, VALUE] = math.inf  # diverged seeds are tried values too
    by, over = ["optimizer", "batch_size"], ["lr", "beta1", "lr_min"]
    monkeypatch.setattr(tuning, "line_values", lambda *a: pytest.fail("a frame per cell"))
    best = tune(rows, by, over, Goal.MIN)
    monkeypatch.undo()
    assert list(best["edge"]) == _edges_cell_by_cell(rows, by, over, best)
    assert (best["edge"] != "").any()


def _grid_of_metrics(root) -> None:
    """Two optimizers x 3 lrs x 2 seeds with many metrics, a diverged run and a failed one."""
    for opt in ("sgd", "adamw"):
        for i, lr in enumerate((0.01, 0.1, 1.0)):
            for s in range(2):
                run = make_run(grid="g", optimizer=opt, lr=lr, seed=s)
                metrics = {"mfu": 0.1 * i, "iso_sym": 0.5 + s, "rho": 1.0 + i}
                write_run(root, run, val_ppl=20.0 + i + s + (opt == "sgd"), metrics=metrics)
    bad = make_run(grid="g", optimizer="sgd", lr=10.0, seed=0)
    write_run(root, bad, status=Status.DIVERGED)
    write_run(root, make_run(grid="g", optimizer="adamw", lr=10.0, seed=0), status=Status.FAILED)


@pytest.mark.parametrize(
    ("metric", "select_by", "by"),
    [("val_ppl", None, ["optimizer"]), ("iso_sym", "val_loss", []), ("rho", None, ["mfu"])],
)
def test_analyze_best_reads_only_the_columns_a_tuned_table_reads(
    tmp_path, monkeypatch, metric, select_by, by
):
    """``analyze best`` read every column of every run (123 at 99,000 runs: 0.4 s of CPU more
    to sort and convert than the ~70 it reads): it reads no provenance but ``source`` and no
    metric but those it analyses, selects by, or names; its answer is the one it gives from
    every column."""
    from harness.analysis.questions import best, query
    from harness.analysis.rows import load as loading

    _grid_of_metrics(tmp_path)
    asked: list[str] = []
    real = loading._frame
    monkeypatch.setattr(
        loading, "_frame", lambda con, sql, *a: asked.append(sql) or real(con, sql, *a)
    )
    q = Query(grid="g", results=str(tmp_path), metric=metric, select_by=select_by)
    got = best.answer(q, by=by, over=["lr"])
    (sql,) = asked
    for unread in ("hostname", "git_commit", "created_at", "optimizer_fingerprint", "head_rho"):
        assert f'"{unread}"' not in sql
    for read in ("lr", "seed", "status", "source", "val_loss", "val_ppl", metric, *by):
        assert f'"{read}"' in sql
    monkeypatch.setattr(query, "columns_read", lambda columns, *a: list(columns))
    whole = best.answer(q, by=by, over=["lr"])
    assert got.table.equals(whole.table) and got.notes == whole.notes
    assert len(asked) == 2 and '"hostname"' in asked[1]


def test_varying_columns_are_found_without_hashing_each_value_and_as_nunique_finds_them(
    monkeypatch,
):
    """Which config columns vary is asked of every column of 100,000 rows several times per
    command (``nunique`` hashes every value): a column without NULLs is compared with its
    first value; the answer is ``nunique(dropna=False) > 1``'s, NULLs and None/NaN included."""
    n = 1000
    columns = {
        "same_float": np.full(n, 0.1),
        "two_floats": np.r_[np.full(n - 1, 0.1), 0.2],
        "zero_signs": np.r_[np.full(n - 1, 0.0), -0.0],
        "float_and_nan": np.r_[np.full(n - 1, 0.1), math.nan],
        "all_nan": np.full(n, math.nan),
        "same_text": np.array(["sgd"] * n, dtype=object),
        "two_texts": np.array(["sgd"] * (n - 1) + ["adamw"], dtype=object),
        "text_and_none": np.array(["sgd"] * (n - 1) + [None], dtype=object),
        "all_none": np.array([None] * n, dtype=object),
        "none_and_nan": np.array([None] * (n - 1) + [math.nan], dtype=object),
        "ints": pd.array([3] * n, dtype="Int64"),
        "ints_and_null": pd.array([3] * (n - 1) + [None], dtype="Int64"),
        "bools": pd.array([True] * (n - 1) + [False], dtype="boolean"),
        "same_bools": np.full(n, True),
    }
    df = pd.DataFrame(columns)
    expected = [c for c in df.columns if df[c].nunique(dropna=False) > 1]
    hashed: list[str] = []
    real = pd.Series.nunique

    def counting(self, *args, **kwargs):
        hashed.append(self.name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pd.Series, "nunique", counting)
    assert axes.varying(df, list(df.columns)) == expected
    assert hashed == ["all_nan", "all_none", "none_and_nan"]  # NULLs only: None and NaN differ
