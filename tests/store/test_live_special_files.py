"""A live file that is not a regular file (issue 44, item 5): a FIFO named ``live/x.jsonl`` hung
every reader (a blocking read), a symlink to ``/dev/zero`` was a ``MemoryError`` (a read without
end). Readers open live files without blocking, read regular files only, and at most
:data:`harness.store.live.MAX_BYTES` of one; the others are skipped with one warning."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.analysis.testing import write_run
from harness.core import paths
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.store import live
from harness.store.live import append_point, read_points
from harness.store.manifest import write_manifest
from tests.local_submits import REPO

GRID = """
name: sf
base: {model: tiny, dataset: classics-bpe8k, optimizer: adamw, seq_len: 32, batch_size: 8,
       tokens: 1536, eval_tokens: 2048, log_every: 2, lr: 1.0e-3}
seeds: 2
"""

POINT = {
    "step": 2,
    "tokens": 512,
    "train_loss": 5.0,
    "lr": 1e-3,
    "val_loss": None,
    "elapsed_s": 1.0,
    "steps": 6,
    "tokens_per_s": 100.0,
}


def _special(folder: Path, kind: str) -> Path:
    path = folder / "x.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    return path


@pytest.fixture
def root(tmp_path: Path, prepared_data: Path) -> Path:
    grid_file = tmp_path / "sf.yaml"
    grid_file.write_text(textwrap.dedent(GRID))
    runs = load_grid(grid_file, vocab=vocab_lookup(prepared_data)).runs
    root = tmp_path / "results"
    write_manifest(root, "sf", runs)
    write_run(root, runs[0], val_ppl=100.0, points=3, source=None)
    append_point(paths.live_path(root, "sf", runs[1].run_id), POINT)
    return root


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize(
    "reader",
    [["status", "sf"], ["watch", "sf", "--once"], ["query", "SELECT count(*) FROM curves"]],
)
def test_no_reader_hangs_or_fails_on_a_live_file_that_is_not_a_regular_file(root, kind, reader):
    _special(paths.live_dir(root, "sf"), kind)
    argv = [sys.executable, "-c", "from harness.cli import main; main()", *reader]
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    r = subprocess.run(
        [*argv, "--results", str(root)], env=env, capture_output=True, text=True, timeout=60
    )

    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr, r.stderr
    warned = [ln for ln in r.stderr.splitlines() if "x.jsonl" in ln]
    assert len(warned) == 1 and "not a regular file" in warned[0], r.stderr


def test_a_live_file_larger_than_the_bound_is_read_from_its_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(live, "MAX_BYTES", 4096)
    path = tmp_path / "live" / "r.jsonl"
    for step in range(1, 400):
        append_point(path, {**POINT, "step": step})
    assert path.stat().st_size > 4096

    points = read_points(path)

    assert points and points[-1]["step"] == 399 and len(points) < 399
    assert [p["step"] for p in points] == list(range(points[0]["step"], 400))
