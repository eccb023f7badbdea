"""Store reads whose cost does not grow by a Python call per run (issue 28: ``status`` and
queries over 100,000 runs): the work each does is counted, never timed (``benchmarks/scale.py``
times them)."""

from __future__ import annotations

from types import SimpleNamespace

import duckdb
import pytest

from harness.core import paths
from harness.core.files import try_locked
from harness.store import status
from harness.store.db import newest_rows_sql


def test_status_tries_only_the_run_locks_that_exist(tmp_path, monkeypatch):
    """``status`` asks which of the grid's planned runs a live process trains: it lists the
    locks folder once and tries the lock files there, not a lock path per planned run."""
    tried: list[str] = []
    real = status.is_locked

    def counting(path):
        tried.append(path.name)
        return real(path)

    monkeypatch.setattr(status, "is_locked", counting)
    planned = [f"run{i:04d}" for i in range(1000)]
    for r in ("run0003", "run0500"):
        path = paths.run_lock_path(tmp_path, "g", r)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    (paths.locks_dir(tmp_path, "g") / "run0007.eval.lock").touch()  # another kind of lock
    with try_locked(paths.run_lock_path(tmp_path, "g", "run0500")) as held:
        assert held
        assert status.training_now(tmp_path, "g", planned) == {"run0500"}
    assert sorted(tried) == ["run0003.lock", "run0500.lock"]
    assert status.training_now(tmp_path, "other", planned) == set()  # no locks folder


def test_the_runs_view_shows_the_newest_row_of_each_run_and_every_run_once(tmp_path):
    """Only runs with several rows go through the window that picks the newest (the rest pass
    as they are); the view still shows one row per run, the newest by attempt then time, across
    files, with the columns in the files' order."""
    t0 = "2026-01-01 00:00:00+00"
    a = tmp_path / "a.parquet"
    b = tmp_path / "b.parquet"
    con = duckdb.connect()
    con.execute(  # a generation: r0..r999 once, r1 twice (attempt 1 then 2)
        f"COPY (SELECT 'g' AS grid, 'r' || i AS run_id, 1 AS attempt, TIMESTAMPTZ '{t0}' AS "
        "created_at, i::DOUBLE AS lr FROM range(1000) t(i) UNION ALL SELECT 'g', 'r1', 2, "
        f"TIMESTAMPTZ '{t0}', -1.0) TO '{a}'"
    )
    con.execute(  # per-run files: r2 again, later but of an older attempt; r5 attempt 1, later
        f"COPY (SELECT 'g' AS grid, 'r2' AS run_id, 0 AS attempt, TIMESTAMPTZ '{t0}' + "
        "INTERVAL 1 HOUR AS created_at, -2.0 AS lr UNION ALL SELECT 'g', 'r5', 1, "
        f"TIMESTAMPTZ '{t0}' + INTERVAL 1 SECOND, -5.0) TO '{b}'"
    )
    src = f"read_parquet(['{a}', '{b}'], union_by_name = true)"
    view = con.execute(f"SELECT * FROM ({newest_rows_sql(src)}) ORDER BY run_id")
    columns = [d[0] for d in view.description]
    got = {r[1]: r for r in view.fetchall()}
    assert columns == ["grid", "run_id", "attempt", "created_at", "lr"]
    assert len(got) == 1000
    assert got["r1"][4] == -1.0  # attempt 2 beats attempt 1
    assert got["r2"][4] == 2.0  # an older attempt loses, however late its clock
    assert got["r5"][4] == -5.0  # same attempt: the later row
    assert sum(r[4] for r in got.values()) == sum(range(1000)) - 1 - 5 + (-1.0 - 5.0)


class _Counting:
    """A connection that records the SQL it runs."""

    def __init__(self, con, seen):
        self.con, self.seen = con, seen

    def execute(self, sql, *args):
        self.seen.append(sql)
        return self.con.execute(sql, *args)


