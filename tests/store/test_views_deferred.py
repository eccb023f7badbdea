"""A view made when first read (issue 41: ``analyze best`` paid 0.1 s of CPU at 100,000 runs to
make the ``curves`` view, reading every per-run curve file's footer, and never read it)."""

from __future__ import annotations

import duckdb
import pytest

from harness.analysis.rows.load import select
from harness.analysis.testing import make_run, write_run
from harness.store import db


def _made(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {name for (name,) in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}


def test_a_selection_makes_curves_when_a_statement_reads_them_over_the_files_it_listed(tmp_path):
    for s in range(2):
        write_run(tmp_path, make_run(grid="g", lr=0.1 * (s + 1), seed=s), val_ppl=20.0 + s)
    sel = select("g", results=tmp_path)
    assert {"runs", "manifest", "evals"} <= _made(sel.con) and "curves" not in _made(sel.con)
    sel.frame("runs")
    assert "curves" not in _made(sel.con)  # the rows read: still no curves

    # a run written after the selection opened: neither view shows it (one listing for both)
    write_run(tmp_path, make_run(grid="g", lr=0.3, seed=2), val_ppl=22.0)
    curves = sel.frame("curves")
    assert "curves" in _made(sel.con)
    assert set(curves["run_id"]) == set(sel.frame("runs")["run_id"])
    assert len(set(curves["run_id"])) == 2
    assert select("g", results=tmp_path).count("runs") == 3  # a new selection sees it


def test_the_connection_of_query_has_every_view_and_need_makes_each_once(tmp_path):
    write_run(tmp_path, make_run(grid="g"), val_ppl=20.0)
    assert _made(db.connect(tmp_path, "g")) >= set(db.VIEWS)
    views = db.open_views(tmp_path, "g", views=("manifest",))
    assert "runs" not in _made(views.con)
    views.need("curves")  # curves reads runs: made first
    assert {"runs", "curves", "manifest"} <= _made(views.con)
    views.need("curves", "runs")  # made already: not again (CREATE VIEW would fail)
    assert views.made == {"runs", "curves", "manifest"}
    with pytest.raises(duckdb.CatalogException):
        views.con.execute("SELECT * FROM evals").fetchall()
