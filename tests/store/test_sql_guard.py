"""SQL over the results reads only the results (issue 29, items 3 and 4): ``harness query``,
``--where`` and the Python API's connection cannot write files, attach databases, load
extensions or read files outside the results folder; ``--unsafe`` gives full DuckDB back; a
memory limit bounds a query and Ctrl-C stops a runaway one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from harness.analysis.rows.load import select
from harness.analysis.testing import write_run
from harness.api import connect
from harness.cli import main
from harness.core.errors import UserError
from harness.core.paths import duck_path
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.store.db import sql_string
from harness.store.integrity import check_grid
from harness.store.manifest import write_manifest
from tests.local_submits import REPO
from tests.polling import wait_until

GRID = """
name: sg
base: {model: tiny, dataset: classics-bpe8k, optimizer: adamw, seq_len: 32, batch_size: 8,
       tokens: 1536, eval_tokens: 2048, log_every: 2}
grid: {lr: [1.0e-3, 3.0e-3]}
seeds: 2
"""


@pytest.fixture
def root(tmp_path: Path, prepared_data: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A results root of grid ``sg``: 4 runs with rows and curves, beside a folder ``outside``
    (a sibling whose name starts like the root's) holding a secret."""
    for name in ("HARNESS_SQL_UNSAFE", "HARNESS_SQL_MEMORY"):
        monkeypatch.delenv(name, raising=False)
    grid_file = tmp_path / "sg.yaml"
    grid_file.write_text(textwrap.dedent(GRID))
    runs = load_grid(grid_file, vocab=vocab_lookup(prepared_data)).runs
    root = tmp_path / "results"
    write_manifest(root, "sg", runs)
    for i, run in enumerate(runs):
        write_run(root, run, val_ppl=100.0 + i, points=3, source=None)
    (tmp_path / "results2").mkdir()
    (tmp_path / "results2" / "secret.csv").write_text("password\nhunter2\n")
    check_grid(root, "sg")  # the integrity check's record of verified files, written once
    return root


def query(root: Path, sql: str, *flags: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, ["query", sql, "--format", "csv", *flags, "--results", str(root)])
    return r.exit_code, r.stdout, r.stderr


ROW = "{root}/sg/runs/{row}"
"""A run's row file (``{row}``: its name, filled in by the test)."""

ESCAPES = {
    # round 3 (issue 29)
    "copy out": ("COPY (SELECT * FROM runs) TO '{tmp}/stolen.csv'", "not COPY"),
    "copy in": ("COPY (SELECT 1) TO '{root}/sg/evil.parquet'", "not COPY"),
    "attach": ("ATTACH '{tmp}/new.duckdb' AS x", "not ATTACH"),
    "install": ("INSTALL httpfs", "not LOAD"),
    "load": ("LOAD httpfs", "not LOAD"),
    "set": ("SET enable_external_access = true", "not SET"),
    "passwd": ("SELECT * FROM read_csv('/etc/passwd')", 'Cannot access file "/etc/passwd"'),
    "read_text": ("SELECT content FROM read_text('/etc/hostname')", "Permission Error"),
    "glob": ("SELECT * FROM glob('/etc/*')", 'Cannot access file "/etc/*"'),
    "sibling": ("SELECT * FROM read_csv('{tmp}/results2/secret.csv')", "Permission Error"),
    "dot-dot": ("SELECT * FROM read_text('{root}/../results2/secret.csv')", "Permission Error"),
    "url": ("SELECT * FROM read_csv('https://example.com/x.csv')", "Permission Error"),
    # round 4 (issue 44): statements that wrap a write
    "explain analyze copy": (
        f"EXPLAIN ANALYZE COPY (SELECT * REPLACE (0.001 AS val_loss) FROM '{ROW}') TO '{ROW}'",
        "not COPY",
    ),
    "explain analyze copy over a row": (
        f"EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{ROW}'",
        "not COPY",
    ),
    "explain (analyze) copy": (f"EXPLAIN (ANALYZE) COPY (SELECT 1 AS x) TO '{ROW}'", "not COPY"),
    "explain (format json) copy": (f"EXPLAIN (FORMAT json) COPY (SELECT 1) TO '{ROW}'", "not COPY"),
    "comment then explain": (f"/* x */ EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{ROW}'", "COPY"),
    "prepare copy": (f"PREPARE p AS COPY (SELECT 1 AS x) TO '{ROW}'", "not PREPARE"),
    "prepare then execute": (
        f"PREPARE p AS COPY (SELECT 1 AS x) TO '{ROW}'; EXECUTE p",
        "not PREPARE",
    ),
    "select then copy": (f"SELECT 1; COPY (SELECT 1 AS x) TO '{ROW}'", "not COPY"),
    "nested query()": (f"FROM query('COPY (SELECT 1 AS x) TO ''{ROW}''')", "SELECT"),
    "explain analyze in query()": (
        f"FROM query('EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO ''{ROW}''')",
        "SELECT",
    ),
    "explain analyze create": ("EXPLAIN ANALYZE CREATE TABLE t AS SELECT 1", "not CREATE"),
    "pragma": ("PRAGMA enable_profiling", "not PRAGMA"),
    "call": ("CALL pragma_version()", "not CALL"),
}
"""Round 3's and round 4's attacks on ``harness query``: each is refused in one line."""


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root``: its bytes and its mtime (ns)."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def attack(root: Path, name: str) -> str:
    sql, _ = ESCAPES[name]
    row = next((root / "sg" / "runs").glob("*.parquet")).name
    return sql.format(tmp=root.parent, root=root, row=row)


