"""CPU time of a token-budget grid under wsd, with its cooldowns branched from one stable phase
and with every budget trained alone (issue 42).

One grid (the tiny GPT on synthetic tokens, AdamW, ``schedule: wsd``, ``decay_frac`` 0.2) over
``--budgets`` token budgets (``a, 2a, 4a, ...`` steps), ``--seeds`` seeds, is submitted with
``harness submit --local`` twice per repeat into empty results folders: ``branch: off`` and
``branch: auto``, modes alternating. Printed per mode (median [min, max] over ``--repeats``):

- ``CPU s``: user + system seconds of the submit and every process it started (``getrusage`` of
  the waited-for children): what the machine spent, whatever else loads it.
- ``wall s``: the submit's wall time (start-up, evaluation and rows included).
- ``steps trained``: the sum of the rows' ``steps_trained``, against the sum of ``steps_done``.

Example:
    python benchmarks/branching.py --budgets 4 --a 50 --repeats 3
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

import pyarrow.parquet as pq
from common import machine, parse_args_quick, synthetic_dataset  # benchmarks/common.py

from harness.core import paths

GRID = """name: {name}
base: {{dataset: {data}, model: tiny, optimizer: adamw, lr: 3.0e-3, seq_len: 64, batch_size: 8,
        schedule: wsd, decay_frac: 0.2, warmup_steps: 5, log_every: 10, eval_tokens: 4096}}
grid: {{tokens: [{tokens}]}}
seeds: {seeds}
branch: {branch}
"""


NAMES = {"off": "alone", "auto": "branched"}
"""The grid's name in each mode (a grid named ``off`` would be YAML's False)."""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _once(folder: Path, data: Path, branch: str, args: argparse.Namespace) -> tuple[float, ...]:
    """(CPU s, wall s, steps trained, steps done) of one submit of the grid."""
    tokens = ", ".join(str(args.a * 2**k * 8 * 64) for k in range(args.budgets))
    folder.mkdir(parents=True, exist_ok=True)
    grid = folder / f"{branch}.yaml"
    name = NAMES[branch]
    text = GRID.format(name=name, data=data, tokens=tokens, seeds=args.seeds, branch=branch)
    grid.write_text(text)
    root = folder / f"results-{branch}"
    argv = [sys.executable, "-c", "from harness.cli import main; main()", "submit", str(grid)]
    argv += ["--launcher", "local", "--results", str(root), "--data", str(folder)]
    cpu, t = _cpu(), time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ})
    assert done.returncode == 0, done.stderr + done.stdout
    wall, cpu = time.perf_counter() - t, _cpu() - cpu
    rows = [pq.read_table(p).to_pylist()[0] for p in paths.runs_dir(root, name).glob("*.parquet")]
    assert rows and all(r["status"] == "completed" for r in rows), rows
    return cpu, wall, sum(r["steps_trained"] for r in rows), sum(r["steps_done"] for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budgets", type=int, default=4, help="budgets a, 2a, 4a, ... (default 4)")
    ap.add_argument("--a", type=int, default=50, help="steps of the smallest budget")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    args = parse_args_quick(ap, {"budgets": 3, "a": 5, "repeats": 1})
    print(machine())
    print(f"load before: {os.getloadavg()[0]:.1f}")
    got: dict[str, list[tuple[float, ...]]] = {"off": [], "auto": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = synthetic_dataset(folder / "synthetic", 8192, 2_000_000, 100_000)
        for _ in range(args.repeats):
            for mode in got:
                got[mode].append(_once(folder / f"r{len(got[mode])}", data, mode, args))
    for mode, values in got.items():
        cpu = [v[0] for v in values]
        wall = [v[1] for v in values]
        print(
            f"branch {mode:4}: CPU s {statistics.median(cpu):.1f} [{min(cpu):.1f}, {max(cpu):.1f}]"
            f"  wall s {statistics.median(wall):.1f} [{min(wall):.1f}, {max(wall):.1f}]"
            f"  steps trained {values[0][2]:.0f} of {values[0][3]:.0f}"
        )
    ratio = statistics.median(v[0] for v in got["auto"]) / statistics.median(
        v[0] for v in got["off"]
    )
    print(f"CPU time with branching / without: {ratio:.2f}; load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
