"""Harness overhead at sweep scale: grid expansion, result writes, queries before and after
compaction.

1. ``expand``: ``load_grid`` of a 10,000-run grid (lr x beta1 x beta2 x 10 seeds), i.e. parsing,
   expansion, resolution and validation of every run and the duplicate check (target < 2 s);
   and what a user waits for: ``harness submit GRID --dry-run --launcher slurm-a100`` in a fresh
   process (interpreter start and imports included; it imports neither torch nor DuckDB).
2. ``write``: 10,000 result rows, each with a 200-point loss curve (2M points), written by
   ``harness.store.rows.write_result`` from ``--writers`` processes at once, each run to its own
   files (no shared writer). Per-row latency percentiles (target < 1 s per row) and rows/s.
3. ``query``: three queries through ``harness.store.db.connect`` (views ``runs``/``curves``), timed
   with the connection (as ``harness query`` does), over the 10,000 per-run files; then
   ``harness compact`` (timed) and the same queries over the consolidated files
   (target < 100 ms).

Timings are medians over ``--repeats`` (with [min, max]).

Example:
    python benchmarks/overhead.py                 # 10,000 runs, 200 curve points each
    python benchmarks/overhead.py --runs 1000     # a quicker look
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from common import machine, parse_args_quick  # benchmarks/common.py

from harness.core.result import RunResult
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.store.compact import compact
from harness.store.db import connect
from harness.store.rows import write_result

QUERIES = {
    "best 5 runs": "SELECT optimizer, lr, beta1, beta2, seed, val_loss FROM runs "
    "ORDER BY val_loss LIMIT 5",
    "mean over seeds": "SELECT lr, beta1, beta2, avg(val_loss), stddev_samp(val_loss) FROM runs "
    "GROUP BY ALL ORDER BY 4 LIMIT 5",
    "curves x runs": "SELECT r.beta1, avg(c.train_loss) FROM curves c JOIN runs r "
    "USING (grid, run_id) WHERE c.step > 100 GROUP BY ALL ORDER BY 1",
}


def grid_yaml(folder: Path, runs: int) -> Path:
    """A grid of ``runs`` runs: 10 lrs x 10 beta1 x (runs / 1000) beta2 x 10 seeds."""
    assert runs % 1000 == 0 and runs >= 1000, "--runs must be a multiple of 1000"
    beta2 = [round(0.9 + 0.099 * i / (runs // 1000), 5) for i in range(runs // 1000)]
    text = f"""
name: overhead
base: {{model: tiny, optimizer: adamw, seq_len: 64, batch_size: 8, tokens: 102400,
       warmup_steps: "0.1 * steps", weight_decay: 0.1}}
grid:
  lr: [1.0e-4, 2.0e-4, 3.0e-4, 5.0e-4, 1.0e-3, 2.0e-3, 3.0e-3, 5.0e-3, 1.0e-2, 2.0e-2]
  beta1: [0.8, 0.85, 0.9, 0.925, 0.95, 0.96, 0.97, 0.98, 0.99, 0.995]
  beta2: {beta2}
seeds: 10
"""
    path = folder / "overhead.yaml"
    path.write_text(text)
    return path


def time_expand(path: Path, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        grid = load_grid(path, vocab=vocab_lookup(Path("data")))
        out.append(time.perf_counter() - t)
    print(f"expand: {len(grid.runs):,} runs, {len(grid.axes)} varying axes")
    return out


def time_dry_run(path: Path, root: Path, repeats: int) -> list[float]:
    """Wall time of the CLI's dry run on the SLURM profile, each in a new process."""
    cmd = [sys.executable, "-c", "from harness.cli import main; main()", "submit", str(path)]
    cmd += ["--dry-run"]
    cmd += ["--launcher", "slurm-a100", "--results", str(root)]
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        out.append(time.perf_counter() - t)
    return out


