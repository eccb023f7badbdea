"""Helpers for tests that launch harness runs on the local SLURM test cluster: launcher profiles,
grid files, the CLI, and polling for rows (jobs run asynchronously)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import click.testing
import pyarrow.parquet as pq
import yaml
from click.testing import CliRunner

from harness.cli import main
from harness.core import paths
from harness.launch.slurm.records import read_submissions
from harness.launch.slurm.scheduler import SchedulerError, cancel
from harness.store.rows import newest_curve_file

#: The test cluster's profile (``launchers/slurm-test.yaml``) as a dict; tests derive variants.
TEST_PROFILE: dict[str, Any] = yaml.safe_load(
    (Path(__file__).resolve().parent.parent / "launchers" / "slurm-test.yaml").read_text()
)

#: A tiny run on the test data (6 steps of 8 x 32 tokens); tests override ``tokens`` for length.
TINY_BASE: dict[str, Any] = {
    "model": "tiny",
    "dataset": "classics-bpe8k",
    "optimizer": "adamw",
    "lr": 3.0e-3,
    "seq_len": 32,
    "batch_size": 8,
    "tokens": 8 * 32 * 6,
    "eval_tokens": 1024,
    "log_every": 10,
}


FAST_WAIT = {"HARNESS_WAIT_POLL_S": "1"}
"""The environment of the harness commands tests run: ``--wait`` looks every second, not every 5 s
(a job on the test cluster ends in seconds; every wait would overshoot by 2.5 s on average)."""


def steps(n: int) -> int:
    """``tokens`` of a tiny run of ``n`` steps."""
    return 8 * 32 * n


def write_profile(folder: Path, name: str, **overrides: Any) -> str:
    """Write ``folder/name.yaml``: the test profile with ``overrides``; returns ``name``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(yaml.safe_dump({**TEST_PROFILE, **overrides}))
    return name


def write_grid(folder: Path, name: str, launcher: str, seeds: int = 1, **spec: Any) -> Path:
    """A grid file: ``TINY_BASE`` updated by ``spec['base']``, axes ``spec['grid']``."""
    doc = {
        "name": name,
        "launcher": launcher,
        "base": {**TINY_BASE, **spec.get("base", {})},
        "seeds": seeds,
    }
    if spec.get("grid"):
        doc["grid"] = spec["grid"]
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def invoke(*args: str) -> click.testing.Result:
    """Run the ``harness`` CLI in-process (with :data:`FAST_WAIT`)."""
    return CliRunner(env=FAST_WAIT).invoke(main, [str(a) for a in args], catch_exceptions=False)


def rows(root: Path, grid: str) -> dict[str, dict[str, Any]]:
    """run_id -> newest result row of every run of ``grid`` with a per-run row file."""
    folder = paths.runs_dir(root, grid)
    out = {}
    for p in sorted(folder.glob("*.parquet")) if folder.is_dir() else ():  # oldest first
        row = pq.read_table(p).to_pylist()[0]
        out[row["run_id"]] = row
    return out


def curve_losses(root: Path, grid: str, run_id: str) -> list[float]:
    """The training losses of a run's newest loss curve."""
    path = newest_curve_file(root, grid, run_id)
    assert path is not None, f"no curve of run {run_id}"
    return pq.read_table(path).column("train_loss").to_pylist()


def task_log(root: Path, grid: str, task: str) -> str:
    """stdout + stderr of a SLURM task (``<job>_<index>`` or ``<job>``) of ``grid``."""
    job = task.split("_")[0]
    folder = paths.submissions_dir(root, grid) / "slurm" / job
    return "".join(
        (folder / f"{task}_0_log.{ext}").read_text()
        for ext in ("out", "err")
        if (folder / f"{task}_0_log.{ext}").exists()
    )


def cancel_leftovers(root: Path) -> None:
    """scancel every job recorded under ``root`` (a failed test leaves nothing running)."""
    grids = [d.name for d in root.iterdir() if d.is_dir()] if root.is_dir() else []
    jobs = {s.job_id for g in grids for s in read_submissions(root, g)}
    with contextlib.suppress(SchedulerError):
        cancel(jobs)
