"""Result rows: schema, atomic writes (a killed writer leaves no readable partial row)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pyarrow.parquet as pq

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
    point = {"step": 1, "tokens": 256, "train_loss": 3.0, "lr": 1e-3, "val_loss": None,
             "elapsed_s": 0.1}  # fmt: skip
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


def test_killed_writer_leaves_no_partial_row(tmp_path):
    target = tmp_path / "row.parquet"
    code = textwrap.dedent(
        f"""
        import pyarrow as pa, sys
        from pathlib import Path
        from harness.store.rows import atomic_write_table
        table = pa.table({{"x": list(range(3_000_000))}})
        print("ready", flush=True)
        while True:
            atomic_write_table(table, Path({str(target)!r}))
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 60
    while not target.exists():  # a write completed (atomic), or began (a writer that is not)
        assert time.monotonic() < deadline and proc.poll() is None, "no write"
        time.sleep(0.005)
    time.sleep(0.05)  # the writer loops: the kill lands inside a write (each takes longer)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    visible = list(tmp_path.glob("*.parquet"))
    assert visible == [target]  # the last complete write stays readable, whole
    assert pq.read_table(target).num_rows == 3_000_000
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert all(not p.name.endswith(".parquet") for p in leftovers)
