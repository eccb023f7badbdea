"""The CLI through click's runner: submit --local, idempotency, query, status, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from harness.cli import main
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name
from tests.runs import launch_and_wait

GRID = """
name: cli_grid
base:
  model: tiny
  dataset: classics-bpe8k
  optimizer: adamw
  seq_len: 32
  batch_size: 8
  tokens: 1536
  eval_tokens: 2048
  log_every: 2
grid:
  optimizer:
    adamw: {lr: [3.0e-3]}
    sgd: {lr: [1.0e+4], grad_clip: [null]}
seeds: [0, 1]
local:
  base: {tokens: 1280}
"""


def invoke(*args: str) -> click.testing.Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def grid_file(tmp_path: Path) -> Path:
    p = tmp_path / "cli_grid.yaml"
    p.write_text(textwrap.dedent(GRID))
    return p


QUADRATIC = GRID.replace("model: tiny\n  dataset: classics-bpe8k", "workload: quadratic").replace(
    "seq_len: 32\n  batch_size: 8\n  tokens: 1536\n  eval_tokens: 2048\n", "steps: 6\n"
)
"""The grid on the quadratic workload: what the CLI does with runs, whatever trains them."""


@pytest.mark.usefixtures("runs_in_process")
def test_submit_local_query_status_and_resubmit(tmp_path):
    grid_file = tmp_path / "cli_grid.yaml"
    grid_file.write_text(textwrap.dedent(QUADRATIC.replace("base: {tokens: 1280}", "base: {}")))
    res_root = tmp_path / "results"
    common = ["--results", str(res_root)]
    r = invoke("submit", str(grid_file), "--local", *common, "--data", str(tmp_path))
    assert r.exit_code == 0, r.output
    assert "launching 4" in r.output
    rows = sorted((res_root / "cli_grid" / "runs").glob("*.parquet"))
    assert len(rows) == 4
    assert len(list((res_root / "cli_grid" / "curves").glob("*.parquet"))) == 4

    r = invoke(
        "query",
        "SELECT optimizer, status, val_loss FROM runs ORDER BY optimizer, seed",
        "--format",
        "json",
        *common,
    )
    data = json.loads(r.output)
    assert [d["status"] for d in data] == ["completed", "completed", "diverged", "diverged"]
    assert all(d["val_loss"] is not None for d in data[:2])

    r = invoke("status", str(grid_file), *common)
    assert r.exit_code == 0
    local_line = next(line for line in r.output.splitlines() if line.startswith("local"))
    assert local_line.split() == ["local", "2", "2", "0", "0", "0", "0", "0", "4"]

    before = {p: p.stat().st_mtime_ns for p in rows}
    r = invoke("submit", str(grid_file), "--local", *common, "--data", str(tmp_path))
    assert r.exit_code == 0
    assert "skipped 4" in r.output and "launching 0" in r.output
    assert {p: p.stat().st_mtime_ns for p in rows} == before  # nothing re-ran

    r = invoke("query", "SELECT count(*) AS n FROM manifest", "--format", "csv", *common)
    assert r.output.split() == ["n", "4"]
    out = tmp_path / "runs.parquet"
    r = invoke("query", "SELECT * FROM runs", "--format", "parquet", "-o", str(out), *common)
    assert pq.read_table(out).num_rows == 4


def test_dry_run_submits_nothing(tmp_path, grid_file):
    res_root = tmp_path / "results"
    r = invoke(
        "submit", str(grid_file), "--dry-run", "--launcher", "local", "--results", str(res_root)
    )
    assert r.exit_code == 0, r.output
    assert "runs: 4" in r.output and "GPU-hours" in r.output and "FLOPs" in r.output
    assert not res_root.exists()


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_dry_run_prints_every_planned_runs_resolved_config(tmp_path, grid_file, fmt):
    """One row per run, its run_id and every field: a protocol can be checked without running."""
    from harness.core.catalogue import CATALOGUE
    from harness.data.catalogue import vocab_lookup
    from harness.grid.load import load_grid

    res_root = tmp_path / "results"
    r = invoke(
        "submit",
        str(grid_file),
        "--dry-run",
        "--launcher",
        "local",
        "--format",
        fmt,
        "--results",
        str(res_root),
    )
    assert r.exit_code == 0, r.output
    if fmt == "json":
        rows = json.loads(r.output)
    else:
        import csv
        import io

        rows = list(csv.DictReader(io.StringIO(r.output)))
    runs = load_grid(grid_file, vocab=vocab_lookup(tmp_path)).runs
    assert [row["run_id"] for row in rows] == [run.run_id for run in runs]
    # every run field but the sparse ones no run sets (wsd's, for these cosine runs)
    assert list(rows[0]) == ["run_id", *(f.name for f in CATALOGUE if not f.meta.sparse)]
    by_opt = {row["optimizer"]: row for row in rows if row["seed"] in (0, "0")}
    assert {k: str(by_opt["sgd"][k]) for k in ("lr", "momentum", "weight_decay_mode")} == {
        "lr": "10000.0",
        "momentum": "0.9",
        "weight_decay_mode": "decoupled",
    }
    assert by_opt["adamw"]["momentum"] in (None, "")  # NULL where a field does not apply
    assert by_opt["adamw"]["steps"] in (6, "6") and by_opt["sgd"]["grad_clip"] in (None, "")
    assert not res_root.exists()
    r = CliRunner().invoke(
        main, ["submit", str(grid_file), "--local", "--format", fmt, "--results", str(res_root)]
    )
    assert r.exit_code == 2 and "--dry-run" in r.output and not res_root.exists()


@pytest.mark.parametrize("launcher", ["local", "slurm-a100"])
def test_a_dry_run_imports_neither_torch_nor_duckdb(tmp_path, grid_file, launcher):
    # Planning 10,000 runs takes about a second; importing torch alone costs most of one more.
    code = textwrap.dedent(f"""
        import sys
        from click.testing import CliRunner
        from harness.cli import main
        r = CliRunner().invoke(main, ["submit", {str(grid_file)!r}, "--dry-run", "--launcher",
                               {launcher!r}, "--results", {str(tmp_path / "results")!r}])
        assert r.exit_code == 0, r.output
        print(sorted(m for m in ("torch", "duckdb", "pyarrow") if m in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


BAD_INPUTS = [
    (["submit", "{grid_bad}", "--local"], "unknown key 'colour'"),
    (["submit", "{grid_launcher}"], "launcher: unknown launcher 'nowhere'; valid choices: "),
    (["submit", "{grid_figure}", "--local"], "figures: unknown figure 'nope'; valid choices: "),
    (["submit", "{grid}", "--launcher", "moon"], "unknown launcher 'moon'"),
    (["submit", "{grid}", "--local", "--retry", "completed"], "never run again"),
    (["submit", "{grid}", "--local", "--retry", "exploded"], "unknown state"),
    (["submit", "{missing}", "--local"], "no such grid file"),
    (["query", "SELECT nope FROM runs"], "SQL error"),
    (["status", "no_such_grid"], "no results for grid 'no_such_grid'"),
]


@pytest.mark.parametrize(("args", "message"), BAD_INPUTS)
def test_bad_input_exit_2_nothing_written(tmp_path, grid_file, args, message):
    fmt = {"grid": str(grid_file), "missing": str(tmp_path / "x.yaml")}
    for name, extra in [
        ("bad", "colour: red"),
        ("launcher", "launcher: nowhere"),
        ("figure", "figures: [nope]"),
    ]:
        bad = tmp_path / f"{name}.yaml"
        bad.write_text(textwrap.dedent(GRID).replace("launcher: local\n", "") + extra + "\n")
        fmt[f"grid_{name}"] = str(bad)
    res_root = tmp_path / "results"
    argv = [a.format(**fmt) for a in args] + ["--results", str(res_root)]
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert len([line for line in r.output.splitlines() if line.startswith("error:")]) == 1
    assert not res_root.exists()


def _commands(group: click.Group, prefix: tuple[str, ...] = ()):
    for name, cmd in group.commands.items():
        yield (*prefix, name), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*prefix, name))


