"""``harness compact`` while runs write (issue 29, "not yet attacked"): real processes only.

Three writer processes write rows and curves of their runs through the store's real write path
(four attempts each, a round at a time, each round overlapping a compaction and the reads);
meanwhile ``harness compact`` runs again and again (every third one killed with SIGKILL part
way), and ``harness query`` and ``harness status`` read in a loop.
"""

from __future__ import annotations

import csv
import io
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.core import paths
from harness.store import layout

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
GRID = "load"
WRITERS, RUNS, ATTEMPTS = 3, 12, 4

ROWS_SQL = "SELECT run_id, steps_done FROM runs"
CURVES_SQL = "SELECT run_id, count(*) AS n, max(step) AS top FROM curves GROUP BY run_id"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(TESTS)])}


def _harness(*args: str) -> subprocess.Popen[str]:
    code = "from harness.cli import main; main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=_env(),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _query(root: Path, sql: str) -> subprocess.Popen[str]:
    return _harness("query", sql, "--format", "csv", "--results", str(root))


def _finish(p: subprocess.Popen[str]) -> tuple[list[dict[str, str]], str]:
    """(CSV rows of its output, what went wrong: "" when it exited 0 with nothing on stderr)."""
    out, err = p.communicate(timeout=300)
    if p.returncode != 0 or "Traceback" in err or err.strip():
        return [], f"{' '.join(p.args[3:5])} exited {p.returncode}: {err[-600:]}"
    return list(csv.DictReader(io.StringIO(out))), ""


def _read(root: Path, sql: str) -> tuple[list[dict[str, str]], str]:
    return _finish(_query(root, sql))


def _versions_on_disk(root: Path) -> set[tuple[str, int]]:
    """(run_id, steps_done) of every row in every file of the grid: what was ever kept."""
    files = [*layout.loose(paths.runs_dir(root, GRID)), *paths.generations(root, GRID, "runs")]
    tables = [pq.read_table(p, columns=["run_id", "steps_done"]) for p in files]
    return {(r["run_id"], r["steps_done"]) for r in pa.concat_tables(tables).to_pylist()}


@pytest.mark.slow
def test_compact_while_runs_write_loses_no_row_and_doubles_none(tmp_path):
    root = tmp_path / "results"
    script = str(TESTS / "compact_load.py")
    subprocess.run(
        [sys.executable, script, "plan", str(root), str(WRITERS), str(RUNS)],
        env=_env(),
        check=True,
        timeout=300,
    )
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                script,
                "write",
                str(root),
                str(w),
                str(WRITERS),
                str(RUNS),
                str(ATTEMPTS),
            ],
            env=_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WRITERS)
    ]
    rng = random.Random(29)
    problems: list[str] = []
    seen: dict[str, int] = {}  # run_id -> highest steps_done a query showed
    reads = compactions = kills = merged = 0
    while (any(w.poll() is None for w in writers) or reads < 3 or kills < 1) and compactions < 60:
        writing = any(w.poll() is None for w in writers)
        compactor = _harness("compact", GRID, "--results", str(root))
        readers = [
            _query(root, ROWS_SQL),
            _query(root, CURVES_SQL),
            _harness("status", GRID, "--results", str(root)),
        ]
        killed = False
        if compactions % 3 == 2 or (not writing and not kills):  # kill -9 part way
            try:  # until one lands: an idle machine compacts fast
                compactor.wait(timeout=rng.uniform(0.1, 3.0) if writing else rng.uniform(0.1, 1.0))
            except subprocess.TimeoutExpired:
                compactor.send_signal(signal.SIGKILL)
                killed = True
        out, err = compactor.communicate(timeout=300)
        compactions += 1
        kills += killed
        merged += writing and " generation " in out
        if not killed and (compactor.returncode != 0 or "Traceback" in err):
            problems.append(f"compact exited {compactor.returncode}: {err[-600:]}")
        (rows, rows_err), (points, points_err), (_, status_err) = (_finish(p) for p in readers)
        reads += 1
        problems += [e for e in (rows_err, points_err, status_err) if e]
        ids = [r["run_id"] for r in rows]
        if len(ids) != len(set(ids)):
            problems.append(f"a run shown twice: {sorted(i for i in ids if ids.count(i) > 1)}")
        shown = {r["run_id"]: int(r["steps_done"]) for r in rows}
        lost = [r for r in seen if r not in shown]
        older = [r for r in shown if shown[r] < seen.get(r, 0)]
        if lost or older:
            problems.append(f"rows lost {lost[:3]} or gone back to an older version {older[:3]}")
        seen.update(shown)
        doubled = [p for p in points if 2 * int(p["n"]) != int(p["top"])]
        if doubled:
            problems.append(f"curve points doubled or missing: {doubled[:3]}")
        (tmp_path / f"go-{reads}").touch()  # the writers' next round
        if len(problems) > 5:
            break
    for w in writers:
        _, err = w.communicate(timeout=600)
        assert w.returncode == 0, err
        assert "Traceback" not in err, err
    assert problems == [], "\n".join(problems)
    # the faults landed: compactions consolidated files while writers wrote, one was killed
    print("compactions", compactions, "kills", kills, "merged", merged, "reads", reads)
    assert kills >= 1 and merged >= 2 and reads >= 3, (kills, merged, reads)

    done = _harness("compact", GRID, "--results", str(root))
    _, err = done.communicate(timeout=300)
    assert done.returncode == 0, err
    rows, err = _read(root, ROWS_SQL)
    assert err == "", err
    assert sorted(int(r["steps_done"]) for r in rows) == [ATTEMPTS] * (WRITERS * RUNS)
    lines = [
        ln
        for w in range(WRITERS)
        for ln in (tmp_path / f"written-{w}.txt").read_text().splitlines()
    ]
    written = {(run_id, int(a)) for run_id, a in (ln.split() for ln in lines)}
    assert len(written) == WRITERS * RUNS * ATTEMPTS
    assert written <= _versions_on_disk(root)  # every version written is still on disk
