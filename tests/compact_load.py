"""Writer processes for the attack on ``harness compact`` while runs write
(tests/store/test_compact_live.py, issue 29).

``python compact_load.py plan ROOT WRITERS RUNS``: writes the grid's manifest (WRITERS x RUNS
runs).

``python compact_load.py write ROOT WRITER WRITERS RUNS ATTEMPTS``: writer WRITER writes its
RUNS runs through the store's real write path (:func:`harness.store.spill.write_or_spill`, which
the process that trained a run calls, its compaction by itself included), ATTEMPTS times each:
attempt ``a`` has ``steps_done = a`` and a curve of ``a + 2`` points at steps 2, 4, ... After
each write returns, the line ``run_id attempt`` is appended to ``ROOT/../written-WRITER.txt``;
after each attempt's round it waits for ``ROOT/../go-ATTEMPT`` (the test's reads and compactions
of that round are under way), so that every round overlaps them however loaded the machine.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

GRID = "load"


def runs(root: Path, writer: int, n: int) -> list:  # type: ignore[type-arg]
    from runs import tiny_run

    return [
        tiny_run(root.parent / "data", grid=GRID, lr=1e-4 * (writer * n + i + 1)) for i in range(n)
    ]


def plan(root: Path, writers: int, n: int) -> None:
    from harness.store.manifest import write_manifest

    write_manifest(root, GRID, [r for w in range(writers) for r in runs(root, w, n)])


def write(root: Path, writer: int, n: int, attempts: int) -> None:
    from store_load import attempt_result

    from harness.store.spill import write_or_spill

    log = root.parent / f"written-{writer}.txt"
    for attempt in range(1, attempts + 1):
        for run in runs(root, writer, n):
            write_or_spill(root, run, attempt_result(attempt), {"hostname": f"w{writer}"})
            with open(log, "a") as fh:
                fh.write(f"{run.run_id} {attempt}\n")
            time.sleep(0.25)  # spread the writes over the compactions and reads
        while not (root.parent / f"go-{attempt}").exists():
            time.sleep(0.05)


if __name__ == "__main__":
    what, root = sys.argv[1], Path(sys.argv[2])
    if what == "plan":
        plan(root, int(sys.argv[3]), int(sys.argv[4]))
    else:
        write(root, int(sys.argv[3]), int(sys.argv[5]), int(sys.argv[6]))