def test_every_command_has_help_with_an_example():
    for path, cmd in _commands(main):
        r = invoke(*path, "--help")
        assert r.exit_code == 0, path
        if not isinstance(cmd, click.Group):
            assert "Example" in r.output or "example" in r.output, path


@pytest.mark.slow
def test_a_killed_run_process_is_recorded_as_failed(tmp_path, grid_file, prepared_data):
    from harness.data.catalogue import vocab_lookup
    from harness.grid.load import load_grid
    from harness.launch.local.launcher import LocalLauncher
    from harness.launch.profile import load_profile
    from harness.store.manifest import write_manifest
    from harness.store.rows import newest_row_file, read_row

    root = tmp_path / "results"
    run = load_grid(grid_file, local=True, vocab=vocab_lookup(prepared_data)).runs[0]
    write_manifest(root, run.grid, [run])
    # a run whose process is killed: an eval budget so large the run never ends, then SIGKILL
    import dataclasses
    import os
    import signal
    import threading

    data = dataclasses.replace(run.data, tokens=8 * 32 * 100_000, steps=100_000)
    slow = dataclasses.replace(run, data=data)
    write_manifest(root, run.grid, [slow])

    def kill_soon() -> None:
        import multiprocessing as mp
        import time

        log = root / run.grid / "submissions" / "local" / f"{slow.run_id}.log"
        for _ in range(1200):
            time.sleep(0.1)
            if log.exists() and "step" in log.read_text():  # training, past its start-up
                for child in mp.active_children():
                    if child.name == f"run-{slow.run_id}":
                        os.kill(child.pid, signal.SIGKILL)
                return

    threading.Thread(target=kill_soon, daemon=True).start()
    report = launch_and_wait(LocalLauncher(load_profile("local")), [slow], root, prepared_data)
    assert report.statuses == {slow.run_id: "failed"}
    row_file = newest_row_file(root, run.grid, slow.run_id)
    assert row_file is not None
    row = read_row(row_file)
    assert row["status"] == "failed" and "process died by SIGKILL" in row["error"]


