"""``submit --local`` owns its runs: a signal checkpoints and stops them, a killed submit leaves
none running, and no run is trained twice, even by two submits at once (issue 11, items 2, 3)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.core import paths
from harness.core.files import is_locked
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.store.db import newest_values
from tests.local_submits import (
    SIGNALS,
    alive,
    descendants,
    grid_file,
    logged_steps,
    signal_group,
    start_submit,
)
from tests.polling import wait_until

pytestmark = pytest.mark.slow  # each test runs submit --local as real processes and signals them

STEPS = 40


def _run_ids(grid: Path, data: Path) -> list[str]:
    return [r.run_id for r in load_grid(grid, vocab=vocab_lookup(data), local=True).runs]


def _training(root: Path, name: str, ids: list[str]) -> bool:
    return all(logged_steps(root, name, r) for r in ids)


def _resumed_once(root: Path, name: str, ids: list[str]) -> None:
    """Every run completed, and its log's steps never went back: trained once, resumed."""
    rows = newest_values(root, name, ["status", "steps_done"])
    assert rows == dict.fromkeys(ids, ("completed", STEPS))
    for r in ids:
        steps = logged_steps(root, name, r)
        assert steps == sorted(set(steps)) and steps[-1] == STEPS, steps


def _stop(submit: subprocess.Popen[str], name: str) -> str:
    """Send signal ``name`` as a user would; returns submit's stderr once it exited."""
    if name == "SIGTERM":
        submit.send_signal(signal.SIGTERM)  # kill PID: submit alone
    else:
        signal_group(submit, SIGNALS[name])  # Ctrl-C, a closed terminal: the whole group
    _, err = submit.communicate(timeout=120)
    return err


def _check_stopped(
    submit: subprocess.Popen[str], err: str, name: str, runs: list[int], root: Path, ids: list[str]
) -> None:
    """What a stopped submit must leave: its exit code, one line per outcome, no run process,
    a checkpoint per run, no held run lock."""
    assert submit.returncode == 128 + SIGNALS[name], err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert f"stopped by {name}:" in lines and "  2 runs checkpointed" in err, err
    assert lines[-1].startswith("resume with: harness submit ") and "--local" in lines[-1]
    assert wait_until(lambda: not any(alive(p) for p in runs), 10, "run processes gone")
    assert all(paths.checkpoint_path(root, "own", r).exists() for r in ids)
    assert not any(is_locked(paths.run_lock_path(root, "own", r)) for r in ids)


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_checkpoints_and_stops_every_run(tmp_path, prepared_data, name):
    grid = grid_file(tmp_path, "own", [0, 1], STEPS)
    ids, root = _run_ids(grid, prepared_data), tmp_path / "results"
    submit = start_submit(grid, root, prepared_data, tmp_path / "spill")
    wait_until(lambda: _training(root, "own", ids), 120, "both runs training")
    runs = descendants(submit.pid)
    status = CliRunner().invoke(main, ["status", "own", "--results", str(root)]).output
    assert "running now: 2" in status, status  # not merely "missing"

    err = _stop(submit, name)

    _check_stopped(submit, err, name, runs, root, ids)


def test_ctrl_c_then_kill_9_then_resume_trains_each_step_once(tmp_path, prepared_data):
    grid = grid_file(tmp_path, "own", [0, 1], STEPS)
    ids, root = _run_ids(grid, prepared_data), tmp_path / "results"
    submit = start_submit(grid, root, prepared_data, tmp_path / "spill")
    wait_until(lambda: _training(root, "own", ids), 120, "both runs training")
    runs = descendants(submit.pid)
    _check_stopped(submit, _stop(submit, "SIGINT"), "SIGINT", runs, root, ids)
    reached = {r: logged_steps(root, "own", r)[-1] for r in ids}

    again = start_submit(grid, root, prepared_data, tmp_path / "spill")  # resumes both
    resumed = lambda: all(logged_steps(root, "own", r)[-1] > reached[r] for r in ids)  # noqa: E731
    wait_until(resumed, 120, "both runs training again")
    runs = descendants(again.pid)
    again.kill()  # kill -9: no handler runs; the orphans notice within a step
    again.communicate(timeout=30)
    assert again.returncode == -signal.SIGKILL  # the kill landed: submit had not ended
    assert wait_until(lambda: not any(alive(p) for p in runs), 30, "orphaned runs to stop")

    last = start_submit(grid, root, prepared_data, tmp_path / "spill")
    out, err = last.communicate(timeout=300)
    assert last.returncode == 0, err
    assert "launching 2" in out
    _resumed_once(root, "own", ids)


def test_two_submits_at_once_train_each_run_once(tmp_path, prepared_data):
    # Two versions of one grid, submitted together: seeds [0, 1] and [1, 2] share seed 1.
    first = grid_file(tmp_path, "both", [0, 1], STEPS, file="v1.yaml")
    second = grid_file(tmp_path, "both", [1, 2], STEPS, file="v2.yaml")
    ids = sorted({*_run_ids(first, prepared_data), *_run_ids(second, prepared_data)})
    root = tmp_path / "results"

    submits = [start_submit(g, root, prepared_data, tmp_path / "spill") for g in (first, second)]
    outputs = [s.communicate(timeout=600) for s in submits]

    assert [s.returncode for s in submits] == [0, 0], outputs
    assert len(ids) == 3
    _resumed_once(root, "both", ids)  # each step of each run logged once: trained once
    planned = newest_values(root, "both", ["status"])
    assert sorted(planned) == ids
