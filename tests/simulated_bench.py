"""A bench's training simulated: a stand-in for ``harness.services.submit`` (what the bench's
phases call) that writes each planned run's result to the real store from a known loss, round
after round until no run is new, as the real submits would (no process, no training)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness import api
from harness.core.config import RunConfig
from harness.core.provenance import provenance
from harness.core.result import RunResult
from harness.store.db import newest_values
from harness.store.manifest import write_manifest
from harness.store.rows import write_result

ROUNDS = 12
"""Most rounds before the stand-in calls the rounds unconverged."""


def fake_submit(
    loss: Callable[[RunConfig], float], trained: list[RunConfig], given: list[Any] | None = None
) -> Any:
    """``services.submit`` with every planned run 'trained' to ``loss(run)`` (``val_loss``);
    ``trained`` collects the runs written, ``given`` the grid each call was handed."""

    def submit(grid: Any, *, more: Any = (), results: Path, data: Path, **_: Any) -> Any:
        if given is not None:
            given.append(grid)
        reports = []
        for _ in range(ROUNDS):
            planned = api.plan(
                grid, extend=True, confirm=True, per_arm=True, results=results, data=data
            )
            runs = {r.run_id: r for r in (*planned.runs, *more)}
            write_manifest(results, planned.grid.name, list(runs.values()))
            done = set(newest_values(results, planned.grid.name, ["status"]))
            todo = [r for r in runs.values() if r.run_id not in done]
            for r in todo:
                metrics = {"val_loss": loss(r)}
                result = RunResult(status="completed", steps_done=r.data.steps, metrics=metrics)
                write_result(results, r, result, provenance())
            trained.extend(todo)
            reports.append(SimpleNamespace(launched=len(todo)))
            if not todo:
                return SimpleNamespace(reports=reports, last=reports[-1], queued=False, faults=0)
        raise AssertionError("the rounds did not converge")

    return submit
