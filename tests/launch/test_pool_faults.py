"""The second round of fault injection (issue 20): breaks B1, B2, B3, B7 and B13, each with real
processes and files. Each test failed on the code before issue 20 (see its docstring)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.core import paths
from harness.core.files import is_locked
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.store.db import newest_values
from harness.store.manifest import write_manifest
from tests.local_submits import (
    REPO,
    alive,
    grid_file,
    logged_steps,
    run_processes,
    start_submit,
)
from tests.polling import wait_until
from tests.runs import tiny_run

pytestmark = pytest.mark.slow  # each test runs submit --local as real processes and breaks them


def _run_ids(grid: Path, data: Path) -> list[str]:
    return [r.run_id for r in load_grid(grid, vocab=vocab_lookup(data), local=True).runs]


def _harness(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``harness ARGV`` as a process of its own."""
    code = "from harness.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        timeout=300,
    )


def test_b7_a_record_of_valid_json_with_a_wrong_type_is_moved_aside(tmp_path, prepared_data):
    """B7: ``"submitted_at": null`` made ``status`` and every ``submit`` fail with a TypeError
    (sorting the records); now the record is moved aside with a one-line warning."""
    root = tmp_path / "results"
    runs = [tiny_run(prepared_data, grid="rec", seed=s) for s in range(2)]
    write_manifest(root, "rec", runs)
    good = {
        "job_id": "7",
        "array": True,
        "submitted_at": "2026-01-01T00:00:00+00:00",
        "launcher": "slurm-test",
        "log_dir": "/x",
        "tasks": [[runs[0].run_id]],
    }
    folder = paths.submission_records_dir(root, "rec")
    folder.mkdir(parents=True)
    (folder / "7.json").write_text(json.dumps(good))
    (folder / "8.json").write_text(json.dumps({**good, "job_id": "8", "submitted_at": None}))

    status = _harness("status", "rec", "--results", str(root))

    assert status.returncode == 0, status.stderr
    assert "Traceback" not in status.stderr and "TypeError" not in status.stdout
    warning = [ln for ln in status.stderr.splitlines() if "8.json" in ln]
    assert len(warning) == 1 and "submitted_at" in warning[0], status.stderr
    assert (paths.quarantine_dir(root, "rec") / "submissions" / "records" / "8.json").exists()
    assert (folder / "7.json").exists()
    grid = grid_file(tmp_path, "rec", [0, 1], 6)
    (folder / "9.json").write_text(json.dumps({**good, "job_id": "9", "array": "yes"}))
    submit = _harness(
        "submit", str(grid), "--local", "--results", str(root), "--data", str(prepared_data)
    )
    assert submit.returncode == 0, submit.stderr
    assert "9.json" in submit.stderr and "array: expected bool" in submit.stderr


def test_b13_a_run_killed_by_the_kernel_keeps_its_steps_and_curve(tmp_path, prepared_data):
    """B13: a run process killed with SIGKILL (the OOM killer's signal) between checkpoints got
    a ``failed`` row with ``steps_done`` 0 and no curve, though its log showed its steps; now
    its row keeps the steps and curve points of its progress file."""
    grid = grid_file(tmp_path, "oom", [0], 2000)
    root = tmp_path / "results"
    (run_id,) = _run_ids(grid, prepared_data)
    slow = {"HARNESS_CHECKPOINT_EVERY_S": "3600"}  # no checkpoint before the kill
    submit = start_submit(grid, root, prepared_data, tmp_path / "spill", env=slow)
    wait_until(lambda: len(logged_steps(root, "oom", run_id)) >= 10, 120, "20 steps logged")
    (victim,) = run_processes(submit.pid)
    os.kill(victim, signal.SIGKILL)
    _, err = submit.communicate(timeout=120)
    reached = logged_steps(root, "oom", run_id)[-1]

    assert submit.returncode == 1, err  # a failed run: exit 1
    assert not paths.checkpoint_path(root, "oom", run_id).exists()
    ((status, steps, error),) = newest_values(
        root, "oom", ["status", "steps_done", "error"]
    ).values()
    assert status == "failed" and "SIGKILL" in error
    # the progress file is written before each log line: the row may be one logging interval
    # (2 steps) past the log, never short of what the log showed
    assert 20 <= reached <= steps <= reached + 2
    curve = pq.read_table(paths.curve_path(root, "oom", run_id, "000001")).to_pylist()
    assert [p["step"] for p in curve] == list(range(2, steps + 1, 2))


STEPS = 40


def _training(root: Path, grid: str, ids: list[str]) -> bool:
    return all(logged_steps(root, grid, r) for r in ids)


def _each_step_once(root: Path, grid: str, ids: list[str]) -> None:
    """Every run completed, its log's steps never went back: trained once (resumed at most)."""
    rows = newest_values(root, grid, ["status", "steps_done"])
    assert rows == dict.fromkeys(ids, ("completed", STEPS)), rows
    for r in ids:
        steps = logged_steps(root, grid, r)
        assert steps == sorted(set(steps)) and steps[-1] == STEPS, steps


