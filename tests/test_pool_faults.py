"""The second round of fault injection (issue 20): breaks B1, B2, B3, B7 and B13, each with real
processes and files. Each test failed on the code before issue 20 (see its docstring)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from harness.core import paths
from harness.launch.slurm.records import records_dir
from harness.store.manifest import write_manifest
from tests.local_submits import REPO, grid_file
from tests.runs import tiny_run


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