def test_status_reads_the_planned_run_ids_only_where_a_lock_or_live_file_asks(
    tmp_path, monkeypatch
):
    """``status`` brought the run_ids of every planned run and every row into Python (100,000
    of each: half a second of CPU) to tell which runs a process trains; with no lock file and
    no live file there is none to tell, and the counts are the same."""
    from harness.analysis.testing import make_run, write_run
    from harness.store.manifest import write_manifest

    runs = [make_run(grid="g", optimizer="sgd", lr=0.1, seed=s) for s in range(3)]
    write_manifest(tmp_path, "g", runs)
    for run in runs[:2]:
        write_run(tmp_path, run, val_ppl=10.0)
    seen: list[str] = []
    real, asked = status.open_views, []

    def counting(*a, **k):
        asked.append(k["views"])
        return SimpleNamespace(con=_Counting(real(*a, **k).con, seen))

    monkeypatch.setattr(status, "open_views", counting)
    got = status.grid_status(tmp_path, "g")
    assert "curves" not in asked[0]  # status reads no curve: their view is not made
    assert got.counts == {"full": {"completed": 2, "missing": 1}} and got.running == 0
    assert not [q for q in seen if q in ("SELECT run_id FROM manifest", "SELECT run_id FROM runs")]
    lock = paths.run_lock_path(tmp_path, "g", runs[2].run_id)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with try_locked(lock) as held:
        assert held and status.grid_status(tmp_path, "g").running == 1


def _store(root, runs_twice: int):
    """A grid ``g`` of 12 runs with rows as per-run files, and a compacted part; the first
    ``runs_twice`` runs written again after the compaction (attempt 2, another value)."""
    from harness.analysis.testing import make_run, write_run
    from harness.store.compact import compact

    runs = [make_run(grid="g", optimizer="sgd", lr=0.1 * (i + 1), seed=1) for i in range(12)]
    for i, run in enumerate(runs[:8]):
        write_run(root, run, val_ppl=10.0 + i)
    compact(root, "g")
    for i, run in enumerate(runs[8:]):
        write_run(root, run, val_ppl=20.0 + i)
    for run in runs[:runs_twice]:
        write_run(root, run, val_ppl=99.0)
    return runs


def _old_view(root, grid: str):
    """The ``runs`` view as it was made before (the files read by every query, the newest-row
    pass always): the reference the connection's view must equal."""
    from harness.store.db import _paths_sql
    from harness.store.layout import grid_files

    files = grid_files(root, grid).all_rows
    return newest_rows_sql(f"read_parquet({_paths_sql(files)}, union_by_name = true)")


@pytest.mark.parametrize("runs_twice", [0, 3])
def test_the_runs_view_reads_each_per_run_file_once_and_shows_what_it_showed(tmp_path, runs_twice):
    """A query over ``runs`` read every per-run row file again (1 to 3 ms of CPU a file for
    its footer and columns: 0.3 to 0.8 s per query with 255 of them at 99,000 runs): they are
    read once per connection, so a query after they are gone still answers. Where no run has
    two rows, the view is the rows as they are (no pass picking each run's newest row); where
    some has, that pass. Either way the view shows what the files' view shows: every column,
    in order, with its type, and the newest row of each run."""
    from harness.store.db import connect

    _store(tmp_path, runs_twice)
    con = connect(tmp_path, "g")
    ((view,),) = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'runs'").fetchall()
    assert ("row_number" in view) == bool(runs_twice)
    old = f"SELECT * FROM ({_old_view(tmp_path, 'g')}) ORDER BY run_id"
    want = duckdb.connect().sql(old).to_arrow_table()
    for p in paths.runs_dir(tmp_path, "g").glob("*.parquet"):
        p.rename(p.with_suffix(".gone"))  # read at connect: no query reads them again
    got = con.sql("SELECT * FROM runs ORDER BY run_id").to_arrow_table()
    assert got.schema == want.schema
    assert got.equals(want)
    assert got.num_rows == 12
    newest = dict(con.execute("SELECT run_id, val_ppl FROM runs").fetchall())
    assert sorted(newest.values()).count(99.0) == runs_twice
