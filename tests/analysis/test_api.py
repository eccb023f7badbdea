"""``harness.api``: the library the CLI, the notebook and the study scripts call. Each function
is documented and gives what its command prints, as values."""

from __future__ import annotations

import csv
import inspect
import io
from pathlib import Path

import pytest
from click.testing import CliRunner
from golden import _workload

from harness import api
from harness.cli import main
from harness.core.errors import UserError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    _workload(root)
    return root


def test_every_public_function_is_documented() -> None:
    assert {"submit", "plan", "analyze", "figures", "report", "connect"} <= set(api.__all__)
    for name in api.__all__:
        assert inspect.getdoc(getattr(api, name)), f"api.{name} has no docstring"


def test_analyze_gives_the_table_the_command_prints(work: Path) -> None:
    ans = api.analyze("compare", "work", results=work, a="optimizer=sgd", b="optimizer=adam",
                      alternative="two-sided")  # fmt: skip
    assert len(ans.table) == 1 and ans.notes
    cli = CliRunner().invoke(main, ["analyze", "compare", "work", "--a", "optimizer=sgd", "--b",
                                    "optimizer=adam", "--alternative", "two-sided",
                                    "--results", str(work)])  # fmt: skip
    assert cli.exit_code == 0, cli.output
    assert api.text(ans) + "\n" == cli.stdout
    with pytest.raises(UserError, match=r"unknown option.*nope"):
        api.analyze("best", "work", results=work, nope=1)
    with pytest.raises(UserError, match="--a is required"):
        api.analyze("compare", "work", results=work, b="optimizer=adam")


def test_plan_lists_the_runs_a_dry_run_prints(tmp_path: Path) -> None:
    grid = REPO / "analysis" / "studies" / "toy_quadratic.yaml"
    got = api.plan(grid, local=True, results=tmp_path)
    cli = CliRunner().invoke(main, ["submit", str(grid), "--local", "--dry-run", "--format", "csv",
                                    "--results", str(tmp_path)])  # fmt: skip
    assert cli.exit_code == 0, cli.output
    assert got.run_ids == [r["run_id"] for r in csv.DictReader(io.StringIO(cli.stdout))]


def test_figures_in_memory_report_and_connect(work: Path, tmp_path: Path) -> None:
    drawn = api.figures("work", results=work, names=["lr_sensitivity"], write=False)
    (fig,) = drawn.drawn
    assert fig.figure is not None and set(fig.styles) == {"adam", "sgd"}
    assert not (work / "work" / "figures").exists()  # nothing written
    html = api.report("work", results=work, output=tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text() == html and "metric val_loss" in html
    n = api.connect("work", results=work).sql("SELECT count(*) FROM runs").fetchall()
    assert n == [(12,)]
