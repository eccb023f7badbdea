"""A store that stays small without anyone remembering to compact, and an integrity check whose
memory is bounded by a row group, not the data (issue 28, item 5)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.core import paths
from harness.core.result import RunResult
from harness.store import auto, layout
from harness.store.compact import ROW_GROUP_SIZE
from harness.store.db import connect
from harness.store.spill import write_or_spill
from tests.runs import tiny_run

REPO = Path(__file__).resolve().parents[2]


def _result(i: int) -> RunResult:
    curve = [
        {"step": 2, "tokens": 2, "train_loss": 4.0, "lr": 1e-3, "val_loss": None, "elapsed_s": 0.1}
    ]
    return RunResult(status="completed", steps_done=2, curve=curve, metrics={"val_loss": 1.0 + i})


def test_the_writers_compact_by_themselves_so_loose_files_stay_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(auto, "AUTO_COMPACT_FILES", 5)
    monkeypatch.setattr(layout, "GRACE_S", 0.0)  # no reader here: covered files may go at once
    monkeypatch.setattr(auto, "BACKGROUND", False)  # the settings above hold in this process
    runs = [tiny_run(tmp_path / "data", grid="a", lr=1e-4 * (i + 1)) for i in range(23)]
    most = 0
    for i, run in enumerate(runs):
        write_or_spill(tmp_path, run, _result(i), {})
        most = max(most, len(layout.loose(paths.runs_dir(tmp_path, "a"))))

    assert most <= 2 * 5  # never more than twice the threshold on disk
    assert len(layout.grid_files(tmp_path, "a").rows) < 5  # readers read fewer still
    gen = layout.current_generation(tmp_path, "a")
    assert gen is not None and len(gen.parts) > 1  # new rows went into parts of their own
    files = paths.generations(tmp_path, "a", "runs")
    assert files == list(gen.runs)  # superseded ones removed, the parts read kept
    con = connect(tmp_path)
    assert con.execute("SELECT count(*), sum(val_loss) FROM runs").fetchone() == (
        23,
        sum(1.0 + i for i in range(23)),
    )
    assert con.execute("SELECT count(*) FROM curves").fetchone() == (23,)


_MEASURE = """
import sys
from pathlib import Path
from harness.store.integrity import check_grid

def hwm():
    with open("/proc/self/status") as fh:
        return next(int(ln.split()[1]) for ln in fh if ln.startswith("VmHWM"))

assert check_grid(Path(sys.argv[1]), "small") == []  # both readers warmed up on one row group
before = hwm()
assert check_grid(Path(sys.argv[1]), "big") == []
print(hwm() - before)
"""


@pytest.mark.slow
def test_the_integrity_check_of_a_large_generation_reads_it_a_row_group_at_a_time(tmp_path):
    """A consolidated curve file of 8M points (about 600 MB once decoded) is checked in full by
    the first command that meets it, in a process whose peak memory grows by less than a
    quarter of that (beyond what checking a file of one row group took)."""
    decoded = {
        grid: _generation(tmp_path, grid, n) for grid, n in (("small", 1000), ("big", 8_000_000))
    }
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = textwrap.dedent(_MEASURE)
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    grew_mb = int(done.stdout.split()[-1]) / 1024
    assert decoded["big"] / 1e6 > 500
    assert grew_mb < decoded["big"] / 1e6 / 4, (grew_mb, decoded["big"] / 1e6)
    assert (tmp_path / "big" / ".verified.json").exists()  # checked whole once, remembered


def _generation(root: Path, grid: str, n: int, points: int = 200) -> int:
    """A consolidated curve file of ``n`` points in row groups as a compaction writes them;
    returns its size decoded (bytes)."""
    paths.compact_dir(root, grid).mkdir(parents=True)
    path = paths.generation_path(root, grid, "curves", 1)
    numbers = ("step", "a", "b", "c", "d", "e")
    strings = [pa.field("grid", pa.string()), pa.field("run_id", pa.string())]
    schema = pa.schema([*strings, *(pa.field(c, pa.float64()) for c in numbers)])
    rng = np.random.default_rng(0)
    decoded = 0
    with pq.ParquetWriter(path, schema, write_page_checksum=True) as w:
        for start in range(0, n, ROW_GROUP_SIZE):
            m = min(ROW_GROUP_SIZE, n - start)
            ids = [f"{(start + i) // points:016x}" for i in range(m)]
            cols = {"grid": [grid] * m, "run_id": ids, **{c: rng.random(m) for c in numbers}}
            table = pa.table(cols, schema=schema)
            decoded += table.nbytes
            w.write_table(table)
    return decoded
