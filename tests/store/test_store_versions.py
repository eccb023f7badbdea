"""A read never sees a half-replaced file and a failed read never becomes a result (issue 28,
item 4): rows and curves are written once under names of their own, readers take the newest,
compaction leaves readers their files, and reconcile never writes ``failed`` over a result."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.core import paths
from harness.core.result import RunResult
from harness.launch.slurm import reconcile as rec
from harness.launch.slurm.records import Submission, write_submission
from harness.store import layout
from harness.store.compact import compact
from harness.store.db import connect, newest_values, runs_with_result
from harness.store.manifest import write_manifest
from harness.store.rows import next_attempt, row_files, row_marks, write_result
from tests.runs import tiny_run

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent


def _all_rows(root: Path, grid: str) -> pa.Table:
    """Every row of every file the grid holds (per-run and consolidated): what was ever kept."""
    files = [*layout.loose(paths.runs_dir(root, grid))]
    files += paths.generations(root, grid, "runs")
    tables = [pq.read_table(p, columns=["run_id", "status", "attempt"]) for p in files]
    return pa.concat_tables(tables)


@pytest.mark.slow
def test_readers_see_old_or_new_versions_while_a_writer_adds_them_and_compacts(tmp_path):
    """Real processes: one writer adds a newer attempt of 12 runs six times over and compacts
    every 7 writes; two readers connect and query in a loop meanwhile. No reader meets an error
    or a wrong answer, the readers saw the versions change under them (the fault landed), and
    every version written is still on disk."""
    root = tmp_path / "results"
    n, rounds = 12, 6
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(TESTS)])}
    script = str(TESTS / "store_load.py")
    writer = subprocess.Popen(
        [sys.executable, script, "write", str(root), str(n), str(rounds)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while not (root / "round-1").exists():
        assert writer.poll() is None, writer.communicate()[1]
        assert time.monotonic() < deadline, "the writer's first round"
        time.sleep(0.1)
    outs = [tmp_path / f"reader-{i}.json" for i in range(2)]
    readers = [
        subprocess.Popen(
            [sys.executable, script, "read", str(root), str(n), str(out)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for out in outs
    ]
    _, err = writer.communicate(timeout=600)
    assert writer.returncode == 0, err
    (root / "stop").touch()
    for r in readers:
        _, err = r.communicate(timeout=300)
        assert r.returncode == 0, err
        assert "Traceback" not in err, err
    found = [json.loads(out.read_text()) for out in outs]

    for f in found:
        assert f["errors"] == [], f["errors"][:3]
        assert f["queries"] >= 2, f
    seen = set().union(*(f["seen"] for f in found))
    assert len(seen) >= 2, seen  # the readers read while versions were added: the fault landed
    kept = _all_rows(root, "load").to_pylist()
    versions = {(r["run_id"], r["attempt"]) for r in kept}
    assert len(versions) == n * (rounds + 1)  # every version written is still on disk
    assert {r["status"] for r in kept} == {"completed"}
    assert {v[0] for v in newest_values(root, "load", ["steps_done"]).values()} == {rounds + 1}


def _result(status: str = "completed", points: int = 3) -> RunResult:
    curve = [
        {
            "step": 2 * (i + 1),
            "tokens": 512,
            "train_loss": 4.0,
            "lr": 1e-3,
            "val_loss": None,
            "elapsed_s": 0.1,
        }
        for i in range(points)
    ]
    ok = status == "completed"
    return RunResult(
        status=status,
        steps_done=2 * points,
        curve=curve if ok else [],
        metrics={"val_loss": 3.0} if ok else {},
    )


def test_a_rewrite_sits_beside_the_row_it_supersedes(tmp_path):
    run = tiny_run(tmp_path / "data", grid="v")
    first = write_result(tmp_path, run, _result(), {"job_id": "1"})
    again = write_result(tmp_path, run, _result(points=5), {"job_id": "2"})

    assert first != again and first.exists() and again.exists()  # nothing replaced in place
    assert [p.name for p in row_files(tmp_path, "v", run.run_id)] == [
        f"{run.run_id}.000001.parquet",
        f"{run.run_id}.000002.parquet",
    ]
    con = connect(tmp_path)
    assert con.execute("SELECT job_id, attempt FROM runs").fetchall() == [("2", 2)]
    assert con.execute("SELECT count(*) FROM curves").fetchone() == (5,)  # the newest curve
    assert (
        row_marks(tmp_path, "v") == {run.run_id: 2} and next_attempt(tmp_path, "v", run.run_id) == 3
    )


def test_a_writer_that_loses_the_race_for_an_attempt_takes_the_next(tmp_path):
    run = tiny_run(tmp_path / "data", grid="v")
    write_result(tmp_path, run, _result(), {"attempt": 1})
    path = write_result(tmp_path, run, _result(status="failed"), {"attempt": 1})  # same attempt
    assert path.name == f"{run.run_id}.000002.parquet"
    assert pq.read_table(path).column("attempt").to_pylist() == [2]
    assert len(row_files(tmp_path, "v", run.run_id)) == 2


def test_files_an_earlier_harness_wrote_stay_readable_beside_new_versions(tmp_path):
    """The old layout: ``runs/<id>.parquet`` and ``curves/<id>.parquet`` replaced in place, and
    consolidated generations without covered lists (a compaction stopped before removing)."""
    grid = "old"
    runs = [tiny_run(tmp_path / "data", grid=grid, lr=1e-3 * (i + 1)) for i in range(3)]
    for run in runs:
        write_result(tmp_path, run, _result(), {"attempt": None})
    for folder in (paths.runs_dir(tmp_path, grid), paths.curves_dir(tmp_path, grid)):
        for p in folder.glob("*.000001.parquet"):  # as an earlier harness named them
            p.rename(p.with_name(p.name.replace(".000001", "")))
    legacy_row = paths.run_path(tmp_path, grid, runs[0].run_id, paths.LEGACY_VERSION)
    assert legacy_row.exists()
    # An earlier harness's compaction of runs 0 and 1, stopped before it removed their files.
    gen = paths.compact_dir(tmp_path, grid)
    gen.mkdir()
    for kind, folder in (("runs", paths.runs_dir), ("curves", paths.curves_dir)):
        tables = [pq.read_table(folder(tmp_path, grid) / f"{r.run_id}.parquet") for r in runs[:2]]
        pq.write_table(pa.concat_tables(tables), gen / f"{kind}-000001.parquet")
    before = connect(tmp_path).execute("SELECT count(*) FROM runs").fetchone()
    points = connect(tmp_path).execute("SELECT count(*) FROM curves").fetchone()
    assert (before, points) == ((3,), (9,))
    assert next_attempt(tmp_path, grid, runs[0].run_id) == 2

    write_result(tmp_path, runs[0], _result(points=4), {})  # a retry beside the old file

    assert legacy_row.exists()
    con = connect(tmp_path)
    assert con.execute("SELECT count(*), max(attempt) FROM runs").fetchone() == (3, 2)
    assert con.execute("SELECT count(*) FROM curves").fetchone() == (3 + 3 + 4,)
    report = compact(tmp_path, grid)
    assert report is not None and report.generation == 2
    con = connect(tmp_path)
    assert con.execute("SELECT count(*), max(attempt) FROM runs").fetchone() == (3, 2)
    assert con.execute("SELECT count(*) FROM curves").fetchone() == (3 + 3 + 4,)
    assert sorted(_all_rows(tmp_path, grid).column("attempt").to_pylist()).count(2) >= 1


def test_compaction_leaves_readers_their_files_for_the_grace_period(tmp_path):
    runs = [tiny_run(tmp_path / "data", grid="g", lr=1e-3 * (i + 1)) for i in range(4)]
    for run in runs:
        write_result(tmp_path, run, _result(), {})
    con = connect(tmp_path)  # lists the per-run files
    loose = layout.loose(paths.runs_dir(tmp_path, "g"))

    compact(tmp_path, "g")

    assert all(p.exists() for p in loose)  # covered, kept: a reader may have listed them
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (4,)  # the old listing works
    fresh = layout.grid_files(tmp_path, "g")
    assert fresh.rows == () and fresh.curves == ()  # new readers read the generation only
    assert connect(tmp_path).execute("SELECT count(*) FROM curves").fetchone() == (12,)
    assert layout.due(tmp_path, "g") == []
    later = time.time() + layout.GRACE_S + 1
    assert layout.remove_due(tmp_path, "g", now=later) == 8  # 4 rows, 4 curves
    assert not any(p.exists() for p in loose)
    assert connect(tmp_path).execute("SELECT count(*) FROM curves").fetchone() == (12,)


# --- reconcile ----------------------------------------------------------------------------------


def _task_died(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: str = "FAILED"):
    """Three runs packed in SLURM task 9_0, which ended ``state``; their manifest."""
    runs = [tiny_run(tmp_path / "data", grid="r", lr=1e-3 * (i + 1)) for i in range(3)]
    write_manifest(tmp_path, "r", runs)
    now = dt.datetime.now(dt.UTC).isoformat()
    sub = Submission("9", True, (tuple(r.run_id for r in runs),), now, "slurm", str(tmp_path))
    write_submission(tmp_path, "r", sub)
    monkeypatch.setattr(rec, "active_tasks", lambda jobs: {})
    monkeypatch.setattr(rec, "final_states", lambda jobs: {"9_0": (state, "1:0")})
    return [r.run_id for r in runs], runs


def test_reconcile_never_writes_failed_over_a_run_that_has_or_had_a_result(tmp_path, monkeypatch):
    ids, runs = _task_died(tmp_path, monkeypatch)
    write_result(tmp_path, runs[0], _result(), {"job_id": "3"})  # done by another job
    write_result(tmp_path, runs[1], _result(), {"job_id": "4"})  # had a result ...
    write_result(tmp_path, runs[1], _result("failed"), {"job_id": "5"})  # ... then a retry failed

    written = rec.reconcile(tmp_path, "r")

    assert written == {ids[2]: "failed"}  # the run the task was on when it died
    statuses = {r: v[0] for r, v in newest_values(tmp_path, "r", ["status"]).items()}
    assert statuses == {ids[0]: "completed", ids[1]: "failed", ids[2]: "failed"}
    assert runs_with_result(tmp_path, "r") == {ids[0], ids[1]}
    assert len(row_files(tmp_path, "r", ids[0])) == 1  # no row added over the result


def test_a_task_that_died_before_training_a_run_leaves_it_missing(tmp_path, monkeypatch):
    ids, runs = _task_died(tmp_path, monkeypatch, state="TIMEOUT")
    write_result(tmp_path, runs[0], _result(), {"job_id": "9_0"})  # the task's first run

    written = rec.reconcile(tmp_path, "r")

    assert written == {ids[1]: "timeout"}  # the second was being trained; the third never began
    assert set(newest_values(tmp_path, "r", ["status"])) == {ids[0], ids[1]}


def test_a_run_the_task_was_training_in_parallel_is_recorded_too(tmp_path, monkeypatch):
    ids, _ = _task_died(tmp_path, monkeypatch, state="OUT_OF_MEMORY")
    live = paths.live_path(tmp_path, "r", ids[2])
    live.parent.mkdir(parents=True)
    live.write_text('{"step": 2}\n')  # the third run had logged a point: it was training

    assert rec.reconcile(tmp_path, "r") == {ids[0]: "oom", ids[2]: "oom"}


def test_a_file_system_without_hard_links_still_takes_rows(tmp_path, monkeypatch):
    import errno

    from harness.store import rows

    def no_links(src: object, dst: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(rows.os, "link", no_links)
    run = tiny_run(tmp_path / "data", grid="v")
    write_result(tmp_path, run, _result(), {"attempt": 1})
    path = write_result(tmp_path, run, _result(status="failed"), {"attempt": 1})
    assert path.name == f"{run.run_id}.000002.parquet"
    assert [p.name for p in paths.curves_dir(tmp_path, "v").iterdir()] != []
    assert row_marks(tmp_path, "v") == {run.run_id: 2}
