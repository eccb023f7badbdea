"""Lock files and per-run logs do not pile up (issue 28, item 8): ``harness clean`` and every
compaction remove them, never while a run holds its lock."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.core import files, paths
from harness.core.files import is_locked, remove_unheld_lock, try_locked
from harness.core.result import RunResult
from harness.store.compact import compact
from harness.store.rows import write_result
from tests.runs import tiny_run


def _write(root: Path, run, status: str) -> None:  # type: ignore[no-untyped-def]
    write_result(root, run, RunResult(status=status, steps_done=2), {})


def test_clean_removes_unheld_locks_and_the_logs_of_runs_with_a_result(tmp_path):
    runs = [tiny_run(tmp_path / "data", grid="c", lr=1e-3 * (i + 1)) for i in range(3)]
    for run, status in zip(runs, ("completed", "failed", "completed"), strict=True):
        _write(tmp_path, run, status)
        paths.run_lock_path(tmp_path, "c", run.run_id).parent.mkdir(exist_ok=True)
        paths.run_lock_path(tmp_path, "c", run.run_id).touch()
        paths.eval_lock_path(tmp_path, "c", run.run_id).touch()
        log = paths.local_log_path(tmp_path, "c", run.run_id)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("trained\n")
    busy = paths.run_lock_path(tmp_path, "c", runs[2].run_id)

    with try_locked(busy) as held:  # the third run is being trained again
        assert held
        out = CliRunner().invoke(main, ["clean", "c", "--results", str(tmp_path)])
        assert out.exit_code == 0, out.output
        assert "removed 5 lock files, 1 logs of runs with a result" in out.output, out.output
        assert busy.exists() and is_locked(busy)

    left = sorted(p.name for p in paths.locks_dir(tmp_path, "c").iterdir())
    assert left == [busy.name]
    logs = {p.stem for p in paths.local_logs_dir(tmp_path, "c").iterdir()}
    assert logs == {runs[1].run_id, runs[2].run_id}  # a failed run's log, a running run's log
    bad = CliRunner().invoke(main, ["clean", "nope", "--results", str(tmp_path)])
    assert bad.exit_code == 2 and "grids there: c" in bad.output


def test_compaction_removes_the_unheld_locks_of_the_runs_it_consolidates(tmp_path):
    runs = [tiny_run(tmp_path / "data", grid="k", lr=1e-3 * (i + 1)) for i in range(3)]
    for run in runs:
        _write(tmp_path, run, "completed")
        with try_locked(paths.run_lock_path(tmp_path, "k", run.run_id)):
            pass  # trained: its lock file stays behind
    held = paths.run_lock_path(tmp_path, "k", runs[0].run_id)
    with try_locked(held):
        compact(tmp_path, "k")
    assert [p.name for p in paths.locks_dir(tmp_path, "k").iterdir()] == [held.name]


def test_a_lock_file_removed_between_open_and_lock_is_locked_afresh(tmp_path, monkeypatch):
    """A process that opened a run's lock file just before ``clean`` removed it gets the lock on
    the removed file: it must lock the file now at that path instead, or a second process could
    lock a new file and train the run at the same time."""
    path = tmp_path / "locks" / "r.lock"
    path.parent.mkdir()
    path.touch()
    real = fcntl.flock
    removed: list[bool] = []

    def flock(f: object, op: int) -> None:
        if op == fcntl.LOCK_EX | fcntl.LOCK_NB and not removed:
            removed.append(False)
            removed[0] = remove_unheld_lock(path)  # clean, between the open and the lock
        real(f, op)  # type: ignore[arg-type]

    monkeypatch.setattr(files.fcntl, "flock", flock)
    with try_locked(path, wait_s=0) as held:
        assert held and removed == [True]
        monkeypatch.setattr(files.fcntl, "flock", real)
        assert is_locked(path)  # the lock is on the file at the path, which others see
        assert not remove_unheld_lock(path)


@pytest.mark.parametrize("name", ["abc.lock", "abc.eval.lock"])
def test_lock_files_name_their_run(name):
    assert paths.lock_run_id(Path(name)) == "abc"
    assert paths.lock_run_id(Path(".abc.lock.tmp-1-2")) is None
