"""What ``harness analyze best`` costs beyond its answer (issue 41: <= 2 s of CPU at 100,000
runs): it imports no module it does not use, and the rows come sorted as DuckDB's ``ORDER BY``
sorts them, without DuckDB carrying every column through its sort."""

from __future__ import annotations

import subprocess
import sys

import duckdb
import pandas as pd
import pytest

from harness.analysis.rows import frames, queries
from harness.analysis.rows.load import _frame
from harness.analysis.testing import make_run, write_run

#: Modules a question about a grid named by name never uses: the grid loader (its resolvers
#: and registries), the YAML parser, the store's writer, pyarrow's Parquet module, and scipy
#: (the t quantiles at the default confidence are tabled: harness.analysis.stats.t_table).
UNUSED = ("harness.grid.load", "yaml", "harness.store.rows", "pyarrow.parquet", "scipy")


def test_analyze_best_of_a_grid_name_imports_no_loader_yaml_or_writer(tmp_path) -> None:
    for s in range(3):
        for lr in (0.1, 0.3):
            write_run(tmp_path, make_run(grid="g", optimizer="sgd", lr=lr, seed=s), val_ppl=10 + lr)
    code = (
        "import sys\nfrom harness.cli import main\n"
        f"sys.argv = ['harness', 'analyze', 'best', 'g', '--results', {str(tmp_path)!r}]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        f"print([m for m in {UNUSED!r} if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "ci_low" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


@pytest.mark.parametrize(
    ("sql", "body", "keys"),
    [
        ("SELECT * FROM r WHERE (x) ORDER BY run_id", "SELECT * FROM r WHERE (x)", ["run_id"]),
        ("SELECT * FROM c ORDER BY c.run_id, c.step", "SELECT * FROM c", ["run_id", "step"]),
        ("SELECT * FROM runs ORDER BY val_loss DESC", None, []),
        ("SELECT * FROM (SELECT * FROM t ORDER BY a)", None, []),
        ("SELECT * FROM runs", None, []),
    ],
)
def test_split_order_takes_a_final_ascending_order_of_plain_columns_only(sql, body, keys) -> None:
    assert queries.split_order(sql) == (body or sql, keys)


def test_rows_sorted_in_arrow_equal_duckdbs_order_by() -> None:
    """Strings by their bytes (upper case, digits, accents), integers, NULLs last, a second
    key; a float key or a column the result lacks falls back to DuckDB's sort."""
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE t AS SELECT * FROM (VALUES ('b', 2, 1.5), ('B', 1, 0.5), ('a', NULL, 2.0), "
        "('é', 3, NULL), ('10', 1, 1.0), (NULL, 5, 3.0), ('b', 1, 9.0), ('a', 0, 4.0)) "
        "v(s, i, f)"
    )
    con.execute("ALTER TABLE t ALTER f TYPE DOUBLE")
    for order in ("s", "i", "s, i", "i, s", "f", "s, f", "missing"):
        sql = f"SELECT s, i, f, i AS missing FROM t ORDER BY {order}"
        if order == "missing":
            sql = "SELECT s, i, f FROM t ORDER BY i"  # sorted by a column it keeps
        want = frames.as_duckdb_frame(con.sql(sql).to_arrow_table())
        pd.testing.assert_frame_equal(_frame(con, sql), want, check_exact=True)