def test_eval_tokens_beyond_the_validation_split_is_refused_before_launch(
    tmp_path, grid_file, prepared_data
):
    text = grid_file.read_text().replace("eval_tokens: 2048", "eval_tokens: 1.0e+8")
    grid_file.write_text(text)
    res_root = tmp_path / "results"
    r = CliRunner().invoke(
        main,
        [
            "submit",
            str(grid_file),
            "--local",
            "--results",
            str(res_root),
            "--data",
            str(prepared_data),
        ],
    )
    assert r.exit_code == 2
    assert "val.bin has" in r.output and "lower eval_tokens" in r.output
    assert not res_root.exists()


@pytest.mark.slow
def test_the_local_launcher_gives_each_run_one_gpu(tmp_path, grid_file, prepared_data):
    from harness.data.catalogue import vocab_lookup
    from harness.grid.load import load_grid
    from harness.launch.local.launcher import LocalLauncher
    from harness.launch.profile import load_profile
    from harness.store.db import newest_values
    from harness.store.manifest import write_manifest

    root = tmp_path / "results"
    runs = load_grid(grid_file, local=True, vocab=vocab_lookup(prepared_data)).runs
    write_manifest(root, runs[0].grid, runs)
    # GPUs 3 and 5, one run each at a time (this machine has none: the runs compute on CPU,
    # but each sees only the GPU it was given, in CUDA_VISIBLE_DEVICES).
    report = launch_and_wait(
        LocalLauncher(load_profile("local"), gpus=[3, 5]), list(runs), root, prepared_data
    )
    assert len(report.statuses) == len(runs) == 4
    seen = [v for (v,) in newest_values(root, runs[0].grid, ["visible_devices"]).values()]
    # Each run saw exactly one of the two GPUs, and the first two runs started at once, one on
    # each. How the last two split is up to which warm process frees up first (3+1 is fine).
    assert len(seen) == 4 and set(seen) == {"3", "5"}, seen


def test_gpus_are_filled_evenly_up_to_runs_per_device():
    from harness.launch.worker.pool import gpu_for_next_run

    assert gpu_for_next_run({0: 0, 1: 0}, 2) == 0
    assert gpu_for_next_run({0: 1, 1: 0}, 2) == 1
    assert gpu_for_next_run({0: 1, 1: 1}, 2) == 0
    assert gpu_for_next_run({0: 2, 1: 2}, 2) is None
    assert gpu_for_next_run({}, 1) is None


def test_gpus_named_by_uuid_are_a_one_line_error(monkeypatch, tmp_path):
    import torch

    from harness.core.errors import UserError
    from harness.launch.local import slots
    from harness.launch.local.slots import local_gpus

    monkeypatch.setattr(slots, "GPU_DRIVER_FILES", (str(tmp_path),))  # a driver is there
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,6")
    assert local_gpus() == [2, 6]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-8f2c,GPU-91ab")
    with pytest.raises(UserError, match="name them by index"):
        local_gpus()
