"""torch.compile changes no result, and the runs of a grid share its compile cache.

Inductor on CPU compiles C++ kernels with gcc: about a minute for the first compiled run on
2 busy cores (the model is one small layer to keep it short), seconds for the next one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

from harness.core import paths
from harness.store.manifest import write_manifest
from harness.store.rows import read_row
from harness.train.loop import train
from tests.runs import tiny_run
from tests.threads import torch_threads

GRID = "compiled"
# On a GPU the runs compute in bf16 (precision auto), where compiled and eager kernels round
# differently; on the CPU, in float32, they agree to rounding.
REL = 2e-2 if torch.cuda.is_available() else 1e-5
SMALL = {"n_layer": 1, "n_head": 2, "d_model": 32, "tokens": 8 * 32 * 4, "log_every": 2}


def _run_job(root: Path, data_root: Path, run_id: str) -> None:
    """One run as a launched job does it: a fresh process through ``run_job``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
    }
    # Inductor compiles in the run's process, not in a pool of workers that each import torch
    # first (CPU the test paid twice, for kernels and a cache that are the same either way).
    env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    code = textwrap.dedent(
        f"""
        from pathlib import Path
        from harness.launch.worker.job import run_job
        from tests.runs import spec_for
        spec = spec_for(Path({str(root)!r}), {GRID!r}, Path({str(data_root)!r}), threads=2)
        print(run_job(spec, {run_id!r}))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("completed"), proc.stderr[-3000:]


@pytest.mark.slow
def test_compiled_and_eager_agree_and_later_runs_reuse_the_compile_cache(tmp_path, prepared_data):
    eager_run = tiny_run(prepared_data, grid=GRID, compile="off", **SMALL)
    first = tiny_run(prepared_data, grid=GRID, compile="on", **SMALL)
    second = tiny_run(prepared_data, grid=GRID, compile="on", seed=1, **SMALL)
    write_manifest(tmp_path, GRID, [first, second])
    for run in (first, second):
        _run_job(tmp_path, prepared_data, run.run_id)
    # the eager reference in this process (a job's process is what the compiled runs need:
    # the grid's cache reaches them through its environment), on a job's 2 threads
    with torch_threads(2):
        eager = train(eager_run, data_root=prepared_data, log=None)
    row = read_row(paths.run_path(tmp_path, GRID, first.run_id, "000001"))

    # Same losses, eager and compiled: every logged training loss and the validation loss.
    curve = pq.read_table(paths.curve_path(tmp_path, GRID, first.run_id, "000001")).to_pylist()
    assert [p["step"] for p in eager.curve] == [p["step"] for p in curve] == [2, 4]
    for a, b in zip(eager.curve, curve, strict=True):
        assert b["train_loss"] == pytest.approx(a["train_loss"], rel=REL, abs=1e-6)
    assert row["val_loss"] == pytest.approx(eager.metrics["val_loss"], rel=REL)
    assert eager.metrics["compile_s"] is None  # eager really ran eagerly ...
    assert row["compile_s"] > 0  # ... and the other one compiled

    # The second compiled run found the first one's kernels in the grid's cache.
    cache = paths.compile_cache_dir(tmp_path, GRID)
    assert (cache / "fxgraph").is_dir() and any(cache.rglob("*.so"))
    later = read_row(paths.run_path(tmp_path, GRID, second.run_id, "000001"))["compile_s"]
    assert later < row["compile_s"] / 2, (later, row["compile_s"])
