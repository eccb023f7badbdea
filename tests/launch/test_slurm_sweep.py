"""A sweep on the real one-node SLURM test cluster, disturbed while it runs (issue 28):
three re-submits of the same grid, ``status`` and ``query`` in a loop, one array task killed with
``scancel``; then ``submit --wait`` finishes the grid. No run is trained twice, none is lost, no
command prints a traceback, and no good row is ever replaced by ``failed`` (every version of
every row file written during the sweep is read and checked).

Fails (never skips) under CI=true when the cluster is absent.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from harness.core import paths
from harness.core.result import RESULT_STATUSES
from harness.launch.slurm.records import read_submissions
from harness.launch.slurm.scheduler import active_tasks
from harness.store.db import connect
from tests.polling import wait_until
from tests.slurm_runs import FAST_WAIT, write_profile

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
LRS, SEEDS, STEPS = int(os.environ.get("HARNESS_SWEEP_LRS", "10")), 10, 30
"""100 quadratic runs of 30 steps in CI: 4 array tasks, two running while two wait, show every
disturbance (re-submits find runs done, running and queued; a running task is killed). The
nightly lane (``scripts/nightly.sh``) runs it at ``HARNESS_SWEEP_LRS=1000``: 10,000 runs, with
``pytest -s`` its timings."""
RUNS = LRS * SEEDS
PER_TASK = max(25, RUNS // 20)
READ_EVERY_S = 4.0
"""Pause between two ``status`` (and two ``query``) processes of the loops: about 10 of each
while the array runs."""
"""Runs per packed array task: 4 tasks of 25 at 100 runs, 20 tasks from 500 runs on."""
SLEEPY_SGD = f'''
import os
import time

import torch

AWAKE = {{awake!r}}


class SleepySGD(torch.optim.SGD):
    """SGD that sleeps at each step: {RUNS} runs sleep 480 s in all, so that the array (two tasks
    at a time) outlasts the re-submits on any machine, however fast its runs (at 120 s, on the
    machine loaded by coverage, the array ended before the test looked for a running task with
    rows); no more once the file AWAKE exists (the test is done disturbing the array: the sleep
    costs the test only until then)."""

    def step(self, closure=None):
        if not os.path.exists(AWAKE):
            time.sleep({480.0 / (RUNS * STEPS)!r})
        return super().step(closure)
'''
ROW_COLUMNS = ["run_id", "status", "job_id", "attempt", "steps_done"]


def _grid(folder: Path, launcher: str) -> Path:
    lrs = [round(1e-3 * (1 + 2 * i / LRS), 6) for i in range(LRS)]
    (folder / "sleepy_sgd.py").write_text(SLEEPY_SGD.format(awake=str(folder / "awake")))
    path = folder / "sweep.yaml"
    path.write_text(
        f"name: sweep\nlauncher: {launcher}\n"
        f"base: {{workload: quadratic, steps: {STEPS}, optimizer: ./sleepy_sgd.py:SleepySGD, "
        "log_every: 5}\n"
        f"grid: {{lr: {lrs}}}\nseeds: {SEEDS}\n"
    )
    return path


class _Harness:
    """Runs ``harness`` commands as processes and keeps what each printed."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env, self.outputs, self.lock = env, [], threading.Lock()
        self.seconds: dict[str, list[float]] = defaultdict(list)

    def __call__(self, *argv: object, timeout: float = 400) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-c", "from harness.cli import main; main()", *map(str, argv)]
        start = time.monotonic()
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=self.env, cwd=REPO, timeout=timeout
        )
        with self.lock:
            self.outputs.append((" ".join(map(str, argv[:2])), proc.stdout + proc.stderr))
            self.seconds[str(argv[0])].append(time.monotonic() - start)
        return proc


