"""Smaller faults (issue 11, item 9): a YAML alias bomb, stale checkpoint temp files, and rows of
failed, cancelled and timed-out runs that say how far the run got."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.core import paths
from harness.core.errors import MAX_MESSAGE, UserError
from harness.launch.worker.job import run_job, write_status
from harness.store.manifest import write_manifest
from harness.store.rows import read_row
from harness.train.loop import TrainingInterrupted
from tests.runs import spec_for, tiny_run

BOMB = """
name: bomb
base: {model: tiny, optimizer: adamw, seq_len: 32, batch_size: 8, tokens: 1536}
seeds:
  - &a [1, 1, 1, 1, 1, 1, 1, 1, 1]
  - &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
  - &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
  - &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
  - &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
  - &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
  - &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
  - &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
  - [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def test_a_yaml_alias_bomb_is_one_short_line_in_little_memory(tmp_path: Path) -> None:
    grid = tmp_path / "bomb.yaml"
    grid.write_text(textwrap.dedent(BOMB))  # 9**9 = 387 million values once expanded
    code = f"""
        from pathlib import Path
        from click.testing import CliRunner
        from harness.cli import main
        r = CliRunner().invoke(main, ["submit", {str(grid)!r}, "--dry-run", "--launcher", "local"])
        status = Path("/proc/self/status").read_text().splitlines()
        peak_kb = next(ln.split()[1] for ln in status if ln.startswith("VmHWM:"))
        print(r.exit_code, len(r.output), peak_kb)  # VmHWM: this process's peak, since exec
        print(r.output)
    """
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    exit_code, length, max_rss_kb = (int(x) for x in out.splitlines()[0].split())
    assert exit_code == 2 and length < 400, out[:500]
    assert "more than 100,000 values once its YAML aliases" in out
    assert max_rss_kb < 500_000  # the interpreter and its imports; never the expansion


def test_an_error_echoing_a_huge_value_is_cut_keeping_its_end() -> None:
    text = str(UserError("bad seeds " + "x" * 10_000_000 + "; use an int"))
    assert len(text) <= MAX_MESSAGE and text.startswith("bad seeds x")
    assert text.endswith("xx; use an int") and "(10,000,022 characters, cut)" in text


def _manifest(root: Path, data: Path, **overrides) -> str:
    run = tiny_run(data, grid="small", log_every=2, **overrides)
    write_manifest(root, "small", [run])
    return run.run_id


@pytest.mark.slow
def test_a_stale_checkpoint_temp_file_is_removed_when_the_run_starts(tmp_path, prepared_data):
    run_id = _manifest(tmp_path, prepared_data)
    ckpt = paths.checkpoint_path(tmp_path, "small", run_id)
    ckpt.parent.mkdir(parents=True)
    stale = ckpt.with_name(f".{ckpt.name}.tmp-4242-0badc0de")  # a kill during its write
    stale.write_bytes(b"\0" * 1000)
    other = ckpt.with_name(".other.pt.tmp-4242-0badc0de")  # another run's: not ours to remove
    other.write_bytes(b"\0")

    assert run_job(spec_for(tmp_path, "small", prepared_data, threads=1), run_id) == "completed"

    assert not stale.exists() and other.exists()


def _stop_after(steps: int, then: BaseException | None = None):
    """A ``should_stop`` that answers True (or raises ``then``) once ``steps`` steps are done."""
    calls = iter(range(10**6))

    def should_stop() -> bool:
        if next(calls) < steps:
            return False
        if then is not None:
            raise then
        return True

    return should_stop


@pytest.mark.slow
def test_a_failed_run_records_its_steps_and_curve(tmp_path, prepared_data):
    run_id = _manifest(tmp_path, prepared_data, tokens=8 * 32 * 20)
    spec = spec_for(tmp_path, "small", prepared_data, threads=1)

    status = run_job(spec, run_id, should_stop=_stop_after(7, RuntimeError("the controller fell")))

    row = read_row(paths.run_path(tmp_path, "small", run_id, "000001"))
    assert status == row["status"] == "failed" and "the controller fell" in row["error"]
    assert row["steps_done"] == 7 and row["tokens_seen"] == 7 * 8 * 32
    curve = paths.curve_path(tmp_path, "small", run_id, "000001")
    curve = pq.read_table(curve).column("step").to_pylist()
    assert curve == [2, 4, 6]


@pytest.mark.slow
def test_cancelled_and_timed_out_rows_record_their_steps_and_curve(tmp_path, prepared_data):
    run_id = _manifest(tmp_path, prepared_data, tokens=8 * 32 * 20)
    spec = spec_for(tmp_path, "small", prepared_data, threads=1)
    with contextlib.suppress(TrainingInterrupted):  # checkpointed at step 9, as a SLURM signal
        run_job(spec, run_id, should_stop=_stop_after(9))  # or the local time limit stops it
    for attempt, status in enumerate(("cancelled", "timeout"), start=1):
        write_status(tmp_path, "small", run_id, status, f"{status} by the test", "7")

        row = read_row(paths.run_path(tmp_path, "small", run_id, f"{attempt:06d}"))
        assert (row["status"], row["steps_done"], row["job_id"]) == (status, 9, "7")
        path = paths.curve_path(tmp_path, "small", run_id, f"{attempt:06d}")
        assert pq.read_table(path).column("step").to_pylist() == [2, 4, 6, 8]


@pytest.mark.slow
def test_temp_files_of_writers_killed_mid_write_are_removed_by_the_next_submit(tmp_path):
    """A row, curve or manifest writer killed between its temp file and the rename leaves a
    hidden ``.*.tmp-*`` file; the next submit removes those not written to for an hour (a live
    writer's temp file, and every other file, stay)."""
    import os
    import time

    from click.testing import CliRunner

    from harness.cli import main
    from harness.core.files import STALE_TEMP_S
    from tests.local_submits import quadratic_grid_file

    root = tmp_path / "results"
    grid = quadratic_grid_file(tmp_path, "temps", seeds=[0], steps=2, step_s=0.0)
    old = time.time() - STALE_TEMP_S - 60
    stale = [
        paths.runs_dir(root, "temps") / ".abc.parquet.tmp-4242-0badc0de",
        paths.curves_dir(root, "temps") / ".abc.parquet.tmp-4242-0badc0df",
        paths.grid_dir(root, "temps") / ".manifest.parquet.tmp-4243-0badc0de",
    ]
    live = paths.runs_dir(root, "temps") / ".def.parquet.tmp-4244-0badc0de"
    hidden = paths.grid_dir(root, "temps") / ".notes"  # not a temp file: never touched
    for p in [*stale, live, hidden]:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"\0" * 100)
    for p in [*stale, hidden]:
        os.utime(p, (old, old))

    args = ["submit", str(grid), "--local", "--results", str(root), "--data", str(tmp_path)]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    assert [p.exists() for p in stale] == [False, False, False]
    assert live.exists() and hidden.exists()
