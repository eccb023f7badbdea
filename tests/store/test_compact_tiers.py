"""Compaction by itself merges by size tiers, so a row's cost does not grow with the store
(issue 41, item 1): new rows become a part of their own, parts of one tier merge into one of the
next, readers see every row and each run's newest curve once, and a writer finds its run's
files by name."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pytest

from harness.core import paths
from harness.core.config import RunConfig
from harness.core.result import RunResult
from harness.store import auto, compact, layout, tiers
from harness.store.db import connect
from harness.store.layout import write_covered
from harness.store.rows import next_attempt, row_mark, write_result
from harness.store.spill import write_or_spill
from tests.runs import tiny_run

GRID = "t"


@pytest.fixture(autouse=True)
def small_tiers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiers of a few rows (the store's are hundreds), covered files removed at once."""
    monkeypatch.setattr(auto, "AUTO_COMPACT_FILES", 4)
    monkeypatch.setattr(tiers, "TIER_ROWS", 4)
    monkeypatch.setattr(tiers, "FANOUT", 3)
    monkeypatch.setattr(layout, "GRACE_S", 0.0)
    monkeypatch.setattr(auto, "BACKGROUND", False)  # the tiers above hold in this process only


def _result(points: int, start: float = 5.0) -> RunResult:
    curve = [
        {"step": 2 * i + 2, "tokens": 2, "train_loss": start - i, "lr": 1e-3, "elapsed_s": 0.1}
        for i in range(points)
    ]
    return RunResult(status="completed", steps_done=2, curve=curve, metrics={"val_loss": start})


def _runs(root: Path, n: int) -> list[RunConfig]:
    return [tiny_run(root / "data", grid=GRID, lr=1e-4 * (i + 1)) for i in range(n)]


