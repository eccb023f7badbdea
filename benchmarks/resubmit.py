"""A no-op re-submit at sweep scale (issue 28 item 1): ``harness submit GRID`` of a grid whose
every run already has a result, in a fresh process, timed in CPU seconds (user + system of the
process and its children) and wall seconds.

The store is built through the real write path: the manifest by ``write_manifest``, one result
row and curve per run by ``harness.store.rows.write_result`` (with the provenance and input
fingerprints a trained run records, so none is stale). ``--compacted`` sizes are written as the
consolidated generation a compaction writes instead (one ``compact/runs-<gen>.parquet`` of rows
made by ``make_row``): writing 100,000 per-run files would take longer than the measurement.

The grid is ``quadratic`` runs (lr x seeds) on the local launcher; a re-submit must launch none.

Example:
    python benchmarks/resubmit.py                          # 1,000 and 10,000 per-run files
    python benchmarks/resubmit.py --runs 10000 --compacted 100000
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import parse_args_quick  # benchmarks/common.py

from harness.core import paths
from harness.core.config import RunConfig
from harness.core.provenance import ATTEMPT, provenance
from harness.core.result import RunResult, Status
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.launch.inputs import Inputs
from harness.store.manifest import write_manifest
from harness.store.rows import atomic_write_table, make_row, write_result
from harness.store.schema import row_schema

REPO = Path(__file__).resolve().parents[1]
STEPS = 20
"""Steps of every run (only its row is written; nothing trains)."""


def grid_yaml(folder: Path, name: str, runs: int) -> Path:
    """A grid of ``runs`` quadratic runs: ``runs / 10`` learning rates x 10 seeds."""
    assert runs % 10 == 0, "runs must be a multiple of 10"
    lrs = [round(1e-4 * (1 + i / 7), 9) for i in range(runs // 10)]
    path = folder / f"{name}.yaml"
    path.write_text(
        f"name: {name}\nlauncher: local\n"
        f"base: {{workload: quadratic, steps: {STEPS}, optimizer: sgd, log_every: 10}}\n"
        f"grid: {{lr: {lrs}}}\nseeds: 10\n"
    )
    return path


def _result() -> RunResult:
    curve = [
        {
            "step": s,
            "tokens": s,
            "train_loss": 1.0 / s,
            "lr": 1e-3,
            "val_loss": None,
            "elapsed_s": 0.01 * s,
        }
        for s in (10, 20)
    ]
    metrics: dict[str, float | None] = {"val_loss": 0.5, "wall_s": 0.4}
    return RunResult(
        status=Status.COMPLETED,
        params=10,
        steps_done=STEPS,
        tokens_seen=STEPS,
        device="cpu",
        metrics=metrics,
        curve=curve,
    )


def build(root: Path, grid_path: Path, data_root: Path, compacted: bool) -> int:
    """Write the manifest and one completed row per run; returns the number of runs."""
    grid = load_grid(grid_path, vocab=vocab_lookup(data_root))
    write_manifest(root, grid.name, grid.runs)
    reader = Inputs(data_root)
    where = provenance("bench") | {ATTEMPT: 1}
    if not compacted:
        for run in grid.runs:
            write_result(root, run, _result(), where | reader.of(run))
        return len(grid.runs)
    import pyarrow as pa

    rows = [make_row(run, _result(), where | reader.of(run)) for run in grid.runs]
    table = pa.Table.from_pylist(rows, schema=row_schema(list[RunConfig](grid.runs)))
    atomic_write_table(table, paths.generation_path(root, grid.name, "runs", 1))
    return len(grid.runs)


def resubmit(grid_path: Path, root: Path, data_root: Path) -> tuple[float, float, str]:
    """CPU seconds, wall seconds and output of ``harness submit GRID`` in a fresh process."""
    argv = [
        sys.executable,
        "-c",
        "from harness.cli import main; main()",
        "submit",
        str(grid_path),
        "--results",
        str(root),
        "--data",
        str(data_root),
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=os.environ.copy())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    return cpu, wall, out


def measure(n: int, compacted: bool, repeats: int, work: Path) -> None:
    name = f"resubmit{n}{'c' if compacted else ''}"
    root, data_root = work / "results", work / "data"
    grid_path = grid_yaml(work, name, n)
    start = time.perf_counter()
    runs = build(root, grid_path, data_root, compacted)
    built = time.perf_counter() - start
    cpus, walls = [], []
    for _ in range(repeats):
        cpu, wall, out = resubmit(grid_path, root, data_root)
        assert f"skipped {runs} " in out and "launching 0 " in out, out[-3000:]
        cpus.append(cpu)
        walls.append(wall)
    form = "one compacted generation" if compacted else "per-run files"
    print(
        f"{runs:>7,} runs ({form}, built in {built:.0f} s): no-op re-submit "
        f"CPU {_summary(cpus)}, wall {_summary(walls)}"
    )


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s [{min(values):.2f}, {max(values):.2f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--runs",
        type=int,
        nargs="*",
        default=[1000, 10000],
        help="grid sizes written as per-run files",
    )
    ap.add_argument(
        "--compacted",
        type=int,
        nargs="*",
        default=[],
        help="grid sizes written as one compacted generation",
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", type=Path, default=None, help="folder for the stores (default: tmp)")
    args = parse_args_quick(ap, {"runs": [100], "compacted": [200], "repeats": 1})
    print(f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        for n in args.runs:
            measure(n, False, args.repeats, work)
        for n in args.compacted:
            measure(n, True, args.repeats, work)


if __name__ == "__main__":
    main()