def test_b1_a_second_ctrl_c_kills_runs_without_recording_them_failed(tmp_path, prepared_data):
    """B1: a second Ctrl-C killed each run again on every loop pass ("4 runs killed" for 2) and
    recorded the killed runs as ``failed``, so the printed resume command skipped them. Now each
    is killed once, counted once, gets no row, and the resume command trains both."""
    grid = grid_file(tmp_path, "twice", [0, 1], STEPS)
    ids, root = _run_ids(grid, prepared_data), tmp_path / "results"
    submit = start_submit(grid, root, prepared_data, tmp_path / "spill")
    wait_until(lambda: _training(root, "twice", ids), 120, "both runs training")
    runs = run_processes(submit.pid)
    for p in runs:  # runs slow to checkpoint (a big model): they are still at it when...
        os.kill(p, signal.SIGSTOP)
    os.killpg(submit.pid, signal.SIGINT)  # ... Ctrl-C, and Ctrl-C again, kill them
    assert submit.stderr is not None
    said = ""  # the second Ctrl-C once the first was taken (two at once may arrive as one)
    while "stopping: " not in said and (line := submit.stderr.readline()):
        said += line
    os.killpg(submit.pid, signal.SIGINT)
    _, err = submit.communicate(timeout=120)
    err = said + err

    assert submit.returncode == 130, err
    assert wait_until(lambda: not any(alive(p) for p in runs), 10, "run processes gone")
    assert "  2 runs killed before checkpointing" in err and "  0 runs checkpointed" in err, err
    assert err.count("runs killed") == 1
    assert newest_values(root, "twice", ["status"]) == {}  # no failed row hides them
    resume = err.strip().splitlines()[-1]
    assert resume.startswith("resume with: harness submit ")
    again = start_submit(grid, root, prepared_data, tmp_path / "spill")
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0 and "launching 2" in out, out + err
    assert newest_values(root, "twice", ["status"]) == dict.fromkeys(ids, ("completed",))


def test_b2_a_resubmit_after_kill_9_leaves_no_run_missing(tmp_path, prepared_data):
    """B2: after ``kill -9`` of submit while its runs start, an immediate re-submit skipped the
    runs whose orphaned processes still held their run locks, and exited 0 with them missing.
    Now it waits for the locks, then trains them (resumed). The orphans' hold is stretched by a
    ``flock`` of the same locks, as on a loaded machine where they take seconds to stop: held
    until the re-submit has said what it found, so the fault lands however slow its start."""
    grid = grid_file(tmp_path, "orphans", [0, 1], STEPS)
    ids, root = _run_ids(grid, prepared_data), tmp_path / "results"
    first = start_submit(grid, root, prepared_data, tmp_path / "spill")
    locks = [paths.run_lock_path(root, "orphans", r) for r in ids]
    wait_until(lambda: all(is_locked(p) for p in locks), 120, "both run locks held")
    first.kill()  # kill -9 while its runs start
    first.communicate(timeout=30)
    assert first.returncode == -signal.SIGKILL  # the kill landed: submit had not ended
    held = [tmp_path / f"held-{i}" for i in range(len(locks))]
    hold = ["sh", "-c", 'touch "$0"; exec sleep 600']  # until killed
    holders = [
        subprocess.Popen(["flock", str(p), *hold, str(h)], start_new_session=True)
        for p, h in zip(locks, held, strict=True)
    ]
    wait_until(lambda: all(h.exists() for h in held), 120, "the orphans' locks taken over")

    again = start_submit(
        grid, root, prepared_data, tmp_path / "spill", env={"PYTHONUNBUFFERED": "1"}
    )
    assert again.stdout is not None
    said = [again.stdout.readline(), again.stdout.readline()]  # what it planned, what it found
    for h in holders:  # the locks are free: the runs it waits for start
        os.killpg(h.pid, signal.SIGKILL)
        h.wait()
    _, err = again.communicate(timeout=300)

    assert again.returncode == 0, err
    assert "2 runs are being trained by another process now" in said[1], said
    _each_step_once(root, "orphans", ids)


def test_b3_a_run_finishing_while_a_second_submit_decides_is_not_trained_again(
    tmp_path, prepared_data
):
    """B3: a second submit read the finished set, then waited for the manifest lock while the
    first submit's runs finished, then trained them all again. Now the rows are read once, after
    the queue, and the run process checks under its run lock that each run's row is still as
    the submit saw it: the runs another process finished meanwhile are left alone."""
    grid = grid_file(tmp_path, "race", [0, 1], STEPS)
    ids, root = _run_ids(grid, prepared_data), tmp_path / "results"
    first = start_submit(grid, root, prepared_data, tmp_path / "spill")
    wait_until(lambda: _training(root, "race", ids), 120, "both runs training")
    lock = paths.grid_dir(root, "race") / ".manifest.lock"
    holder = subprocess.Popen(["flock", str(lock), "sleep", "600"], start_new_session=True)
    second = start_submit(grid, root, prepared_data, tmp_path / "spill")
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    os.killpg(holder.pid, signal.SIGKILL)  # flock and its sleep: the second submit goes on
    holder.wait()

    out, err = second.communicate(timeout=300)

    assert second.returncode == 0, err
    assert "2 runs left alone: another process finished them meanwhile" in out, out
    _each_step_once(root, "race", ids)