def _count_rewrites(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rows each compaction writes (what it costs), recorded as they happen."""
    written: list[int] = []
    real = compact.write_generation

    def counting(snap: compact.Snapshot) -> Any:
        out = real(snap)
        written.append(out[0])
        return out

    monkeypatch.setattr(compact, "write_generation", counting)
    return written


def test_writers_rewrite_each_row_a_few_times_not_once_per_compaction(tmp_path, monkeypatch):
    written = _count_rewrites(monkeypatch)
    n = 60
    for i, run in enumerate(_runs(tmp_path, n)):
        write_or_spill(tmp_path, run, _result(2, 1.0 + i), {})

    # Compacting the whole store each time rewrites 4 + 8 + ... + 60 = 480 rows (n^2 / 8);
    # by tiers (3 parts of one tier merge) each row is rewritten about log_3(n / 4) + 1 times.
    assert len(written) == n // 4
    assert sum(written) <= 3.5 * n, written
    gen = layout.current_generation(tmp_path, GRID)
    assert gen is not None and 1 < len(gen.parts) <= 2 * (tiers.FANOUT - 1)
    con = connect(tmp_path)
    assert con.execute("SELECT count(*), sum(val_loss) FROM runs").fetchone() == (
        n,
        sum(1.0 + i for i in range(n)),
    )
    assert con.execute("SELECT count(*) FROM curves").fetchone() == (2 * n,)


def test_a_retried_run_shows_its_newest_curve_once_across_parts(tmp_path):
    runs = _runs(tmp_path, 5)
    for run in runs:
        write_result(tmp_path, run, _result(3), {})
    compact.compact(tmp_path, GRID)  # part 1 holds every run's first curve
    later = dt.datetime.now(dt.UTC) + dt.timedelta(1)
    write_result(tmp_path, runs[0], _result(5, 9.0), {"created_at": later})  # a retry
    report = compact.compact(tmp_path, GRID, tiered=True)

    assert report is not None and report.parts == 2  # part 1 kept as it is
    con = connect(tmp_path)
    steps = con.execute(
        f"SELECT step FROM curves WHERE run_id = '{runs[0].run_id}' ORDER BY step"
    ).fetchall()
    assert [s for (s,) in steps] == [2, 4, 6, 8, 10]  # the retry's curve, not both
    assert con.execute("SELECT count(*) FROM curves").fetchone() == (4 * 3 + 5,)
    sql = f"SELECT val_loss FROM runs WHERE run_id = '{runs[0].run_id}'"
    assert con.execute(sql).fetchall() == [(9.0,)]

    full = compact.compact(tmp_path, GRID)  # harness compact: everything into one part
    assert full is not None and full.parts == 1
    again = connect(tmp_path)
    assert again.execute("SELECT count(*) FROM curves").fetchone() == (4 * 3 + 5,)
    assert again.execute(sql).fetchall() == [(9.0,)]


def test_a_generation_an_earlier_version_wrote_gains_parts(tmp_path):
    """A covered list without parts (today's store before this change) is one part: new rows go
    beside it, and the views show what they showed."""
    runs = _runs(tmp_path, 6)
    for run in runs[:4]:
        write_result(tmp_path, run, _result(2), {})
    snap = compact.snapshot(tmp_path, GRID)
    compact.write_generation(snap)
    write_covered(tmp_path, GRID, snap.generation, list(snap.covered))  # no parts, no count
    for run in runs[4:]:
        write_result(tmp_path, run, _result(2), {})
    before = connect(tmp_path).execute("SELECT count(*) FROM curves").fetchone()

    report = compact.compact(tmp_path, GRID, tiered=True)

    assert report is not None and report.parts == 2
    assert connect(tmp_path).execute("SELECT count(*) FROM curves").fetchone() == before == (12,)
    assert connect(tmp_path).execute("SELECT count(*) FROM runs").fetchone() == (6,)


def test_a_writer_finds_its_runs_files_by_name_not_by_listing(tmp_path, monkeypatch):
    runs = _runs(tmp_path, 9)
    for run in runs[:8]:
        write_or_spill(tmp_path, run, _result(2), {})  # two compactions: a count is recorded
    listed: list[str] = []
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    write_or_spill(tmp_path, runs[8], _result(2), {})

    runs_dir = str(paths.runs_dir(tmp_path, GRID))
    assert runs_dir not in listed, listed
    assert next_attempt(tmp_path, GRID, runs[8].run_id) == 2
    assert runs_dir not in listed, listed


def test_row_mark_sees_consolidated_loose_and_gapped_attempts(tmp_path):
    run = _runs(tmp_path, 1)[0]
    for _ in range(3):
        write_result(tmp_path, run, _result(2), {})
    compact.compact(tmp_path, GRID)  # attempts 1-3 consolidated, their files removed
    assert not list(paths.runs_dir(tmp_path, GRID).glob("*.parquet"))
    assert row_mark(tmp_path, GRID, run.run_id) == 3
    # attempt 4's curve written, its row never (a crash): the retry takes attempt 5
    paths.curve_path(tmp_path, GRID, run.run_id, paths.version_name(4)).write_bytes(b"")
    write_result(tmp_path, run, _result(2), {})
    assert row_mark(tmp_path, GRID, run.run_id) == 5
    paths.curve_path(tmp_path, GRID, run.run_id, paths.version_name(4)).unlink()  # compacted
    assert row_mark(tmp_path, GRID, run.run_id) == 5
    assert row_mark(tmp_path, GRID, "0" * 16) is None


def test_a_lost_arrivals_count_falls_back_to_listing(tmp_path):
    """A count below the one the generation recorded (the file removed or truncated) would wait
    for that many rows; the writer counts by listing instead."""
    runs = _runs(tmp_path, 12)
    for run in runs[:8]:
        write_or_spill(tmp_path, run, _result(2), {})
    before = layout.current_generation(tmp_path, GRID)
    assert before is not None and before.arrivals == 8
    paths.arrivals_path(tmp_path, GRID).unlink()
    for run in runs[8:]:
        write_or_spill(tmp_path, run, _result(2), {})
    after = layout.current_generation(tmp_path, GRID)
    assert after is not None and after.number > before.number
    assert connect(tmp_path).execute("SELECT count(*) FROM runs").fetchone() == (12,)
