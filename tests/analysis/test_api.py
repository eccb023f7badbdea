"""``harness.api``: the library the CLI, the notebook and the study scripts call. Each function
is documented and gives what its command prints, as values."""

from __future__ import annotations

import csv
import inspect
import io
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from golden import _workload

from harness import api
from harness.cli import main
from harness.core.errors import UserError
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name

pytestmark = pytest.mark.usefixtures("runs_in_process")  # runs train in the test's process

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
    ans = api.analyze(
        "compare",
        "work",
        results=work,
        a="optimizer=sgd",
        b="optimizer=adam",
        alternative="two-sided",
    )
    assert len(ans.table) == 1 and ans.notes
    cli = CliRunner().invoke(
        main,
        [
            "analyze",
            "compare",
            "work",
            "--a",
            "optimizer=sgd",
            "--b",
            "optimizer=adam",
            "--alternative",
            "two-sided",
            "--results",
            str(work),
        ],
    )
    assert cli.exit_code == 0, cli.output
    assert api.text(ans) + "\n" == cli.stdout
    with pytest.raises(UserError, match=r"unknown option.*nope"):
        api.analyze("best", "work", results=work, nope=1)
    with pytest.raises(UserError, match="--a is required"):
        api.analyze("compare", "work", results=work, b="optimizer=adam")


def test_plan_lists_the_runs_a_dry_run_prints(tmp_path: Path) -> None:
    grid = REPO / "analysis" / "studies" / "toy_quadratic.yaml"
    got = api.plan(grid, local=True, results=tmp_path)
    cli = CliRunner().invoke(
        main,
        [
            "submit",
            str(grid),
            "--local",
            "--dry-run",
            "--format",
            "csv",
            "--results",
            str(tmp_path),
        ],
    )
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


def test_rows_and_tuned_give_each_cells_selection(work: Path) -> None:
    rows = api.rows("work", results=work)
    assert rows.metric == "val_loss" and rows.notes  # no val_ppl: the workload fallback, said
    assert len(rows.frame) == 12 and rows.frame["value"].notna().all()
    keys, over = api.cells(rows.frame)
    assert "optimizer" in keys and over == ["lr"]
    t = api.tuned(rows.frame, rows.goal)
    assert (list(t.keys), list(t.over)) == (keys, over)
    best = t.best.set_index("optimizer")
    # loss = level + 0.2 k + 0.05 seed: the smaller lr wins in both cells, on its edge
    assert best["lr"].to_dict() == {"adam": 0.01, "sgd": 0.01}
    assert best["mean"].round(6).to_dict() == {"adam": 0.55, "sgd": 1.05}
    assert set(best["lr_edge"]) == {"smallest"}
    line = t.line(t.best[t.best["optimizer"] == "sgd"].iloc[0], "lr")
    assert line.round(6).to_dict("list") == {"lr": [0.01, 0.1], "mean": [1.05, 1.25]}
    same = api.analyze("best", "work", results=work, metric="val_loss", by=["optimizer"])
    assert same.table.set_index("optimizer")["lr"].to_dict() == best["lr"].to_dict()


# --- planning: which runs have a result, their compute, each arm's own rounds -------------------


def _arms_grid(folder: Path, name: str, optimizers: dict[str, str]) -> Path:
    blocks = "\n".join(
        f"    {o}: {{label: [{label}], lr: [1.0e-3, 1.0e-2]}}" for o, label in optimizers.items()
    )
    path = folder / name
    path.write_text(
        f"name: arms\nbase: {{workload: quadratic, steps: 20}}\ngrid:\n  optimizer:\n"
        f"{blocks}\nseeds: {{tune: [0], confirm: [1, 2]}}\n"
        "extend: {axes: [lr], rounds: 1}\n"
    )
    return path


def _train(plan: api.Plan, root: Path, status: str = "completed") -> list[str]:
    """Write a result for each planned run without one (val_loss lowest at lr = 10: every best
    is on its largest edge), as the trainer would; returns their run_ids."""
    from harness.core.provenance import provenance
    from harness.core.result import RunResult
    from harness.store.manifest import write_manifest
    from harness.store.rows import write_result

    write_manifest(root, plan.grid.name, plan.runs)
    todo = [r for r in plan.runs if r.run_id not in plan.done]
    for r in todo:
        loss = (math.log10(r.optim.lr) - 1) ** 2
        write_result(
            root,
            r,
            RunResult(status=status, steps_done=r.data.steps, metrics={"val_loss": loss}),
            provenance(),
        )
    return [r.run_id for r in todo]