@pytest.mark.parametrize("escape", ESCAPES)
def test_query_reads_only_the_results_folder(root, escape):
    tmp = root.parent
    before = snapshot(root)

    code, out, err = query(root, attack(root, escape))

    assert code == 2, out + err
    assert err.count("\n") == 1 and err.startswith("error: ") and ESCAPES[escape][1] in err, err
    assert "Traceback" not in err and "hunter2" not in out
    assert not (tmp / "stolen.csv").exists() and not (tmp / "new.duckdb").exists()
    assert snapshot(root) == before  # no file of the results written, added or touched


@pytest.mark.parametrize("escape", ESCAPES)
def test_the_python_api_connection_refuses_every_attack(root, escape):
    tmp = root.parent
    before = snapshot(root)
    con = connect("sg", results=root)

    for run in (con.execute, con.sql, lambda sql: con.sql("SELECT 1").query("t", sql)):
        with pytest.raises((UserError, duckdb.Error)):
            run(attack(root, escape)).fetchall()

    assert not (tmp / "stolen.csv").exists() and not (tmp / "new.duckdb").exists()
    assert snapshot(root) == before
    assert con.execute("SELECT count(*) FROM runs").fetchall() == [(4,)]


def test_the_python_api_relations_do_not_write(root):
    before = snapshot(root)
    row = str(next((root / "sg" / "runs").glob("*.parquet")))
    rel = connect("sg", results=root).sql("SELECT 1 AS x")

    for write in ("write_parquet", "to_parquet", "write_csv", "to_csv"):
        with pytest.raises(UserError, match="reads only"):
            getattr(rel, write)(row)
    with pytest.raises(UserError, match="reads only"):
        rel.to_table("t")

    assert snapshot(root) == before
    assert rel.filter("x = 1").fetchall() == [(1,)]  # a relation of a relation still reads


@pytest.mark.parametrize(
    "where",
    [
        "lr > 0; COPY (SELECT 1 AS x) TO '{row}'",
        "lr > 0; EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{row}'",
        "lr > (SELECT count(*) FROM query('COPY (SELECT 1 AS x) TO ''{row}'''))",
    ],
)
def test_where_cannot_write(root, where):
    before = snapshot(root)
    row = next((root / "sg" / "runs").glob("*.parquet"))

    r = CliRunner().invoke(
        main, ["analyze", "best", "sg", "--where", where.format(row=row), "--results", str(root)]
    )

    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert snapshot(root) == before


def test_query_still_reads_every_view_and_its_own_files(root):
    code, out, _ = query(root, "SELECT count(*) AS n FROM runs")
    assert code == 0 and out.split() == ["n", "4"]
    code, out, _ = query(root, "SELECT count(*) AS n FROM glob('" + str(root) + "/sg/runs/*')")
    assert code == 0 and out.split() == ["n", "4"]
    code, out, _ = query(root, "DESCRIBE runs")
    assert code == 0 and "val_ppl" in out


