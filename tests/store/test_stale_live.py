"""Stored beats stale (issue 44, item 4): a live file left beside a run's row (a result spilled
on a full disk and written back later; a process killed between its row and the file's removal)
hides neither the stored curve nor the row: ``curves`` shows the stored points, ``status`` does
not list the run as stopped, and writing a result (spilled or not) removes the live file."""

from __future__ import annotations

import errno
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.analysis.testing import write_run
from harness.cli import main
from harness.core import paths
from harness.core.provenance import provenance
from harness.core.result import RunResult
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.store import rows as store_rows
from harness.store import spill
from harness.store.db import connect
from harness.store.live import append_point
from harness.store.manifest import write_manifest

GRID = """
name: st
base: {model: tiny, dataset: classics-bpe8k, optimizer: adamw, seq_len: 32, batch_size: 8,
       tokens: 1536, eval_tokens: 2048, log_every: 2, lr: 1.0e-3}
"""


@pytest.fixture
def grid(tmp_path: Path, prepared_data: Path):
    path = tmp_path / "st.yaml"
    path.write_text(textwrap.dedent(GRID))
    runs = load_grid(path, vocab=vocab_lookup(prepared_data)).runs
    root = tmp_path / "results"
    write_manifest(root, "st", runs)
    return root, runs[0]


def _stale_live_file(root: Path, run, points: int) -> Path:
    live = paths.live_path(root, "st", run.run_id)
    for k in range(1, points + 1):
        append_point(
            live,
            {
                "step": k,
                "tokens": k * 256,
                "train_loss": 9.0,
                "lr": 1e-3,
                "val_loss": None,
                "elapsed_s": 1.0,
                "steps": 6,
                "tokens_per_s": 10.0,
            },
        )
    return live


def test_the_stored_curve_beats_a_stale_live_file_of_the_same_run(grid):
    root, run = grid
    write_run(root, run, val_ppl=50.0, points=6)
    _stale_live_file(root, run, points=2)  # steps 1-2 of an earlier attempt, no process

    got = (
        connect(root, "st")
        .execute("SELECT count(*), max(step), bool_or(running) FROM curves")
        .fetchall()
    )

    assert got == [(6, 6, False)]  # the stored 6 points, not the live file's 2
    r = CliRunner().invoke(main, ["status", "st", "--results", str(root)])
    assert r.exit_code == 0, r.output
    assert "stopped" not in r.output and "completed" in r.output, r.output


def test_a_run_without_a_row_still_shows_its_live_points(grid):
    root, run = grid
    _stale_live_file(root, run, points=2)

    got = connect(root, "st").execute("SELECT count(*) FROM curves").fetchall()

    assert got == [(2,)]
    r = CliRunner().invoke(main, ["status", "st", "--results", str(root)])
    assert "stopped" in r.output, r.output  # a live file with no row: stopped, shown


def test_writing_back_a_spilled_result_retires_its_live_file(grid, tmp_path, monkeypatch):
    root, run = grid
    live = _stale_live_file(root, run, points=2)
    monkeypatch.setenv("HARNESS_SPILL", str(tmp_path / "spill"))
    real = store_rows.write_result

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(spill, "write_result", full)
    result = RunResult(status="completed", steps_done=6)
    with pytest.raises(spill.ResultSpilled):
        spill.write_or_spill(root, run, result, provenance())
    assert live.exists()  # no row yet: the live file says where the run stood
    monkeypatch.setattr(spill, "write_result", real)

    assert spill.recover(root, "st", lambda run_id: run) == [run.run_id]

    assert not live.exists()
    statuses = connect(root, "st").execute("SELECT status FROM runs").fetchall()
    assert statuses == [("completed",)]


def test_writing_a_result_retires_its_live_file(grid):
    root, run = grid
    live = _stale_live_file(root, run, points=2)

    spill.write_or_spill(root, run, RunResult(status="completed", steps_done=6), provenance())

    assert not live.exists()