def _write_share(args: tuple[str, Path, int, int, int]) -> list[float]:
    """Write every ``step``-th run of the grid from ``first``; per-row seconds."""
    root, path, first, step, points = args
    runs = load_grid(path, vocab=vocab_lookup(Path("data"))).runs[first::step]
    latencies = []
    for i, run in enumerate(runs):
        loss = 3.0 + (i % 97) / 100
        curve = [
            {
                "step": 5 * (k + 1),
                "tokens": 2560 * (k + 1),
                "train_loss": 9.0 - k / points,
                "lr": 1e-3,
                "val_loss": None,
                "elapsed_s": 0.1 * k,
            }
            for k in range(points)
        ]
        result = RunResult(
            status="completed",
            params=2_500_000,
            steps_done=200,
            tokens_seen=102400,
            device="cpu",
            curve=curve,
            metrics={
                "val_loss": loss,
                "val_ppl": 2.718**loss,
                "train_loss": loss + 0.1,
                "wall_s": 60.0,
                "tokens_per_s": 1700.0,
                "iso": 0.5,
                "rho": -10.0,
                "mfu": None,
                "data_wait_s": 0.1,
            },
        )
        t = time.perf_counter()
        write_result(Path(root), run, result, {"hostname": "bench", "git_commit": "x"})
        latencies.append(time.perf_counter() - t)
    return latencies


def time_writes(root: Path, path: Path, writers: int, points: int) -> list[float]:
    start = time.perf_counter()
    with ProcessPoolExecutor(writers) as pool:
        shares = list(
            pool.map(_write_share, [(str(root), path, w, writers, points) for w in range(writers)])
        )
    wall = time.perf_counter() - start
    lat = sorted(x for s in shares for x in s)
    pct = {p: lat[min(len(lat) - 1, int(p / 100 * len(lat)))] * 1e3 for p in (50, 99)}
    print(
        f"write: {len(lat):,} rows (+{points}-point curves) by {writers} processes in {wall:.1f}s "
        f"= {len(lat) / wall:,.0f} rows/s; per row p50 {pct[50]:.1f} ms, p99 {pct[99]:.1f} ms, "
        f"max {lat[-1] * 1e3:.1f} ms"
    )
    return lat


def time_queries(root: Path, repeats: int, label: str) -> None:
    """Each query with a fresh connection (as ``harness query`` does): wall time of connect +
    query, of the query alone, and the process CPU time of the query (all DuckDB threads; on a
    shared machine the wall time also counts other processes' load, the CPU time does not)."""
    for name, sql in QUERIES.items():
        totals, only, cpu = [], [], []
        for _ in range(repeats):
            t = time.perf_counter()
            con = connect(root, "overhead")
            q, c = time.perf_counter(), time.process_time()
            rows = con.execute(sql).fetchall()
            cpu.append(time.process_time() - c)
            end = time.perf_counter()
            totals.append(end - t)
            only.append(end - q)
            con.close()
        print(
            f"query {label:>9} {name:<16} connect+query {_ms(totals)}  query alone "
            f"{_ms(only)}  query cpu {_ms(cpu)}  ({len(rows)} rows)"
        )


def _ms(seconds: list[float]) -> str:
    ms = [x * 1e3 for x in seconds]
    return f"{statistics.median(ms):7.1f} ms [{min(ms):.1f}, {max(ms):.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--points", type=int, default=200, help="curve points per run")
    ap.add_argument("--writers", type=int, default=2, help="processes writing rows at once")
    ap.add_argument("--repeats", type=int, default=5)
    args = parse_args_quick(ap, {"runs": 1000, "points": 30, "repeats": 1})
    print(f"{dt.datetime.now():%Y-%m-%d %H:%M}  {machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        path = grid_yaml(Path(tmp), args.runs)
        print(f"expand: load_grid {_ms(time_expand(path, args.repeats))}")
        root = Path(tmp) / "results"
        dry = time_dry_run(path, root, args.repeats)
        print(f"expand: harness submit --dry-run --launcher slurm-a100 (new process) {_ms(dry)}")
        time_writes(root, path, args.writers, args.points)
        time_queries(root, 1, "per-run")  # seconds each: once is enough
        t = time.perf_counter()
        report = compact(root, "overhead")
        print(
            f"compact: {report.rows:,} rows, {report.curve_points:,} curve points from "
            f"{report.consolidated_files:,} files in {time.perf_counter() - t:.1f}s"
        )
        time_queries(root, args.repeats, "compacted")


if __name__ == "__main__":
    main()
