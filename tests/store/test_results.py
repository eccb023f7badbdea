"""Result rows: schema, atomic writes (a killed writer leaves no readable partial row)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.core import paths
from harness.core.provenance import provenance
from harness.core.result import RunResult
from harness.store.rows import read_row, row_schema, write_result
from tests.runs import tiny_run

REQUIRED_COLUMNS = [
    "run_id",
    "grid",
    "status",
    "optimizer",
    "lr",
    "beta1",
    "beta2",
    "momentum",
    "weight_decay",
    "batch_size",
    "seq_len",
    "tokens",
    "steps",
    "model",
    "params",
    "seed",
    "val_loss",
    "val_ppl",
    "train_loss",
    "wall_s",
    "tokens_per_s",
    "error",
    "git_commit",
    "torch_version",
    "device",
    "hostname",
    "created_at",
]


def test_row_has_every_required_column_and_nulls(tmp_path):
    run = tiny_run(tmp_path / "data")
    point = {
        "step": 1,
        "tokens": 256,
        "train_loss": 3.0,
        "lr": 1e-3,
        "val_loss": None,
        "elapsed_s": 0.1,
    }
    metrics = {"val_loss": 2.0, "val_ppl": 7.389}
    result = RunResult(status="completed", metrics=metrics, params=10, device="cpu", curve=[point])
    path = write_result(tmp_path, run, result, provenance())
    row = read_row(path)
    for c in REQUIRED_COLUMNS:
        assert c in row, c
    assert row["run_id"] == run.run_id and row["optimizer"] == "adamw"
    assert row["momentum"] is None  # does not apply to adamw: NULL
    assert row["val_loss"] == 2.0 and row["status"] == "completed" and row["device"] == "cpu"
    assert pq.read_schema(path).equals(row_schema(), check_metadata=False)
    curve = pq.read_table(paths.curve_path(tmp_path, "t", run.run_id, "000001")).to_pylist()
    point = {"step": 1, "tokens": 256, "train_loss": 3.0, "lr": 1e-3, "val_loss": None}
    assert curve == [{"grid": "t", "run_id": run.run_id, **point, "elapsed_s": 0.1}]


_WRITER = """
import pyarrow as pa, sys
from pathlib import Path
from harness.store.rows import atomic_write_table
table = pa.table({"x": list(range(3_000_000))})
print("ready", flush=True)
while True:
    atomic_write_table(table, Path(sys.argv[1]))
"""
"""A writer rewriting one row file without end (each write takes a good part of a second)."""


def _kill_a_writer(target: Path) -> bool:
    """SIGKILL a writer of ``target`` once a write is complete and the next one is under way;
    returns whether the kill landed inside a write (its temp file is left behind)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(target)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        writing = f".{target.name}.tmp-*"
        deadline = time.monotonic() + 300  # a hang guard, not a timing
        while not (target.exists() and any(target.parent.glob(writing))):
            assert time.monotonic() < deadline and proc.poll() is None, "no write"
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    return any(target.parent.glob(writing))


@pytest.mark.slow
def test_killed_writer_leaves_no_partial_row(tmp_path):
    # the kill may land between two writes (the rename done, the next temp not yet opened):
    # then it tested nothing, so the writer is killed again, in a fresh folder, until one landed
    landed = []
    for attempt in range(10):
        target = tmp_path / str(attempt) / "row.parquet"
        target.parent.mkdir()
        landed.append(_kill_a_writer(target))
        visible = list(target.parent.glob("*.parquet"))
        assert visible == [target]  # the last complete write stays readable, whole
        assert pq.read_table(target).num_rows == 3_000_000
        leftovers = [p for p in target.parent.iterdir() if p.name.startswith(".")]
        assert all(not p.name.endswith(".parquet") for p in leftovers)
        if landed[-1]:
            break
    assert landed[-1], f"no kill of {len(landed)} landed inside a write"
