"""Processes that write and read one grid's results at once (tests/store/test_store_versions.py).

``python store_load.py write ROOT RUNS ROUNDS``: writes a first row and curve of each of RUNS
runs, then ROUNDS rounds of a newer attempt of every run (each attempt's curve holds
``attempt + 2`` points and its row ``steps_done = attempt``), compacting the grid every 7 writes.

``python store_load.py read ROOT RUNS OUT``: until ``ROOT/stop`` exists, connects and checks what
the views show (every run once, completed, its curve from its newest row's attempt or the one
being written), then writes a JSON summary to OUT: queries made, attempts seen, errors.

Uses only what earlier versions of the store offered too (``write_result``, ``compact``,
``connect``), so the same load runs against them.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

GRID = "load"


def attempt_result(attempt: int):  # type: ignore[no-untyped-def]
    """A completed result of ``attempt``: ``steps_done = attempt``, a curve of ``attempt + 2``
    points (also the writers of tests/compact_load.py)."""
    from harness.core.result import RunResult

    curve = [
        {
            "step": 2 * (i + 1),
            "tokens": 512 * (i + 1),
            "train_loss": 5.0 - 0.01 * i,
            "lr": 1e-3,
            "val_loss": None,
            "elapsed_s": 0.1 * i,
        }
        for i in range(attempt + 2)
    ]
    metrics = {"val_loss": 3.0, "val_ppl": 20.0, "train_loss": 3.1}
    return RunResult(
        status="completed",
        params=1,
        steps_done=attempt,
        tokens_seen=attempt,
        device="cpu",
        metrics=metrics,
        curve=curve,
    )


def runs(root: Path, n: int) -> list:  # type: ignore[type-arg]
    from runs import tiny_run

    return [tiny_run(root / "data", grid=GRID, lr=1e-4 * (i + 1)) for i in range(n)]


def write(root: Path, n: int, rounds: int) -> None:
    from harness.store.compact import compact
    from harness.store.rows import write_result

    written = 0
    for attempt in range(1, rounds + 2):
        for run in runs(root, n):
            write_result(root, run, attempt_result(attempt), {"attempt": attempt, "hostname": "w"})
            written += 1
            if written % 7 == 0:
                compact(root, GRID)
        (root / f"round-{attempt}").touch()


def read(root: Path, n: int, out: Path) -> None:
    from harness.store.db import connect

    queries, errors, seen = 0, [], set()
    while not (root / "stop").exists():
        try:
            con = connect(root, GRID)
            rows = con.execute("SELECT run_id, status, steps_done FROM runs").fetchall()
            counts = dict(
                con.execute("SELECT run_id, count(*) FROM curves GROUP BY run_id").fetchall()
            )
            queries += 1
            if len(rows) != n or any(s != "completed" for _, s, _ in rows):
                errors.append(f"runs view: {sorted(rows)}")
            for run_id, _, steps in rows:
                seen.add(steps)
                if counts.get(run_id) not in (steps + 2, steps + 3):  # its curve, or the next
                    errors.append(f"run {run_id} attempt {steps}: {counts.get(run_id)} points")
        except Exception:  # what a reader meets is the finding
            errors.append(traceback.format_exc(limit=3))
        if len(errors) > 20:
            break
    out.write_text(json.dumps({"queries": queries, "errors": errors, "seen": sorted(seen)}))


if __name__ == "__main__":
    what, root = sys.argv[1], Path(sys.argv[2])
    if what == "write":
        write(root, int(sys.argv[3]), int(sys.argv[4]))
    else:
        read(root, int(sys.argv[3]), Path(sys.argv[4]))
