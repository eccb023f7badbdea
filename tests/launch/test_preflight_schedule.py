"""The preflight's own-schedule check counts only the learning rate the optimizer applies
(issue 38, item 1): schedule-free's running ``lr_max`` is no schedule, so both schedule-free
classes pass with their defaults under the harness's cosine; an lr the step really changes
(a warmup of its own) is still refused; a refusal names what differs between configurations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.core.config import RunConfig
from harness.grid.resolve import Resolver
from harness.launch import preflight
from harness.launch.preflight_step import _own_schedule, check

QUADRATIC = {"workload": "quadratic", "steps": 6, "lr": 0.01, "log_every": 1, "warmup_steps": 1}


def _run(tmp_path: Path, **point: Any) -> RunConfig:
    return Resolver("s", "full", lambda name: 64, "test", tmp_path).resolve(
        {**QUADRATIC, **point}, "test run"
    )


@pytest.mark.parametrize(
    "optimizer", ["pytorch_optimizer:ScheduleFreeAdamW", "schedulefree:AdamWScheduleFree"]
)
def test_schedule_free_passes_with_its_defaults_under_a_cosine(tmp_path: Path, optimizer) -> None:
    """Before: "param group 0 lr_max = 0.001 after one step at lr 0.001" (a running maximum
    that starts at -1) was read as an lr schedule of its own."""
    assert check(_run(tmp_path, optimizer=optimizer)) is None


def test_a_warmup_of_its_own_is_still_refused_a_running_statistic_is_not() -> None:
    """schedule-free's ``warmup_steps`` scales the lr it applies (``scheduled_lr``, documented):
    that is a schedule on top of the harness's, and it is named; ``lr_max`` is not."""
    said = _own_schedule(
        {"param group 0 lr": 0.01, "param group 0 scheduled_lr": 0.0},
        {"param group 0 lr": 0.01, "param group 0 scheduled_lr": 0.005},
    )
    assert said is not None and "scheduled_lr = 0.005 after one step at lr 0.01" in said
    assert "in a bench: the protocol's candidate: schedules" in said
    assert (
        _own_schedule(
            {"param group 0 lr": 0.01, "param group 0 lr_max": -1.0},
            {"param group 0 lr": 0.01, "param group 0 lr_max": 0.01},
        )
        is None
    )


def test_a_refusal_names_what_differs_between_configurations(tmp_path: Path) -> None:
    """Before: two configurations differing only in weight decay gave the same line twice."""
    runs = [
        _run(tmp_path, optimizer="schedulefree:AdamWScheduleFree", weight_decay=wd)
        for wd in (0.1, 0.0)
    ]
    lines = preflight.descriptions(runs)
    assert len(set(lines)) == 2, lines
    assert "weight_decay=0.1" in lines[0] and "weight_decay=0.0" in lines[1]
