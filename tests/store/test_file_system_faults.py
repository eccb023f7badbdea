"""A full disk and a read-only results folder, on real (tmpfs) file systems (issue 11, items 1
and 8): one line naming the path and the cause, exit 2, no traceback, no finished run lost."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from harness.analysis.testing import write_run
from harness.cli import main
from harness.core import paths
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.store.db import newest_values
from harness.store.manifest import write_manifest
from tests.local_submits import alive, descendants, grid_file, log_of, start_submit
from tests.polling import wait_until
from tests.small_fs import fill, kept_full, read_only, tmpfs

STEPS = 100  # long enough that the runs are still training when the disk fills (under load)


def cli(*args: object) -> tuple[int, str]:
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, r.output


@pytest.mark.slow
def test_runs_finished_on_a_full_disk_are_kept_and_written_by_the_next_submit(
    tmp_path, prepared_data
):
    grid = grid_file(tmp_path, "full", [0, 1], STEPS)
    runs = load_grid(grid, vocab=vocab_lookup(prepared_data), local=True).runs
    ids, spill = [r.run_id for r in runs], tmp_path / "spill"
    with tmpfs(tmp_path / "fs", 64) as fs:
        root = fs / "results"
        submit = start_submit(grid, root, prepared_data, spill)
        wait_until(lambda: all(log_of(root, "full", r).exists() for r in ids), 120, "runs")
        wait_until(lambda: "step 2/" in log_of(root, "full", ids[0]).read_text(), 120, "steps")
        processes = descendants(submit.pid)
        with kept_full(fs) as filler:  # from here on the results file system takes nothing more
            out, err = submit.communicate(timeout=300)

        assert submit.returncode == 2, err
        errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1 and "Traceback" not in err, err
        assert "No space left on device (free on that file system: " in errors[0]
        assert str(root) in errors[0] and f"kept in {spill}" in errors[0]
        assert "the completed result of run" in errors[0]  # failing checkpoints failed no run
        assert wait_until(lambda: not any(alive(p) for p in processes), 10, "processes gone")
        spilled = sorted(p.stem for p in spill.rglob("*.json"))
        assert spilled and set(spilled) <= set(ids)
        assert newest_values(root, "full", ["status"]) == {}  # no row made it

        filler.unlink()  # space again: the next submit writes what was kept, trains the rest
        again = start_submit(grid, root, prepared_data, spill)
        out, err = again.communicate(timeout=300)
        assert again.returncode == 0, err
        assert f"wrote {len(spilled)} results kept in spill files" in out
        assert f"launching {len(ids) - len(spilled)}" in out
        rows = newest_values(root, "full", ["status", "steps_done"])
        assert rows == dict.fromkeys(ids, ("completed", STEPS))
        assert not list(spill.rglob("*.json"))


@pytest.mark.slow
def test_a_full_disk_at_submit_is_one_line(tmp_path, prepared_data):
    grid = grid_file(tmp_path, "nospace", [0], STEPS)
    with tmpfs(tmp_path / "fs", 1) as fs:
        fill(fs)
        code, out = cli(
            "submit", grid, "--local", "--results", fs / "results", "--data", prepared_data
        )
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert out.startswith(f"error: {fs / 'results' / 'nospace'}")
    assert "No space left on device (free on that file system: 0 B)" in out


@pytest.mark.slow
def test_a_read_only_results_folder_is_read_and_writes_are_one_line(tmp_path, prepared_data):
    grid = grid_file(tmp_path, "ro", [0, 1], STEPS)
    runs = load_grid(grid, vocab=vocab_lookup(prepared_data), local=True).runs
    with tmpfs(tmp_path / "fs", 8) as fs:
        root = fs / "results"
        write_manifest(root, "ro", runs[:1])
        write_run(root, runs[0], val_ppl=100.0)
        read_only(fs)

        assert cli("status", "ro", "--results", root)[0] == 0
        code, out = cli("query", "SELECT status FROM runs", "--format", "csv", "--results", root)
        assert code == 0 and out.split() == ["status", "completed"]
        for args in (
            ["submit", grid, "--local", "--data", prepared_data],
            ["compact", "ro"],
            ["figures", "ro", "--figure", "loss_curves"],
        ):
            code, out = cli(*args, "--results", root)
            assert code == 2 and len(out.strip().splitlines()) == 1, (args, out)
            assert out.startswith(f"error: {root}") and "Read-only file system" in out, out
        assert not paths.checkpoint_path(root, "ro", runs[1].run_id).parent.exists()


def test_a_spilled_result_is_written_once_and_never_over_a_newer_row(
    tmp_path, monkeypatch, prepared_data
):
    from harness.core.provenance import provenance
    from harness.core.result import RunResult
    from harness.store.manifest import load_run
    from harness.store.rows import write_result
    from harness.store.spill import ResultSpilled, recover, write_or_spill
    from tests.runs import tiny_run

    monkeypatch.setenv("HARNESS_SPILL", str(tmp_path / "spill"))
    root = tmp_path / "results"
    runs = [tiny_run(prepared_data, grid="sp", seed=s) for s in (0, 1)]
    write_manifest(root, "sp", runs)
    paths.curves_dir(root, "sp").write_text("a file where a folder should be")  # writes fail
    done = RunResult(status="completed", steps_done=6, curve=[{"step": 6, "train_loss": 5.0}])
    for run in runs:
        with pytest.raises(ResultSpilled, match=r"kept in .*spill"):
            write_or_spill(root, run, done, provenance("j1"))
    paths.curves_dir(root, "sp").unlink()
    write_result(root, runs[1], RunResult(status="failed"), provenance("j2"))  # newer: kept

    assert recover(root, "sp", lambda r: load_run(root, "sp", r)) == [runs[0].run_id]

    rows = newest_values(root, "sp", ["status", "job_id", "steps_done"])
    assert rows == {runs[0].run_id: ("completed", "j1", 6), runs[1].run_id: ("failed", "j2", 0)}
    assert not list((tmp_path / "spill").rglob("*.json"))
    assert recover(root, "sp", lambda r: load_run(root, "sp", r)) == []


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_query_output_to_a_full_disk_is_one_line_naming_the_file(tmp_path, prepared_data, fmt):
    grid = grid_file(tmp_path, "qo", [0, 1], STEPS)
    runs = load_grid(grid, vocab=vocab_lookup(prepared_data), local=True).runs
    root = tmp_path / "results"
    write_manifest(root, "qo", runs)
    for run in runs:
        write_run(root, run, val_ppl=100.0, points=200)
    sql = "SELECT c.*, r.val_ppl FROM curves c JOIN runs r USING (run_id)"
    with tmpfs(tmp_path / "fs", 1) as fs:
        fill(fs)
        target = fs / f"out.{fmt}"

        code, out = cli("query", sql, "--format", fmt, "-o", target, "--results", root)

        assert code == 2 and len(out.strip().splitlines()) == 1, out
        assert out.startswith(f"error: {target}: No space left on device"), out
        assert sorted(p.name for p in fs.iterdir()) == ["filler"]  # no partial file