def test_plan_says_which_runs_have_a_result_and_their_compute(tmp_path: Path) -> None:
    root = tmp_path / "r"
    grid = _arms_grid(tmp_path, "arms.yaml", {"sgd": "SGD"})
    before = api.plan(grid, results=root)
    assert before.done == frozenset() and len(before.runs) == 2
    trained = _train(before, root)
    assert api.plan(grid, results=root).done == frozenset(trained)
    gpt = REPO / "grids" / "adam_betas.yaml"  # a model with parameters: compute to estimate
    gpt_plan = api.plan(gpt, results=root)
    whole, one = gpt_plan.compute(), gpt_plan.compute(gpt_plan.runs[:1])
    assert whole.flops > one.flops > 0
    assert whole.scaled(3).gpu_hours == pytest.approx(3 * whole.gpu_hours)
    assert "MFU" in whole.device
    cli = CliRunner().invoke(main, ["submit", str(gpt), "--dry-run", "--results", str(root)])
    assert cli.exit_code == 0, cli.output
    assert f"{whole.gpu_hours:,.1f} GPU-hours" in cli.output, cli.output


@pytest.mark.slow
def test_per_arm_gives_an_arm_added_later_its_own_rounds(tmp_path: Path) -> None:
    root = tmp_path / "r"
    first = _arms_grid(tmp_path, "first.yaml", {"sgd": "SGD"})
    for _ in range(4):  # tune, extend (its one round), confirm
        _train(api.plan(first, extend=True, confirm=True, results=root), root)
    both = _arms_grid(tmp_path, "both.yaml", {"sgd": "SGD", "adam": "Adam"})
    _train(api.plan(both, results=root), root)  # Adam's tuning runs
    whole = api.plan(both, extend=True, confirm=True, results=root)
    assert not [r for r in whole.runs if r.label == "Adam" and r.extend_round]
    assert any("1 round(s) of --extend are done" in line for line in whole.lines)  # SGD's
    per = api.plan(both, extend=True, confirm=True, per_arm=True, results=root)
    new = [r for r in per.runs if r.run_id not in per.done]
    assert [(r.label, r.extend_round, r.optim.lr) for r in new] == [("Adam", 1, 0.1)]
    assert any(line.startswith("Adam: ") for line in per.lines)
    assert not [r for r in per.runs if r.label == "SGD" and r.run_id not in per.done]
    args = ["--launcher", "local", "--dry-run", "--extend", "--confirm", "--per-arm"]
    cli = CliRunner().invoke(main, ["submit", str(both), *args, "--results", str(root)])
    assert cli.exit_code == 0, cli.output
    assert "arms: Adam: " in cli.output and "1 new run(s) planned" in cli.output, cli.output
    # a failed tuning run blocks its arm per arm (whole budgets compared), not the grid
    third = _arms_grid(tmp_path, "third.yaml", {"sgd": "SGD", "lion": "Lion"})
    _train(api.plan(third, results=root), root, status="failed")
    per = api.plan(third, extend=True, confirm=True, per_arm=True, results=root)
    assert not [r for r in per.runs if r.label == "Lion" and (r.extend_round or r.confirm)]
    assert any(line.startswith("Lion: 2 tuning run(s) have no result") for line in per.lines)


def test_an_untrained_arm_is_waited_for_not_told_to_retry(tmp_path: Path) -> None:
    # a bench's first round: no run has a row yet; only runs that ended without a result
    # (failed, timeout...) are worth a --retry hint
    root = tmp_path / "r"
    grid = _arms_grid(tmp_path, "fresh.yaml", {"sgd": "SGD", "lion": "Lion"})
    lines = api.plan(grid, extend=True, confirm=True, per_arm=True, results=root).lines
    assert (
        "Lion: 2 tuning run(s) have no result yet: their follow-ups are planned once they finish"
    ) in lines
    assert not [line for line in lines if "--retry" in line], lines


def test_the_row_selecting_keywords_are_declared_once_and_each_entry_point_reads_them(
    work: Path, tmp_path: Path
) -> None:
    """``results``, ``where``, ``scale``, ``metric``, ``goal`` and ``select_by`` are one
    declaration (:class:`api.Selecting`), handed on as one value: no reading entry point lists
    them again in its signature, and each honours every one of them by keyword."""
    keys = set(api.Selecting.__annotations__)
    assert keys == {"results", "where", "scale", "metric", "goal", "select_by"}
    for f in (api.rows, api.figures, api.report, api.analyze):
        assert not keys & set(inspect.signature(f).parameters), f.__name__
    given = {"results": work, "where": "optimizer = 'sgd'", "scale": "full"}
    given |= {"metric": "val_loss", "goal": "max", "select_by": "val_loss"}
    rows = api.rows("work", **given)
    assert len(rows.frame) == 6 and set(rows.frame["optimizer"]) == {"sgd"}
    assert (rows.metric, rows.goal, rows.select_by) == ("val_loss", "max", "val_loss")
    best = api.analyze("best", "work", **given, by=["optimizer"]).table
    assert best["lr"].tolist() == [0.1]  # goal max: the worst lr wins
    (fig,) = api.figures("work", **given, names=["lr_sensitivity"], write=False).drawn
    assert set(fig.styles) == {"sgd"}
    html = api.report("work", **given, output=tmp_path / "r.html")
    assert "metric val_loss (max)" in html
    with pytest.raises(TypeError, match="selection"):
        api.rows("work", selection=None)  # type: ignore[call-arg]
