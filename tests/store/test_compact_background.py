"""No writer waits for a compaction (issue 41: the row that triggered one stalled its worker 4 to
6 s of CPU): the writer hands the grid's compaction lock to a process of its own and returns;
that process compacts, and no second one starts while it does."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from harness.core import paths
from harness.core.files import try_locked
from harness.core.result import RunResult
from harness.store import auto, compact, layout
from harness.store.db import connect
from harness.store.spill import write_or_spill
from tests.runs import tiny_run

GRID = "bg"


def _result(i: int) -> RunResult:
    curve = [{"step": 2, "tokens": 2, "train_loss": 4.0, "lr": 1e-3, "elapsed_s": 0.1}]
    return RunResult(status="completed", steps_done=2, curve=curve, metrics={"val_loss": 1.0 + i})


def _write(root: Path, n: int) -> None:
    for i in range(n):
        run = tiny_run(root / "data", grid=GRID, lr=1e-4 * (i + 1))
        write_or_spill(root, run, _result(i), {})


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Compactions made in this (the writer's) process."""
    calls: list[int] = []
    real = compact.compact

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(compact, "compact", counting)
    monkeypatch.setattr(auto, "AUTO_COMPACT_FILES", 4)
    return calls


def test_the_writer_of_the_row_that_calls_for_a_compaction_does_not_make_it(tmp_path, in_process):
    _write(tmp_path, 4)
    assert in_process == []  # the writer returned without compacting
    deadline = time.monotonic() + 120  # a loaded machine: the child imports DuckDB first
    gen = layout.current_generation(tmp_path, GRID)
    while (gen is None or gen.completed_at is None) and time.monotonic() < deadline:
        time.sleep(0.2)  # complete once its covered list is written, after its parts
        gen = layout.current_generation(tmp_path, GRID)
    assert gen is not None  # the background process compacted the 4 rows
    assert len(gen.covered) >= 4
    assert connect(tmp_path).execute("SELECT count(*) FROM runs").fetchone() == (4,)


def test_no_process_starts_while_the_grid_is_being_compacted(tmp_path, in_process, monkeypatch):
    started: list[list[str]] = []

    class Started:
        def __init__(self, args, **kwargs):
            started.append(args)

        def poll(self) -> int:
            return 0

    monkeypatch.setattr(subprocess, "Popen", Started)
    lock = paths.compact_dir(tmp_path, GRID) / ".lock"
    with try_locked(lock, wait_s=0.0) as held:
        assert held
        _write(tmp_path, 5)
    assert started == [] and in_process == []
    _write(tmp_path, 1)  # the lock is free: the next writer hands a compaction over
    assert len(started) == 1 and in_process == []


def test_where_no_process_can_start_the_writer_compacts(tmp_path, in_process, monkeypatch):
    def refuse(*a, **k):
        raise OSError("no processes left")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    _write(tmp_path, 4)
    assert in_process == [1]
    assert layout.current_generation(tmp_path, GRID) is not None