class _Versions:
    """Every version of every row file of a grid, read as it appears (per-run files are replaced
    in place, and a compaction moves rows into generations: both are read on every change)."""

    def __init__(self, root: Path, grid: str) -> None:
        self.folders = [paths.runs_dir(root, grid), paths.compact_dir(root, grid)]
        self.stamps: dict[Path, tuple[int, int, int]] = {}
        self.rows: set[tuple[Any, ...]] = set()

    def scan(self) -> None:
        for folder in self.folders:
            for path in sorted(folder.glob("*.parquet")) if folder.is_dir() else ():
                try:
                    st = path.stat()
                    stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
                    if self.stamps.get(path) == stamp:
                        continue
                    names = pq.read_schema(path).names
                    if "status" not in names:  # not rows (a generation's list of what it covers)
                        self.stamps[path] = stamp
                        continue
                    cols = [c for c in [*ROW_COLUMNS, "created_at"] if c in names]
                    table = pq.read_table(path, columns=cols)
                except (OSError, ValueError):
                    continue  # replaced or removed meanwhile: read at the next scan
                self.stamps[path] = stamp
                for row in table.to_pylist():
                    self.rows.add(tuple(row.get(c) for c in [*ROW_COLUMNS, "created_at"]))

    def by_run(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for values in sorted(self.rows, key=lambda v: (v[3] or 0, v[5])):
            row = dict(zip([*ROW_COLUMNS, "created_at"], values, strict=True))
            out[row["run_id"]].append(row)
        return out


def _loop(stop: threading.Event, every_s: float, action) -> threading.Thread:
    def body() -> None:
        while not stop.is_set():
            action()
            stop.wait(every_s)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread


def test_a_sweep_disturbed_while_it_runs_trains_each_run_once(slurm_env, prepared_data):
    started = time.monotonic()
    launcher = write_profile(slurm_env / "launchers", "slurm-sweep", runs_per_task=PER_TASK)
    grid = _grid(slurm_env, launcher)
    root = slurm_env / "results"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HARNESS_LAUNCHERS": str(slurm_env / "launchers"),
        "HARNESS_CHECKPOINT_EVERY_S": "1",
        **FAST_WAIT,
    }
    harness = _Harness(env)
    common = ["--results", root, "--data", prepared_data]

    first = harness("submit", grid, *common)
    out = first.stdout + first.stderr
    assert first.returncode == 0 and f"launching {RUNS}" in first.stdout, out
    (sub,) = read_submissions(root, "sweep")
    assert len(sub.tasks) == -(-RUNS // PER_TASK)
    versions = _Versions(root, "sweep")
    stop = threading.Event()
    sql = "SELECT status, count(*) FROM runs GROUP BY 1"
    loops = [  # readers every READ_EVERY_S while the array runs (a process each: about 1 s CPU)
        _loop(stop, 0.5, versions.scan),
        _loop(stop, READ_EVERY_S, lambda: harness("status", "sweep", "--results", root)),
        _loop(stop, READ_EVERY_S, lambda: harness("query", sql, "--results", root)),
    ]
    try:
        # three re-submits while the array runs: each finds every run done or queued
        for _ in range(3):
            again = harness("submit", grid, *common)
            assert again.returncode == 0, again.stdout + again.stderr
            said = again.stdout
            assert f"skipped {RUNS} " in said and "launching 0 " in said, said

        # kill one array task that is running and has finished some of its runs
        def running_with_rows() -> str | None:
            active = active_tasks({sub.job_id})
            done = {r[0] for r in versions.rows}
            for index, run_ids in enumerate(sub.tasks):
                task = sub.task_of(index)
                if active.get(task) == "RUNNING" and done & set(run_ids):
                    return task
            return None

        killed = wait_until(running_with_rows, 300, "a running task with rows", every=0.5)
        subprocess.run(["scancel", killed], check=True)
        (slurm_env / "awake").touch()  # every disturbance done: the rest of the runs need no sleep
        array_s = 400 * max(1, RUNS // 500)  # a hang guard, scaled with the sweep
        wait_until(lambda: not active_tasks({sub.job_id}), array_s, "the array to end", every=1.0)
        last = harness("submit", grid, *common, "--wait", "--retry", "cancelled", timeout=600)
        assert last.returncode == 0, last.stdout + last.stderr
    finally:
        stop.set()
        for thread in loops:
            thread.join(timeout=120)
    versions.scan()
    wall = time.monotonic() - started
    print(
        f"sweep of {RUNS} runs: {wall:.0f} s wall ({RUNS / wall:.2f} runs/s), "
        f"{len(harness.outputs)} commands"
    )
    for command, seconds in sorted(harness.seconds.items()):
        ordered = sorted(seconds)
        median = ordered[len(ordered) // 2]
        print(
            f"  harness {command}: {len(ordered)} calls, median {median:.1f} s "
            f"[{ordered[0]:.1f}, {ordered[-1]:.1f}] wall"
        )

    # no command printed a traceback (the loops' commands included)
    for command, text in harness.outputs:
        assert "Traceback" not in text, f"harness {command}:\n{text[-3000:]}"
    # every run has exactly one result row over every version written; only runs of the killed
    # task have a second attempt (its retry), after a row that is not a result
    history = versions.by_run()
    killed_runs = set(sub.tasks[int(killed.rpartition("_")[2])])
    assert len(history) == RUNS
    for run_id, rows in history.items():
        results = [r for r in rows if r["status"] in RESULT_STATUSES]
        assert len(results) == 1, (run_id, rows)
        assert results[0]["steps_done"] == STEPS, (run_id, rows)
        assert rows[-1] is results[0], (run_id, rows)  # a result is never replaced
        if len(rows) > 1:
            assert run_id in killed_runs, (run_id, rows)
            assert all(r["status"] == "cancelled" for r in rows[:-1]), (run_id, rows)
    # no step logged twice in any curve
    con = connect(root, "sweep")
    repeated = con.execute(
        "SELECT run_id, step, count(*) FROM curves GROUP BY ALL HAVING count(*) > 1 LIMIT 5"
    ).fetchall()
    assert repeated == []
    points = con.execute("SELECT count(DISTINCT run_id), max(step) FROM curves").fetchone()
    assert points == (RUNS, STEPS)
