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

from harness.core import paths
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.launch.slurm.records import records_dir
from harness.store.db import newest_values
from harness.store.manifest import write_manifest
from tests.local_submits import REPO, grid_file, logged_steps, run_processes, start_submit
from tests.polling import wait_until
from tests.runs import tiny_run


def _run_ids(grid: Path, data: Path) -> list[str]:
    return [r.run_id for r in load_grid(grid, vocab=vocab_lookup(data), local=True).runs]


def _harness(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``harness ARGV`` as a process of its own."""
    code = "from harness.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
                          timeout=300)  # fmt: skip


def test_b7_a_record_of_valid_json_with_a_wrong_type_is_moved_aside(tmp_path, prepared_data):
    """B7: ``"submitted_at": null`` made ``status`` and every ``submit`` fail with a TypeError
    (sorting the records); now the record is moved aside with a one-line warning."""
    root = tmp_path / "results"
    runs = [tiny_run(prepared_data, grid="rec", seed=s) for s in range(2)]
    write_manifest(root, "rec", runs)
    good = {"job_id": "7", "array": True, "submitted_at": "2026-01-01T00:00:00+00:00",
            "launcher": "slurm-test", "log_dir": "/x", "tasks": [[runs[0].run_id]]}  # fmt: skip
    folder = records_dir(root, "rec")
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
    submit = _harness("submit", str(grid), "--local", "--results", str(root), "--data",
                      str(prepared_data))  # fmt: skip
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

    assert submit.returncode == 0, err
    assert not paths.checkpoint_path(root, "oom", run_id).exists()
    ((status, steps, error),) = newest_values(
        root, "oom", ["status", "steps_done", "error"]
    ).values()
    assert status == "failed" and "SIGKILL" in error
    assert 20 <= steps <= reached
    curve = pq.read_table(paths.curves_dir(root, "oom") / f"{run_id}.parquet").to_pylist()
    assert [p["step"] for p in curve] == list(range(2, steps + 1, 2))
