"""``harness watch`` in a real terminal: tmux runs it, ``capture-pane`` reads the screen and
``send-keys`` presses Ctrl-C (issue 21: a live view)."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.analysis.testing import make_run, write_run
from harness.core import paths
from harness.core.files import try_locked
from harness.store.live import append_point
from harness.store.manifest import write_manifest
from harness.watch.live_view import sparkline
from tests.local_submits import REPO
from tests.polling import wait_until

GRID = "w"


def _tmux() -> str:
    """tmux's path; a missing tmux skips the test, and fails it under CI=true."""
    found = shutil.which("tmux")
    if found is None:
        msg = "tmux is not installed (scripts/test.sh installs it when run as root)"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return found


@contextlib.contextmanager
def _terminal(tmp_path: Path, root: Path) -> Iterator[tuple[list[str], str]]:
    """``harness watch w`` in a tmux session of its own server (150 x 45); yields the tmux
    command prefix and the session name. The shell prints ``WATCH-EXIT <code>`` when it ends."""
    tmux = [_tmux(), "-u", "-S", str(tmp_path / "tmux.sock")]
    watch = [
        sys.executable,
        "-c",
        "from harness.cli import main; main()",
        "watch",
        GRID,
        "--results",
        str(root),
        "--every",
        "0.3",
    ]
    shell = (
        f"cd {shlex.quote(str(REPO))} && LANG=C.UTF-8 PYTHONPATH={shlex.quote(str(REPO))} "
        f"{shlex.join(watch)}; echo WATCH-EXIT $?; sleep 120"
    )
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "t", "-x", "150", "-y", "45", shell], check=True
    )
    try:
        yield tmux, "t"
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, capture_output=True)


def _screen(tmux: list[str], session: str) -> str:
    return subprocess.run(
        [*tmux, "capture-pane", "-p", "-t", session], capture_output=True, text=True, check=False
    ).stdout


def _grid(root: Path) -> str:
    """Rows for two arms (sgd's best lr on its edge), one run without a row; returns its id."""
    adamw = [make_run(grid=GRID, optimizer="adamw", lr=lr) for lr in (1e-3, 3e-3, 1e-2, 3e-2)]
    sgd = [make_run(grid=GRID, optimizer="sgd", lr=lr) for lr in (0.1, 0.3)]
    write_manifest(root, GRID, [*adamw, *sgd])
    for run, ppl in zip(adamw[:3], (40.0, 20.0, 30.0), strict=True):
        write_run(root, run, val_ppl=ppl)
    for run, ppl in zip(sgd, (60.0, 50.0), strict=True):
        write_run(root, run, val_ppl=ppl)
    return adamw[3].run_id


def _live(root: Path, run_id: str) -> None:
    """Three points of a run being trained (64 steps planned, 1024 tokens a step)."""
    for step, loss in ((8, 5.5), (16, 5.0), (24, 4.25)):
        append_point(
            paths.live_path(root, GRID, run_id),
            {
                "step": step,
                "tokens": step * 1024,
                "train_loss": loss,
                "lr": 3e-2,
                "val_loss": None,
                "elapsed_s": step / 8,
                "steps": 64,
                "tokens_per_s": 4096.0,
            },
        )


@pytest.mark.slow
def test_watch_shows_a_running_run_and_the_best_per_arm_until_ctrl_c(tmp_path):
    root = tmp_path / "results"
    running = _grid(root)
    _live(root, running)
    lock = paths.run_lock_path(root, GRID, running)
    with try_locked(lock) as held, _terminal(tmp_path, root) as (tmux, session):
        assert held
        wait_until(lambda: "leading runs" in _screen(tmux, session), 60, "the view drawn")
        screen = _screen(tmux, session)

        subprocess.run([*tmux, "send-keys", "-t", session, "C-c"], check=True)
        wait_until(lambda: "WATCH-EXIT" in _screen(tmux, session), 30, "watch to exit")
        after = _screen(tmux, session)

    assert f"grid {GRID}: 5/6 runs with a row" in screen, screen
    lines = screen.splitlines()
    live = next(ln for ln in lines if ln.lstrip().startswith(running))
    # 40 steps left at 4096 tok/s, 1024 tokens a step: 10 s
    assert live.split()[1:] == [
        *("adamw", "0.03", "16x1.05M"),
        *("running", "24/64", "4.2500", "4,096", "0m10s"),
    ], live
    best = [ln.split() for ln in lines if ln.lstrip().startswith(("adamw ", "sgd "))]
    assert [b[:3] for b in best] == [["adamw", "0.003", "2.9957"], ["sgd", "0.3", "3.9120"]]
    assert "lr=0.3 is the largest tried: add 0.9" in screen
    assert "CPU-hours used" in screen
    leaders = lines[next(i for i, ln in enumerate(lines) if "leading runs" in ln) + 2 :][:3]
    assert [ln.split()[1:] for ln in leaders] == [
        ["2.9957", "█▆▄▃▁"],
        ["3.4012", "█▆▄▃▁"],
        ["3.6889", "█▆▄▃▁"],  # 5 points falling evenly
    ], screen
    assert "WATCH-EXIT 130" in after, after


@pytest.mark.slow
def test_watch_ends_once_every_run_has_its_row(tmp_path):
    root = tmp_path / "results"
    missing = _grid(root)
    with _terminal(tmp_path, root) as (tmux, session):
        wait_until(lambda: "5/6 runs with a row" in _screen(tmux, session), 60, "the view")
        write_run(root, make_run(grid=GRID, optimizer="adamw", lr=3e-2), val_ppl=25.0)
        assert make_run(grid=GRID, optimizer="adamw", lr=3e-2).run_id == missing
        wait_until(lambda: "WATCH-EXIT" in _screen(tmux, session), 60, "watch to end")
        screen = _screen(tmux, session)

    assert "6/6 runs with a row" in screen and "WATCH-EXIT 0" in screen, screen
    assert "lr=0.03 is the largest tried" not in screen  # 3e-3 stays the best adamw lr


def test_sparkline_spans_the_levels():
    assert sparkline([3.0, 2.0, 1.0, float("nan")]) == "█▅▁!"
    assert sparkline([2.0, 2.0]) == "▁▁"


def test_the_view_states_hours_in_one_unit_and_each_live_runs_arm_lr_and_cell(tmp_path):
    """Issue 38: before, "CPU-hours used 0.259 of an estimated 5.2e-05 GPU-hours" and live
    runs by run_id only."""
    from rich.console import Console

    from harness.watch.live_view import render, snapshot

    root = tmp_path / "results"
    running = _grid(root)
    _live(root, running)
    with try_locked(paths.run_lock_path(root, GRID, running)) as held:
        assert held
        console = Console(width=200, record=True)
        console.print(render([snapshot(root, GRID)]))
    text = console.export_text()
    hours = next(ln for ln in text.splitlines() if "hours used" in ln)
    assert hours.count("CPU-hours") == 2 and "GPU" not in hours, hours
    live = next(ln for ln in text.splitlines() if ln.lstrip().startswith(running))
    assert live.split()[1:4] == ["adamw", "0.03", "16x1.05M"], live
