"""The store at sweep scale (issue 28): CPU time and peak memory of each command over stores of
1,000, 10,000 and 100,000 runs.

Each store is one grid of ``quadratic`` runs (sgd, adamw and signum over a list of lrs, 5 seeds)
with a ``--points``-point loss curve per run:

- up to ``--write-limit`` runs, written through the store's real write path
  (:func:`harness.store.spill.write_or_spill`, which the process training a run calls) from
  ``--writers`` processes at once: per-run files, compacted by themselves as they pile up;
- beyond, the consolidated generation a compaction writes (rows made by
  :func:`harness.store.rows.make_row`, curves in the curve schema), written directly: writing
  100,000 per-run files takes hours on a loaded machine; with ``--tail N``, all but the last
  ``N`` runs so, and the last ``N`` through the real write path onto that store (the write cost
  of a row at that size, the compactions by themselves included).

Writers compact in the background (:data:`harness.store.auto.BACKGROUND`) unless
``--compaction inline``: the writer pays the compaction's CPU then (the amortised cost of a row,
and its stall); in the background the slowest write is the stall a worker sees. The grid's plan
is saved (:mod:`harness.grid.plans`) as the first submit saves it, so ``submit (no-op)`` is a
re-submit of a grid submitted before.

Then each command runs in a fresh process (``harness``), and its CPU time (user + system) and
peak RSS come from ``wait4``: ``submit`` of the finished grid (a no-op re-submit),
``query`` of ``runs`` and of ``curves``, ``status``, ``analyze best``, ``analyze gap``,
``figures`` (``lr_sensitivity``, and the grid's default figures: ``lr_sensitivity``,
``gap_closure``, ``loss_curves``), ``report``, and ``compact`` after
:data:`~harness.store.auto.AUTO_COMPACT_FILES` more runs arrived (the compaction a writer makes
by itself). The same commands over a 15-run store give the start-up cost (imports, interpreter),
subtracted in the last column. Each command runs ``--repeat`` times: the median CPU time with its
range, the largest peak.

Example:
    python benchmarks/scale.py                        # 1k, 10k, 100k runs x 200 points
    python benchmarks/scale.py --sizes 1000 --points 50
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from common import parse_args_quick  # benchmarks/common.py

from harness.core import paths
from harness.core.files import locked
from harness.core.provenance import provenance
from harness.core.result import RunResult
from harness.grid.load import load_grid
from harness.grid.plans import PlanCache
from harness.store import auto
from harness.store.auto import AUTO_COMPACT_FILES
from harness.store.integrity import Checked
from harness.store.layout import write_covered
from harness.store.manifest import write_manifest
from harness.store.rows import make_row
from harness.store.schema import CURVE_SCHEMA, row_schema
from harness.store.spill import write_or_spill

GRID = "scale"
ARMS = ("sgd", "adamw", "signum")
SEEDS = 5


def grid_yaml(folder: Path, runs: int, points: int, cells: int = 1) -> Path:
    """A grid of about ``runs`` quadratic runs (3 arms x lrs x 5 seeds x ``cells`` values of the
    workload's ``condition``: a figure has a panel per cell), ``points`` logged points each."""
    n = max(1, runs // (len(ARMS) * SEEDS * cells))
    lrs = [float(f"{x:.6g}") for x in np.geomspace(1e-4, 1.0, n)]
    arms = ", ".join(f"{a}: {{lr: {lrs}}}" for a in ARMS)
    conditions = [float(c) for c in np.geomspace(1.0, 1e3, cells).round(3)] if cells > 1 else None
    axis = f", condition: {conditions}" if conditions else ""
    text = f"""name: {GRID}
base: {{workload: quadratic, steps: {2 * points}, log_every: 2, grad_clip: null,
        schedule: constant}}
grid: {{optimizer: {{{arms}}}{axis}}}
seeds: {SEEDS}
"""
    path = folder / f"{GRID}.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _loss(i: int) -> float:
    return 1.0 + (i * 7919 % 1000) / 1000


def _result(i: int, points: int) -> RunResult:
    final = _loss(i)
    curve = [
        {
            "step": 2 * (k + 1),
            "tokens": 2 * (k + 1),
            "train_loss": final + 1 / (k + 1),
            "lr": 1e-3,
            "val_loss": final if k == points - 1 else None,
            "elapsed_s": 0.01 * k,
        }
        for k in range(points)
    ]
    metrics = {"val_loss": final, "train_loss": final, "val_ppl": float(np.exp(final))}
    return RunResult(
        status="completed",
        params=64,
        steps_done=2 * points,
        tokens_seen=2 * points,
        device="cpu",
        metrics=metrics,
        curve=curve,
    )


def _progress(root: Path, writer: int, window: int, took: list[float], wall: float) -> None:
    """One line per 1,000-row window a writer finished (its share of the window's rows), with
    the covered lists on disk then (those within the grace, :data:`harness.store.layout.
    GRACE_S`: each row asks for the current generation among them)."""
    lists = len(list(paths.compact_dir(root, GRID).glob("covered-*.json")))
    print(
        f"  progress: writer {writer} rows {window * 1000:,}-{(window + 1) * 1000:,}: "
        f"{len(took)} rows, {sum(took):.2f} s CPU, {1000 * sum(took) / len(took):.1f} ms/row, "
        f"slowest {max(took):.2f} s; {wall:.0f} s wall since start; {lists} covered lists",
        flush=True,
    )


def _write_share(
    args: tuple[str, str, int, int, int, int, int, int],
) -> tuple[float, float, list[tuple[float, int]]]:
    """Write every ``writers``-th run from ``start`` through the real write path: (CPU seconds,
    the most CPU one write took, a compaction it made included; (CPU seconds, rows) of each
    successive 1,000 rows of the grid). With ``progress``, a line per finished 1,000 rows."""
    root, path, start, stop, writers, points, background, progress = args
    auto.BACKGROUND = bool(background)
    runs = load_grid(Path(path), vocab=lambda name: 1, cache=PlanCache(Path(root))).runs
    t = time.process_time()
    wall = time.perf_counter()
    worst = 0.0
    windows: dict[int, list[float]] = {}
    for i in range(start, stop, writers):
        if progress and i // 1000 - 1 in windows and i // 1000 not in windows:
            _progress(
                Path(root),
                start % writers,
                i // 1000 - 1,
                windows[i // 1000 - 1],
                time.perf_counter() - wall,
            )
        one = time.process_time()
        write_or_spill(Path(root), runs[i], _result(i, points), provenance())
        took = time.process_time() - one
        worst = max(worst, took)
        windows.setdefault(i // 1000, []).append(took)
    if progress and windows:
        last = max(windows)
        _progress(Path(root), start % writers, last, windows[last], time.perf_counter() - wall)
    return time.process_time() - t, worst, [(sum(w), len(w)) for _, w in sorted(windows.items())]


def write_per_run(
    root: Path,
    path: Path,
    start: int,
    stop: int,
    writers: int,
    points: int,
    background: bool,
    progress: bool = False,
) -> str:
    """Runs ``start:stop`` through the real write path from ``writers`` processes."""
    t = time.perf_counter()
    jobs = [
        (str(root), str(path), start + w, stop, writers, points, int(background), int(progress))
        for w in range(writers)
    ]
    with ProcessPoolExecutor(writers) as pool:
        shares = list(pool.map(_write_share, jobs))
    cpu = sum(c for c, _, _ in shares)
    worst = max(w for _, w, _ in shares)
    # ms of CPU per row in each successive 1,000 rows (every writer's share of them)
    by_window = zip(*(k for _, _, k in shares), strict=False)
    windows = [1000 * sum(c for c, _ in w) / sum(n for _, n in w) for w in by_window]
    with locked(paths.compact_dir(root, GRID) / ".lock"):
        pass  # a compaction in the background ended
    wall = time.perf_counter() - t
    first, last = (windows[0], windows[-1]) if windows else (0.0, 0.0)
    mode = "in the background" if background else "inline"
    return (
        f"wrote {stop - start:,} runs through write_or_spill (runs {start:,} to {stop:,}, "
        f"{writers} processes, compactions {mode}): "
        f"{wall:.1f} s wall, {cpu:.1f} s CPU, {cpu / max(1, stop - start) * 1000:.1f} ms "
        f"CPU per run ({'the writers compacting' if not background else 'not the compactions'}); "
        f"first 1,000 rows {first:.1f} ms/row, last 1,000 {last:.1f} ms/row; "
        f"slowest write {worst:.2f} s CPU"
    )


def write_generation(root: Path, runs: list[Any], points: int, batch: int = 10_000) -> str:
    """All ``runs`` as one consolidated generation, as a compaction writes it."""
    t = time.perf_counter()
    rows_path = paths.generation_path(root, GRID, "runs", 1)
    curves_path = paths.generation_path(root, GRID, "curves", 1)
    rows_path.parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([f.with_nullable(True) for f in row_schema(runs[:1])])
    curve_schema = pa.schema([f.with_nullable(True) for f in CURVE_SCHEMA])
    prov = provenance()
    with (
        pq.ParquetWriter(rows_path, schema, write_page_checksum=True) as rw,
        pq.ParquetWriter(curves_path, curve_schema, write_page_checksum=True) as cw,
    ):
        for s in range(0, len(runs), batch):
            part = runs[s : s + batch]
            rows = [
                make_row(r, _result(s + j, 1), prov | {"attempt": 1}) for j, r in enumerate(part)
            ]
            rw.write_table(pa.Table.from_pylist(rows, schema=schema))
            n = len(part) * points
            k = np.tile(np.arange(points), len(part))
            final = np.repeat([_loss(s + j) for j in range(len(part))], points)
            ids = np.repeat([r.run_id for r in part], points)
            columns = {
                "grid": pa.array([GRID] * n),
                "run_id": pa.array(ids),
                "step": 2 * (k + 1),
                "tokens": 2 * (k + 1),
                "train_loss": final + 1 / (k + 1),
                "lr": np.full(n, 1e-3),
                "val_loss": np.where(k == points - 1, final, np.nan),
                "elapsed_s": 0.01 * k,
            }
            cw.write_table(pa.table(columns, schema=curve_schema))
    write_covered(root, GRID, 1, [])
    checked = Checked(root, GRID)
    for p in (rows_path, curves_path):
        checked.mark_whole(p)  # as a compaction records the files it writes
    checked.save()
    wall = time.perf_counter() - t
    return (
        f"wrote {len(runs):,} runs as one generation ({points * len(runs):,} points): {wall:.0f} s"
    )


def commands(root: Path, path: Path, out: Path) -> dict[str, list[str]]:
    """Each measured command (``harness`` arguments)."""
    common = ["--results", str(root)]
    base = ["--baseline", "optimizer=sgd", "--reference", "optimizer=adamw"]
    analysis = ["--over", "lr", "--metric", "val_loss"]
    return {
        "submit (no-op)": ["submit", str(path), "--launcher", "local", *common, "--data", str(out)],
        "query runs": [
            "query",
            "SELECT optimizer, avg(val_loss) FROM runs GROUP BY ALL",
            *common,
        ],
        "query curves": [
            "query",
            "SELECT count(*), avg(train_loss) FROM curves WHERE step = 20",
            *common,
        ],
        "status": ["status", GRID, *common],
        "analyze best": ["analyze", "best", GRID, *analysis, "--by", "optimizer", *common],
        "analyze gap": ["analyze", "gap", GRID, *analysis, *base, *common],
        "figures": ["figures", GRID, "--figure", "lr_sensitivity", *common],
        "figures (defaults)": ["figures", GRID, *common],
        "report": [
            "report",
            GRID,
            "-o",
            str(out / "report.html"),
            "--figure",
            "lr_sensitivity",
            *common,
        ],
    }


_CHILD = """
import atexit, sys
def peak():
    with open("/proc/self/status") as fh:
        kb = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))
    sys.stderr.write(f"\\npeak-rss-kb {kb}\\n")
atexit.register(peak)
from harness.cli import main
main()
"""
"""A ``harness`` process that reports its peak RSS (``VmHWM``: this process image's, unlike
``ru_maxrss``, which keeps the parent's from before ``exec``)."""


def measure(argv: list[str]) -> tuple[float, float, float, int]:
    """(CPU seconds, peak RSS in MB, wall seconds, exit code) of ``harness argv`` in a fresh
    process."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    if proc.returncode not in (0, 1):
        sys.stderr.write(f"{argv[0]} exited {proc.returncode}: {err[-800:]}\n")
    kb = [int(line.split()[1]) for line in err.splitlines() if line.startswith("peak-rss-kb")]
    return usage.ru_utime + usage.ru_stime, (kb[-1] if kb else 0) / 1024, wall, proc.returncode


def build(
    folder: Path,
    size: int,
    points: int,
    write_limit: int,
    writers: int,
    cells: int = 1,
    tail: int = 0,
    background: bool = True,
    progress: bool = False,
) -> tuple[Path, Path, list[Any], str]:
    """A store of about ``size`` runs under ``folder``: (root, grid YAML, runs, how written)."""
    root = folder / "results"
    path = grid_yaml(folder, size, points, cells)
    plans = PlanCache(root)
    runs = list(load_grid(path, vocab=lambda name: 1, cache=plans).runs)
    write_manifest(root, GRID, runs)
    plans.save()  # as the first submit does
    if len(runs) <= max(write_limit, tail):
        return (
            root,
            path,
            runs,
            write_per_run(root, path, 0, len(runs), writers, points, background, progress),
        )
    start = len(runs) - min(tail, len(runs))
    how = write_generation(root, runs[:start], points)
    if start < len(runs):
        how += "; " + write_per_run(
            root, path, start, len(runs), writers, points, background, progress
        )
    return root, path, runs, how


def _first_reads(root: Path, argv: list[str], repeat: int) -> list[tuple[float, float, float, int]]:
    """``harness argv`` ``repeat`` times, each as the first read after the rows written (the
    record of files found whole, :mod:`harness.store.integrity`, put back as it was before
    the first)."""
    record = paths.verified_path(root, GRID)
    before = record.read_bytes() if record.exists() else None
    out = []
    for _ in range(repeat):
        if before is None:
            record.unlink(missing_ok=True)
        else:
            record.write_bytes(before)
        out.append(measure(argv))
    return out


def compaction(root: Path, path: Path, points: int) -> tuple[float, float, float, int]:
    """Add :data:`AUTO_COMPACT_FILES` - 1 runs' results (a grid grown by a few lrs), then time
    ``harness compact`` (what the next writer would do by itself)."""
    runs = list(load_grid(path, vocab=lambda name: 1).runs)
    extra = [r for r in _more_runs(path) if r.run_id not in {x.run_id for x in runs}]
    extra = extra[: AUTO_COMPACT_FILES - 1]
    write_manifest(root, GRID, extra)
    for i, run in enumerate(extra):
        write_or_spill(root, run, _result(i, points), provenance())
    return measure(["compact", GRID, "--results", str(root)])


def _more_runs(path: Path) -> list[Any]:
    """:data:`AUTO_COMPACT_FILES` new runs of the grid: sgd at lrs beyond its range."""
    n = AUTO_COMPACT_FILES // SEEDS + 1
    lrs = [float(f"{x:.6g}") for x in np.geomspace(1.5, 3.0, n)]
    text = path.read_text().split("grid:")[0] + f"grid: {{optimizer: {{sgd: {{lr: {lrs}}}}}}}\n"
    other = path.with_name("more.yaml")
    other.write_text(text + f"seeds: {SEEDS}\n")
    return list(load_grid(other, vocab=lambda name: 1).runs)[:AUTO_COMPACT_FILES]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000", help="runs per store, comma separated")
    ap.add_argument("--points", type=int, default=200, help="curve points per run")
    ap.add_argument(
        "--write-limit",
        type=int,
        default=10_000,
        help="largest store written run by run through the real write path",
    )
    ap.add_argument("--writers", type=int, default=2, help="processes writing runs")
    ap.add_argument(
        "--tail",
        type=int,
        default=0,
        help="a store above --write-limit: its last TAIL runs through the real write path",
    )
    ap.add_argument(
        "--compaction",
        choices=("background", "inline"),
        default="background",
        help="where writers compact: a process of its own, or the writer (its CPU counted)",
    )
    ap.add_argument(
        "--cells",
        type=int,
        default=100,
        help="values of the quadratic's condition (a figure's panels; > 12: skipped)",
    )
    ap.add_argument(
        "--progress",
        action="store_true",
        help="while writing run by run, a line per writer and 1,000 rows (CPU ms per row)",
    )
    ap.add_argument("--commands", default="all", help="comma separated subset (quick: a few)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each command (median, range)")
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = parse_args_quick(
        ap,
        {
            "sizes": "150",
            "points": 20,
            "cells": 2,
            "commands": "query runs,status,analyze best",
            "repeat": 1,
        },
    )
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
        f"AUTO_COMPACT_FILES {AUTO_COMPACT_FILES}"
    )
    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base_root, base_path, _, _ = build(Path(tmp) / "base", 15, args.points, 10**9, 1)
        out = Path(tmp) / "out"
        out.mkdir()
        wanted = None if args.commands == "all" else set(args.commands.split(","))
        start_up = {  # the median over the repeats, as for the measured commands
            name: statistics.median(measure(argv)[0] for _ in range(args.repeat))
            for name, argv in commands(base_root, base_path, out).items()
            if wanted is None or name in wanted
        }
        for size in (int(s) for s in args.sizes.split(",")):
            folder = Path(tmp) / f"s{size}"
            root, path, runs, how = build(
                folder,
                size,
                args.points,
                args.write_limit,
                args.writers,
                args.cells,
                args.tail,
                args.compaction == "background",
                args.progress,
            )
            print(f"\n{len(runs):,} runs x {args.points} points: {how}")
            if args.tail:  # the rows the tail left loose: the first command to meet them
                first = _first_reads(root, commands(root, path, out)["query runs"], args.repeat)
                cpus = [r[0] for r in first]
                rss = max(r[1] for r in first)
                print(
                    f"  first read after the new rows (query runs, {len(first)} times from the "
                    f"same state): {statistics.median(cpus):.2f} s CPU "
                    f"[{min(cpus):.2f}, {max(cpus):.2f}], {rss:.0f} MB"
                )
                found[f"{size}/first read"] = {
                    "cpu_s": cpus,
                    "rss_mb": rss,
                    "wall_s": statistics.median(r[2] for r in first),
                }
            head = (
                f"{'CPU s':>8} {'[min, max]':>14} {'peak MB':>8} {'wall s':>8} "
                f"{'CPU s beyond start-up':>22}"
            )
            print(f"  {'command':16} {head}")
            for name, argv in commands(root, path, out).items():
                if wanted is not None and name not in wanted:
                    continue
                runs_of = [measure(argv) for _ in range(args.repeat)]
                cpus = [r[0] for r in runs_of]
                rss = max(r[1] for r in runs_of)
                wall = statistics.median(r[2] for r in runs_of)
                cpu = statistics.median(cpus)
                codes = {r[3] for r in runs_of} - {0, 1}
                spread = f"[{min(cpus):.2f}, {max(cpus):.2f}]"
                print(
                    f"  {name:16} {cpu:8.2f} {spread:>14} {rss:8.0f} {wall:8.1f} "
                    f"{cpu - start_up[name]:22.2f}" + (f"  (exit {codes})" if codes else "")
                )
                found[f"{size}/{name}"] = {
                    "cpu_s": cpus,
                    "rss_mb": rss,
                    "wall_s": wall,
                    "beyond_start_up_s": cpu - start_up[name],
                    "load": os.getloadavg()[0],
                }
            if wanted is None or "compact" in wanted:
                cpu, rss, wall, _ = compaction(root, path, args.points)
                print(
                    f"  {'compact':16} {cpu:8.2f} {rss:8.0f} {wall:8.1f}   "
                    f"(+{AUTO_COMPACT_FILES - 1} runs)"
                )
                found[f"{size}/compact"] = {"cpu_s": cpu, "rss_mb": rss, "wall_s": wall}
    if args.json:
        args.json.write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
