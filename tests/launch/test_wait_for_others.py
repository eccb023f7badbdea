"""``wait_for_others`` (``submit --wait`` on runs queued by others) counts a run that leaves
the queue with the row it already had as finished, not lost: CI's SLURM cluster listed a run
whose task had just written its row (the queue's answer lagged the task's end), and the wait
called it "ended without a row" because its row mark never changed from the one it had when
the submit looked (tests/followup/test_extend.py's SLURM loop, exit 1)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from harness.launch import submit
from harness.store import db, rows, status


def _world(monkeypatch: pytest.MonkeyPatch, marks: dict[str, int], queued: list[set[str]]) -> None:
    answers = iter(queued)
    monkeypatch.setattr(submit, "queued_anywhere", lambda *a: next(answers, set()))
    monkeypatch.setattr(status, "training_now", lambda *a: set())
    monkeypatch.setattr(rows, "row_marks", lambda *a: dict(marks))
    monkeypatch.setattr(db, "result_statuses", lambda *a: {r: "completed" for r in marks})
    monkeypatch.setattr(submit, "GONE_GRACE_S", 0.0)


def test_a_run_that_had_its_row_when_the_queue_lagged_is_not_lost(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _world(monkeypatch, {"a": 1}, [{"a"}, set()])
    statuses, lost = submit.wait_for_others(tmp_path, "g", ["a"], {"a": 1}, io.StringIO(), 0.0)
    assert (statuses, lost) == ({"a": "completed"}, ())


def test_a_run_that_left_every_queue_without_a_row_is_lost(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _world(monkeypatch, {}, [{"b"}, set()])
    statuses, lost = submit.wait_for_others(tmp_path, "g", ["b"], {"b": None}, io.StringIO(), 0.0)
    assert (statuses, lost) == ({}, ("b",))
