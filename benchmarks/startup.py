"""Per-run fixed cost of the run pool, and the command line's start-up (issue 28, item 7).

1. ``runs``: ``--runs`` runs of the ``quadratic`` workload (``--steps`` steps each) trained through
   one slot of the run pool (``RunPool(parallel=1)``, as the local launcher and a packed SLURM
   task run them), once with one run and once with all of them; CPU time is that of the run
   processes (``RUSAGE_CHILDREN``: user + system, every thread) plus the pool's own. What one
   more run costs is (CPU of N runs - CPU of 1 run) / (N - 1), its training included; the
   training alone (``train(run)`` in this process, warm) is printed beside it, and the
   difference is the per-run fixed overhead (target < 0.5 s).
2. ``cli``: CPU time of ``harness --help`` and ``harness status GRID`` in new processes.

Medians over ``--repeats`` with [min, max].

Example:
    python benchmarks/startup.py                  # 16 runs of 300 steps
    python benchmarks/startup.py --quick
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import machine, parse_args_quick  # benchmarks/common.py

from harness.core.config import RunConfig
from harness.grid.resolve import Resolver
from harness.launch.contract import ExecutionSpec
from harness.launch.profile import load_profile
from harness.launch.worker.pool import Outcome, RunPool, drain
from harness.store.manifest import write_manifest
from harness.train.loop import train


def quadratic_runs(grid: str, n: int, steps: int) -> list[RunConfig]:
    """``n`` runs of the quadratic workload (seeds 0..n-1), as a grid would resolve them."""
    resolver = Resolver(grid, "local", lambda _: 0, "benchmark")
    point = {"workload": "quadratic", "optimizer": "adamw", "lr": 0.01, "steps": steps}
    return [resolver.resolve({**point, "seed": s}, grid) for s in range(n)]


def _cpu() -> float:
    """CPU seconds of this process and of its reaped children (user + system)."""
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def pool_cpu(root: Path, runs: list[RunConfig]) -> float:
    """CPU seconds to train ``runs`` through one pool slot (start-up of its process included)."""
    grid = runs[0].grid
    write_manifest(root, grid, runs)
    spec = ExecutionSpec.build(load_profile("local"), root, grid, root / "data").with_threads(1)
    before = _cpu()
    ended = drain(
        RunPool(spec, [r.run_id for r in runs], parallel=1, logs=root / "logs"), poll_s=0.05
    )
    assert all(e.outcome is Outcome.FINISHED for e in ended), ended
    return _cpu() - before


def train_cpu(run: RunConfig, data_root: Path) -> float:
    """CPU seconds of ``train(run)`` alone in this (warm) process."""
    t = time.process_time()
    result = train(run, data_root=data_root, log=None)
    assert result.status == "completed", result.error
    return time.process_time() - t


def cli_cpu(argv: list[str]) -> float:
    """CPU seconds of ``harness ARGV`` in a new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    code = "from harness.cli import main; main()"
    subprocess.run([sys.executable, "-c", code, *argv], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def summary(values: list[float], unit: str = "s") -> str:
    return f"{statistics.median(values):.3f} {unit} [{min(values):.3f}, {max(values):.3f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=16, help="runs through the pool (N >= 2)")
    ap.add_argument("--steps", type=int, default=300, help="steps per quadratic run")
    ap.add_argument("--repeats", type=int, default=3)
    args = parse_args_quick(ap, {"runs": 3, "steps": 50, "repeats": 1})
    print(f"{time.strftime('%Y-%m-%d %H:%M')}  {machine()}", flush=True)
    one, many, trained, helps, statuses = [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            runs = quadratic_runs(f"startup{i}", args.runs, args.steps)
            one.append(pool_cpu(Path(tmp) / f"one{i}", runs[:1]))
            many.append(pool_cpu(Path(tmp) / f"many{i}", runs))
            train_cpu(runs[0], Path(tmp))  # warm
            trained.append(train_cpu(runs[1], Path(tmp)))
            helps.append(cli_cpu(["--help"]))
            statuses.append(cli_cpu(["status", runs[0].grid, "--results", f"{tmp}/many{i}"]))
    per_run = [(m - o) / (args.runs - 1) for o, m in zip(one, many, strict=True)]
    overhead = [p - t for p, t in zip(per_run, trained, strict=True)]
    print(f"runs: {args.runs} quadratic runs of {args.steps} steps through one pool slot")
    print(f"  pool, 1 run: CPU {summary(one)}; {args.runs} runs: CPU {summary(many)}")
    print(
        f"  per run (marginal): CPU {summary(per_run)}; its training alone {summary(trained)}; "
        f"fixed overhead per run {summary(overhead)}"
    )
    print(f"cli: harness --help CPU {summary(helps)}; harness status CPU {summary(statuses)}")


if __name__ == "__main__":
    main()
