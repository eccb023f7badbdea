"""Which metric, its direction and the metric that selects are decided once
(:func:`~harness.analysis.rows.metric_choice.choose_metric`), the same way for ``analyze``,
``figures`` and ``report``: on a workload grid (rows with val_loss, no val_ppl) all three use
val_loss."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from golden import _workload

from harness.analysis.rows.metric_choice import choose_metric
from harness.cli import main
from harness.core.errors import UserError
from harness.metrics.catalogue import Goal


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    _workload(root)
    return root


@pytest.mark.slow
def test_the_report_on_a_workload_grid_uses_val_loss(work: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    res = CliRunner().invoke(main, ["report", "work", "-o", str(out), "--results", str(work)])
    assert res.exit_code == 0, res.output
    html = out.read_text()
    assert (
        "metric val_loss (min), configurations selected by val_loss; metric val_loss: no run "
        "has val_ppl" in html
    )
    assert "metric val_ppl" not in html and "No completed or diverged runs" not in html
    assert html.count("data:image/png;base64,") >= 2  # lr_sensitivity and loss_curves drawn
    assert "<svg" in html  # the loss curves a reader can toggle
    figures = CliRunner().invoke(main, ["figures", "work", "--results", str(work)])
    assert "lr_sensitivity-val_loss.png" in figures.stdout  # the figures agree
    best = CliRunner().invoke(
        main, ["analyze", "best", "work", "--by", "optimizer", "--results", str(work)]
    )
    assert "note: metric val_loss: no run has val_ppl" in best.stdout


def test_choose_metric_resolves_once_with_typed_goals() -> None:
    runs = pd.DataFrame({"val_loss": [1.0, 2.0], "val_ppl": [None, None], "iso": [0.1, 0.2]})
    c = choose_metric(runs)
    assert (c.metric, c.goal, c.select_by, c.select_goal) == (
        "val_loss",
        Goal.MIN,
        "val_loss",
        Goal.MIN,
    )
    assert c.notes and "no run has val_ppl" in c.notes[0]
    c = choose_metric(runs, "iso", select_by="val_loss")
    assert (c.metric, c.goal, c.select_by, c.select_goal) == ("iso", Goal.MAX, "val_loss", Goal.MIN)
    assert choose_metric(runs, "val_loss", "max").goal is Goal.MAX
    with pytest.raises(UserError, match="unknown --goal 'up'"):
        choose_metric(runs, "val_loss", "up")  # type: ignore[arg-type]
