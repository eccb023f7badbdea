"""Warm run processes (issue 28, item 7): a run process of the pool trains run after run, so that
a small run does not pay torch's import and the harness's start-up; fingerprints of code that
did not change are computed once per process."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path
from typing import Any

import pytest

from harness.core import paths, provenance
from harness.core.config import RunConfig
from harness.data.catalogue import vocab_lookup
from harness.grid.resolve import Resolver
from harness.launch.worker import pool as pool_module
from harness.launch.worker import process
from harness.launch.worker.pool import Outcome, RunPool, drain
from harness.store.manifest import write_manifest
from harness.store.rows import newest_row_file, read_row
from tests.runs import spec_for

OPTIMIZER = """
import torch


class Plain(torch.optim.Optimizer):
    def __init__(self, params, lr: float = 0.01):
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            if group["lr"] == 0.5:
                raise RuntimeError("a bug that only lr 0.5 meets")
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"] * SCALE)


SCALE = 1.0
"""


def quadratic(data_root: Path, grid: str, seed: int, **point: Any) -> RunConfig:
    """A resolved run of the quadratic workload (tiny and fast: the pool is what is tested)."""
    base = {"workload": "quadratic", "optimizer": "adamw", "lr": 0.01, "steps": 40, **point}
    resolver = Resolver(grid, "local", vocab_lookup(data_root), "test")
    return resolver.resolve({**base, "seed": seed}, "test run")


def _row(root: Path, grid: str, run_id: str) -> dict[str, Any]:
    """The newest row of ``run_id``."""
    path = newest_row_file(root, grid, run_id)
    assert path is not None, run_id
    return read_row(path)


def _train(root: Path, data_root: Path, runs: list[RunConfig], monkeypatch) -> list[Any]:
    """Train ``runs`` through a one-slot pool; returns the run processes it started."""
    grid = runs[0].grid
    write_manifest(root, grid, runs)
    started: list[Any] = []
    start = process.start

    def counted(*args: Any, **kwargs: Any) -> Any:
        started.append(start(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(process, "start", counted)
    spec = spec_for(root, grid, data_root, threads=1)
    ended = drain(
        RunPool(spec, [r.run_id for r in runs], parallel=1, logs=paths.local_logs_dir(root, grid)),
        poll_s=0.05,
    )
    assert [e.outcome for e in ended] == [Outcome.FINISHED] * len(runs), ended
    assert all(not p.process.is_alive() for p in started)  # no process outlives the pool
    return started


@pytest.mark.slow
def test_one_process_trains_run_after_run_as_fresh_processes_would(
    tmp_path, prepared_data, monkeypatch
):
    runs = [quadratic(prepared_data, "warm", seed) for seed in range(4)]
    warm = _train(tmp_path / "warm", prepared_data, runs, monkeypatch)
    assert len(warm) == 1  # torch and the harness imported once for the four runs

    alone = quadratic(prepared_data, "alone", 3)  # the last run, trained in a fresh process
    _train(tmp_path / "alone", prepared_data, [alone], monkeypatch)
    warm_row = _row(tmp_path / "warm", "warm", runs[3].run_id)
    alone_row = _row(tmp_path / "alone", "alone", alone.run_id)
    assert warm_row["status"] == alone_row["status"] == "completed"
    assert warm_row["val_loss"] == alone_row["val_loss"]  # nothing leaks from the runs before
    for r in runs:  # each run's log holds its own lines only
        log = (paths.local_logs_dir(tmp_path / "warm", "warm") / f"{r.run_id}.log").read_text()
        assert r.run_id in log and not any(o.run_id in log for o in runs if o is not r), log


@pytest.mark.slow
def test_a_run_that_failed_leaves_its_process_and_the_next_run_gets_a_fresh_one(
    tmp_path, prepared_data, monkeypatch
):
    opt = tmp_path / "plain.py"
    opt.write_text(OPTIMIZER)
    bad = quadratic(prepared_data, "fail", 0, optimizer=f"{opt}:Plain", lr=0.5)
    runs = [bad, quadratic(prepared_data, "fail", 1), quadratic(prepared_data, "fail", 2)]
    started = _train(tmp_path / "results", prepared_data, runs, monkeypatch)
    rows = [_row(tmp_path / "results", "fail", r.run_id) for r in runs]
    assert [r["status"] for r in rows] == ["failed", "completed", "completed"]
    assert "a bug that only lr 0.5 meets" in rows[0]["error"]
    assert len(started) == 2  # the failed run's process took no other run


@pytest.mark.slow
def test_an_optimizer_file_edited_mid_sweep_is_trained_by_a_fresh_process(
    tmp_path, prepared_data, monkeypatch
):
    """A warm process runs the code it imported; once that code's file changes, its next run
    goes to a fresh process, so every row's fingerprint is the code that computed it."""
    opt = tmp_path / "plain.py"
    opt.write_text(OPTIMIZER)
    runs = [quadratic(prepared_data, "edit", s, optimizer=f"{opt}:Plain") for s in range(2)]
    first = _train(tmp_path / "a", prepared_data, runs[:1], monkeypatch)
    assert len(first) == 1
    original = _row(tmp_path / "a", "edit", runs[0].run_id)

    # the same two runs in a new pool, the file edited between them (the first run's end)
    monkeypatch.setattr(process, "takes_another", _edit_after_first(opt))
    started = _train(tmp_path / "b", prepared_data, runs, monkeypatch)
    rows = [_row(tmp_path / "b", "edit", r.run_id) for r in runs]
    assert len(started) == 2  # the second run went to a fresh process
    assert rows[0]["optimizer_fingerprint"] == original["optimizer_fingerprint"]
    assert rows[1]["optimizer_fingerprint"] != original["optimizer_fingerprint"]
    assert rows[1]["val_loss"] != rows[0]["val_loss"]  # SCALE 2: the new code ran


