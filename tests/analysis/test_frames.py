"""A query's rows as pandas through Arrow are the frame DuckDB's ``.df()`` gives, column for
column, whatever the types and NULLs (issue 41: ``.df()`` made a Python object of each of the
millions of strings of 100,000 runs' rows)."""

from __future__ import annotations

import warnings

import duckdb
import pandas as pd
import pytest

from harness.analysis.rows.load import _frame, select
from harness.analysis.testing import make_run, write_run

TYPES = {
    "s": ("VARCHAR", "'a'"),
    "i": ("BIGINT", "7"),
    "i32": ("INTEGER", "-3"),
    "b": ("BOOLEAN", "true"),
    "d": ("DOUBLE", "-0.0"),
    "ts": ("TIMESTAMPTZ", "TIMESTAMPTZ '2026-01-01 00:00:00+00'"),
    "lst": ("VARCHAR[]", "['x']"),  # another type: .df() converts
}


def _reference(con: duckdb.DuckDBPyConnection, sql: str) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*inplace keyword.*")
        return con.execute(sql).df()


@pytest.mark.parametrize("names", [[n for n in TYPES if n != "lst"], list(TYPES)])
def test_every_type_with_and_without_nulls_converts_as_duckdb_does(names):
    cols = []
    for n in names:
        sql_type, value = TYPES[n]
        cols += [
            f"{value}::{sql_type} AS {n}_full",
            f"CASE WHEN i % 2 = 0 THEN {value}::{sql_type} END AS {n}_some",
            f"NULL::{sql_type} AS {n}_null",
        ]
    sql = f"SELECT {', '.join(cols)} FROM range(5) t(i) ORDER BY i"
    con = duckdb.connect()
    got, want = _frame(con, sql), _reference(con, sql)
    assert list(got.dtypes.astype(str)) == list(want.dtypes.astype(str))
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_a_selections_rows_are_those_of_duckdbs_conversion(tmp_path):
    for s in range(3):
        run = make_run(grid="g", optimizer="adamw" if s else "sgd", lr=0.1 * (s + 1), seed=s)
        write_run(tmp_path, run, val_ppl=20.0 + s)
    sel = select("g", results=tmp_path)
    want = _reference(sel.con, sel.sql("runs"))
    assert want.isna().all().any() and (want.dtypes.astype(str) == "object").any()  # NULL-only
    pd.testing.assert_frame_equal(sel.frame("runs"), want, check_exact=True)
    ids = list(want["run_id"][:2])
    curves = sel.curves_of(ids)
    assert set(curves["run_id"]) == set(ids)
    sql = f"SELECT * FROM ({sel.sql('curves')}) WHERE run_id IN ('{ids[0]}', '{ids[1]}')"
    pd.testing.assert_frame_equal(curves, _reference(sel.con, sql), check_exact=True)
