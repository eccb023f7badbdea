"""``submit`` asks every backend's queue before it reads the rows (issue 28 item 2): a task that
ends in between wrote its rows before it left the queue, so each of its runs is in one set or
the other. Read the other way round, a run whose task ended in between was in neither, and was
queued a second time (116 of 500 runs in the issue's sweep)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from harness.core.provenance import provenance
from harness.core.result import RunResult, Status
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.launch.contract import CancelReport, QueueView
from harness.launch.inputs import Inputs
from harness.launch.profile import Backend
from harness.launch.registry import LAUNCHERS
from harness.launch.submit import submit
from harness.store.rows import write_result


class _RacingTask:
    """A queued task of another backend that trains ``run`` and ends the moment ``submit`` has
    read the rows once."""

    def __init__(self) -> None:
        self.run, self.root, self.data_root, self.ended = None, None, None, False

    def end(self) -> None:
        if self.run is not None and not self.ended:
            self.ended = True
            result = RunResult(status=Status.COMPLETED, steps_done=4, metrics={"val_loss": 1.0})
            where = provenance("9_0") | Inputs(self.data_root).of(self.run)
            write_result(self.root, self.run, result, where)


TASK = _RacingTask()


class _RacingQueue:
    def queued(self, root: Path, grid: str, run_ids) -> set[str]:
        return set() if TASK.ended else {TASK.run.run_id} & set(run_ids)

    def view(self, root: Path, grid: str) -> QueueView | None:
        return None

    def cancel(self, root: Path, grid: str, wait_s: float) -> CancelReport | None:
        return None


QUEUE = _RacingQueue()
BACKEND = Backend(settings=dict, launcher="unused:Launcher", queue=f"{__name__}:QUEUE")


@pytest.mark.slow  # the other run trains, in a process of its own
def test_a_run_whose_task_ends_while_submit_reads_is_never_queued_again(tmp_path, monkeypatch):
    import harness.store.db as db

    data_root = tmp_path / "data"
    path = tmp_path / "race.yaml"
    path.write_text(
        "name: race\nbase: {workload: quadratic, steps: 4, optimizer: sgd, lr: 0.001}\n"
        "seeds: [0, 1]\n"
    )
    grid = load_grid(path, vocab=vocab_lookup(data_root))
    TASK.run, TASK.root, TASK.data_root = grid.runs[0], tmp_path / "results", data_root
    read = db.newest_values

    def rows_then_the_task_ends(*a, **k):
        found = read(*a, **k)
        TASK.end()
        return found

    monkeypatch.setattr(db, "newest_values", rows_then_the_task_ends)
    with LAUNCHERS.temporarily("racing", f"{__name__}:BACKEND"):
        report = submit(
            path,
            root=TASK.root,
            data_root=data_root,
            launcher="local",
            dry_run=False,
            out=io.StringIO(),
        )
    assert TASK.ended
    assert (report.skipped, report.launched) == (1, 1)  # the racing run: skipped, not relaunched
    assert report.statuses.keys() == {grid.runs[1].run_id}
