"""The preflight's time limit tells a hang from work (issue 38, item 2): an item whose child
still uses CPU (a first step that compiles, heavyball's SOAP: 71 s of CPU) is given up to
:data:`~harness.launch.sandbox.BUSY_FACTOR` times the limit; one that sleeps is stopped at the
limit; each line says what it waited for."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from harness.launch.sandbox import BUSY_FACTOR, Limits, run_isolated

STEPS = """\
import time


def busy(seconds):
    "A slow step that works: CPU for ``seconds`` of CPU time, then done."
    end = time.process_time() + seconds
    while time.process_time() < end:
        sum(i * i for i in range(1000))
    return None


def asleep(seconds):
    "A hang: no CPU used, never done within the limit."
    time.sleep(seconds)
    return None
"""


@pytest.fixture
def steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "fake_steps.py").write_text(textwrap.dedent(STEPS))
    monkeypatch.syspath_prepend(str(tmp_path))
    paths = [str(tmp_path), *(p for p in sys.path if p)]
    monkeypatch.setenv("PYTHONPATH", ":".join(paths))
    return "fake_steps"


def test_a_slow_step_still_using_cpu_passes_a_sleeping_one_is_stopped(steps: str) -> None:
    """Before: both were stopped at the limit as "hangs or is slow"."""
    limits = Limits(timeout_s=1.5, memory_bytes=None)
    assert run_isolated(f"{steps}:busy", [3.0], limits) == [None]
    [line] = run_isolated(f"{steps}:asleep", [60.0], limits)
    assert line is not None and "did not finish within 1.5 s" in line
    assert "it used no CPU over the last" in line and "hangs" in line, line


def test_a_busy_step_past_the_longer_limit_is_stopped_saying_it_worked(steps: str) -> None:
    limits = Limits(timeout_s=0.5, memory_bytes=None)
    [line] = run_isolated(f"{steps}:busy", [60.0], limits)
    assert line is not None and f"{BUSY_FACTOR * 0.5:g} s" in line and "of CPU" in line, line