MARKED = (
    OPTIMIZER
    + """
import os
import pathlib


class Marked(Plain):
    def __init__(self, params, lr: float = 0.01):
        super().__init__(params, lr)
        out = pathlib.Path(os.environ["MARK_FOLDER"], str(os.getpid()))
        out.write_text(f"{os.environ['MARK']} {os.getppid()}")
"""
)


@pytest.mark.slow
def test_run_processes_fork_from_one_server_with_the_environment_of_their_pool(
    tmp_path, prepared_data, monkeypatch
):
    """Run processes with logs of their own are forked from one server that imported torch
    (it outlives a pool: the next pool of this process forks from it too), and each gets the
    environment of the process as its pool started them, not the server's."""
    opt = tmp_path / "marked.py"
    opt.write_text(MARKED)
    seen = {}
    for mark in ("a", "b"):
        folder = tmp_path / f"marks-{mark}"
        folder.mkdir()
        monkeypatch.setenv("MARK", mark)
        monkeypatch.setenv("MARK_FOLDER", str(folder))
        run = quadratic(prepared_data, f"env{mark}", 0, optimizer=f"{opt}:Marked")
        _train(tmp_path / mark, prepared_data, [run], monkeypatch)
        ((got, parent),) = [f.read_text().split() for f in folder.iterdir()]
        seen[mark] = got, int(parent)
    assert [seen[m][0] for m in ("a", "b")] == ["a", "b"]
    server = seen["a"][1]
    assert seen["b"][1] == server != os.getpid()  # one server for both pools, not this process
    assert b"forkserver" in Path(f"/proc/{server}/cmdline").read_bytes()


def _edit_after_first(opt: Path):
    """``takes_another`` for the pool (the parent): edits ``opt`` when the first run ends,
    before the warm process is handed the second."""
    edited, real = [], process.takes_another

    def takes_another(kind: process.ExitKind, status: str) -> bool:
        if not edited:
            opt.write_text(OPTIMIZER.replace("SCALE = 1.0", "SCALE = 2.0"))
            edited.append(True)
        return real(kind, status)

    return takes_another


def test_fingerprints_of_unchanged_code_are_computed_once_per_process(tmp_path, monkeypatch):
    calls = {"code": 0, "packages": 0}
    code, packages = provenance.class_code, importlib.metadata.packages_distributions

    def counted_code(obj: object) -> list[str]:
        calls["code"] += 1
        return code(obj)

    def counted_packages() -> Any:
        calls["packages"] += 1
        return packages()

    monkeypatch.setattr(provenance, "_FINGERPRINTS", {})  # this test's process starts afresh
    monkeypatch.setattr(provenance, "_FIRST_SEEN", {})
    monkeypatch.setattr(provenance, "class_code", counted_code)
    monkeypatch.setattr(provenance.metadata, "packages_distributions", counted_packages)
    provenance._distribution_of.cache_clear()
    opt = tmp_path / "plain.py"
    opt.write_text(OPTIMIZER)
    from harness.core.registry import load_object

    cls = load_object(f"{opt}:Plain")
    first = provenance.class_fingerprint([cls])
    assert [provenance.class_fingerprint([cls]) for _ in range(3)] == [first] * 3
    assert calls["code"] == 1  # the file was read and parsed once
    assert provenance.fingerprinted_code_changed() == []
    for _ in range(3):
        assert provenance.distribution_version(pytest.approx) == f"pytest=={pytest.__version__}"
    assert calls["packages"] == 1  # installed packages scanned once

    opt.write_text(OPTIMIZER.replace("SCALE = 1.0", "SCALE = 2.0"))
    assert provenance.class_fingerprint([cls]) != first  # a changed file is read again
    assert calls["code"] == 2
    assert provenance.fingerprinted_code_changed() == [opt.resolve()]


def test_the_pool_module_starts_processes_through_process_start() -> None:
    """The counting above relies on it: every run process comes from ``process.start``."""
    assert pool_module.process is process


SCRIPT = """
from harness import api

done = api.submit({grid!r}, launcher="local", results={results!r}, data={data!r})
print("faults", done.faults)
"""


@pytest.mark.slow
def test_a_script_without_a_main_guard_can_submit_through_the_api(tmp_path, prepared_data):
    # Run processes are spawned; a spawned child re-runs the parent's __main__ first. Without
    # the pool leaving the caller's main module out, this script would run again in each run
    # process and fail ("bootstrapping phase"): every run failed, as the study scripts did.
    import subprocess
    import sys

    grid = tmp_path / "g.yaml"
    grid.write_text(
        "name: g\nbase: {workload: quadratic, optimizer: sgd, lr: 0.01, steps: 20, log_every: 5}\n"
        "seeds: 3\n"
    )
    results = tmp_path / "results"
    script = tmp_path / "study.py"
    script.write_text(SCRIPT.format(grid=str(grid), results=str(results), data=str(prepared_data)))
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    said = out.stdout + out.stderr
    assert out.returncode == 0, said
    assert "bootstrapping" not in said and "faults 0" in out.stdout, said
    rows = [
        newest_row_file(results, "g", p.name.split(".")[0])
        for p in (results / "g" / "runs").iterdir()
    ]
    assert len({r.name.split(".")[0] for r in rows if r is not None}) == 3
    assert {str(read_row(r)["status"]) for r in rows if r is not None} == {"completed"}
