"""Which of a run's rows is newest is decided by its attempt number, never by a clock (issue 20,
B14): a retry on a host whose clock is an hour behind (libfaketime) is not hidden by the older
consolidated row of the attempt that failed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.core import paths
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.launch.worker.job import write_status
from harness.store.compact import compact
from harness.store.db import newest_values
from harness.store.manifest import write_manifest
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name
from tests.local_submits import REPO, grid_file
from tests.small_fs import _unavailable

pytestmark = pytest.mark.usefixtures("runs_in_process")  # runs train in the test's process


def cli(*args: object) -> tuple[int, str]:
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, r.output


def _created(path) -> object:
    return pq.read_table(path).column("created_at").to_pylist()


@pytest.mark.slow
def test_a_retry_on_a_host_an_hour_behind_is_the_newest_row(tmp_path, prepared_data):
    faketime = shutil.which("faketime")
    if faketime is None:
        _unavailable("libfaketime is not installed (apt-get install faketime)")
    grid = grid_file(tmp_path, "skew", [0], 6)
    runs = load_grid(grid, vocab=vocab_lookup(prepared_data), local=True).runs
    run_id, root = runs[0].run_id, tmp_path / "results"
    write_manifest(root, "skew", runs)
    write_status(root, "skew", run_id, "failed", "the node died", "j1")  # attempt 1, now
    compact(root, "skew")  # its row now lives in compact/runs-000001.parquet

    # attempt 2 on a host whose clock is an hour behind: submit and its run processes
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [
        faketime,
        "-f",
        "-1h",
        sys.executable,
        "-c",
        "from harness.cli import main; main()",
        "submit",
        str(grid),
        "--local",
        "--retry",
        "failed",
        "--results",
        str(root),
        "--data",
        str(prepared_data),
    ]
    done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "launching 1" in done.stdout, done.stdout + done.stderr

    (failed_at,) = _created(paths.compact_dir(root, "skew") / "runs-000001.parquet")
    (completed_at,) = _created(paths.run_path(root, "skew", run_id, "000002"))
    assert completed_at < failed_at  # the clocks disagree with the order of the attempts
    assert newest_values(root, "skew", ["status", "attempt"]) == {run_id: ("completed", 2)}
    code, out = cli("status", "skew", "--results", root)
    assert code == 0 and "failed" not in out.split("\n", 2)[2], out
    assert next(ln for ln in out.splitlines() if ln.startswith("local")).split()[1] == "1", out
    code, out = cli(
        "query", "SELECT status, attempt FROM runs", "--format", "csv", "--results", root
    )
    assert code == 0 and out.split() == ["status,attempt", "completed,2"], out
    code, out = cli(
        "submit", grid, "--local", "--retry", "failed", "--results", root, "--data", prepared_data
    )
    assert code == 0 and "skipped 1 with a result" in out and "launching 0" in out, out
    compact(root, "skew")  # both rows in one generation: the attempt still decides
    code, out = cli("query", "SELECT status FROM runs", "--format", "csv", "--results", root)
    assert out.split() == ["status", "completed"], out


def test_a_row_written_before_attempts_were_recorded_is_older_than_every_numbered_one(
    tmp_path, prepared_data
):
    """A legacy row (no attempt column) counts as attempt 0, whatever its time says."""
    import datetime as dt

    import pyarrow as pa

    from harness.core.provenance import provenance
    from harness.core.result import RunResult
    from harness.store.rows import next_attempt, write_result
    from tests.runs import tiny_run

    run = tiny_run(prepared_data, grid="old")
    root = tmp_path / "results"
    write_manifest(root, "old", [run])
    future = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    write_result(root, run, RunResult(status="failed"), provenance() | {"created_at": future})
    first = paths.run_path(root, "old", run.run_id, "000001")
    legacy = pq.read_table(first).drop_columns(["attempt"])
    compacted = paths.compact_dir(root, "old") / "runs-000001.parquet"
    compacted.parent.mkdir(parents=True)
    pq.write_table(legacy, compacted)  # an earlier version's consolidated row
    first.unlink()
    paths.curve_path(root, "old", run.run_id, "000001").unlink()  # named otherwise then
    assert next_attempt(root, "old", run.run_id) == 1

    write_result(root, run, RunResult(status="completed", steps_done=6), provenance())

    assert newest_values(root, "old", ["status", "attempt"]) == {run.run_id: ("completed", 1)}
    assert next_attempt(root, "old", run.run_id) == 2
    assert isinstance(legacy, pa.Table)
