"""Papercuts of issue 29 (item 9): no "leaked semaphore" warning on the terminal after kill -9
of ``submit``; no constrained-layout warning from a figure whose legend has many rows."""

from __future__ import annotations

import io
import signal
import warnings

import pytest

from harness.analysis.present.figures.common import layout, legend
from tests.local_submits import grid_file, start_submit
from tests.polling import wait_until


@pytest.mark.slow
def test_kill_9_of_submit_prints_no_leaked_semaphore_warning(tmp_path, prepared_data):
    grid = grid_file(tmp_path, "k9", [0], 400)
    root = tmp_path / "results"
    submit = start_submit(grid, root, prepared_data, tmp_path / "spill")
    live = root / "k9" / "live"
    wait_until(lambda: any(live.glob("*.jsonl")), 180, "the run training")

    submit.kill()  # kill -9: the resource tracker cleans up after it, on the same terminal
    _, err = submit.communicate(timeout=120)  # every holder of its stderr has ended

    assert submit.returncode == -signal.SIGKILL, err  # the kill landed: submit had not ended

    assert "leaked semaphore" not in err and "resource_tracker" not in err, err


@pytest.mark.parametrize(("arms", "label", "panels"), [(40, 10, 1), (60, 30, 1), (100, 40, 3)])
def test_a_legend_of_many_rows_keeps_the_panels(arms: int, label: int, panels: int) -> None:
    fig, axes = layout(panels)
    for ax in axes:
        for i in range(arms):
            ax.plot([0, 1], [i, i + 1], label=f"arm{i}-" + "x" * label)
    legend(fig, axes)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "constrained_layout not applied ... collapsed to zero"
        fig.savefig(io.BytesIO(), format="png", dpi=72)

    assert all(ax.get_position().height > 0.05 for ax in axes)