def test_where_cannot_read_a_file_outside_the_results(root):
    leak = f"lr < (SELECT count(*) FROM read_csv('{root.parent}/results2/secret.csv'))"

    r = CliRunner().invoke(main, ["analyze", "best", "sg", "--where", leak, "--results", str(root)])

    assert r.exit_code == 2, r.output
    assert "Permission Error" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_the_python_api_connection_reads_only_the_results(root):
    con = select("sg", results=root).con

    assert con.execute("SELECT count(*) FROM runs").fetchall() == [(4,)]
    with pytest.raises(duckdb.PermissionException):
        con.execute(f"SELECT * FROM read_csv('{root.parent}/results2/secret.csv')").fetchall()
    with pytest.raises(duckdb.Error, match="locked"):
        con.execute("SET enable_external_access = true")


def test_unsafe_gives_full_duckdb_back(root, monkeypatch):
    out = root.parent / "export.csv"
    code, _, err = query(root, f"COPY (SELECT run_id FROM runs) TO '{out}'", "--unsafe")
    assert code == 0, err
    assert len(out.read_text().splitlines()) == 5  # a header and 4 runs

    monkeypatch.setenv("HARNESS_SQL_UNSAFE", "1")
    code, out_text, err = query(
        root, f"SELECT * FROM read_csv('{root.parent}/results2/secret.csv')"
    )
    assert code == 0 and "hunter2" in out_text, err
    monkeypatch.setenv("HARNESS_SQL_UNSAFE", "maybe")
    code, _, err = query(root, "SELECT 1")
    assert code == 2 and "HARNESS_SQL_UNSAFE='maybe': expected 1, true, 0 or false" in err


def test_parquet_output_is_written_by_a_confined_query(root):
    out = root.parent / "best.parquet"
    r = CliRunner().invoke(
        main,
        [
            "query",
            "SELECT run_id FROM runs",
            "--format",
            "parquet",
            "-o",
            str(out),
            "--results",
            str(root),
        ],
    )
    assert r.exit_code == 0, r.output
    assert duckdb.sql(f"SELECT count(*) FROM '{out}'").fetchall() == [(4,)]


def test_a_memory_limit_bounds_a_query_and_its_result(root):
    runaway = "SELECT a.range * b.range AS x FROM range(100000) a, range(100000) b"

    code, _, err = query(root, runaway, "--memory-limit", "64MB")

    assert code == 2, err
    assert "more than the memory limit (61 MiB)" in err and err.count("\n") == 1, err
    code, _, err = query(root, "SELECT 1", "--memory-limit", "lots")
    assert code == 2 and "expected a size such as 4GB, 512MiB or 25%" in err


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.slow
def test_ctrl_c_stops_a_runaway_cross_join(root):
    sql = "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range = 7"
    argv = [
        sys.executable,
        "-c",
        "from harness.cli import main; main()",
        "query",
        sql,
        "--results",
        str(root),
    ]
    proc = subprocess.Popen(
        argv,
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        wait_until(lambda: _cpu_s(proc.pid) > 6.0, 120, "the query running")  # start-up: ~2 s
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)  # before the fix: 10^12 rows, many minutes
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert err.strip() == "interrupted" and out == "", err


def test_a_sibling_named_like_the_escaped_results_folder_is_not_read(root):
    weird = root.rename(root.parent / "we'ird [1]*")
    sibling = root.parent / duck_path(weird)  # "we'ird [[]1[]][*]": a folder of its own
    sibling.mkdir()
    (sibling / "secret.csv").write_text("password\nhunter2\n")
    steal = f"SELECT * FROM read_csv({sql_string(str(sibling / 'secret.csv'))})"

    code, out, err = query(weird, steal)

    assert code == 2 and "Permission Error" in err and "hunter2" not in out, out + err
    code, out, _ = query(weird, "SELECT count(*) AS n FROM runs")
    assert code == 0 and out.split() == ["n", "4"], out
    code, out, _ = query(weird, "SELECT count(*) AS n FROM manifest")
    assert code == 0 and out.split() == ["n", "4"], out
