"""The branch plan (harness.grid.branches): which budgets of a wsd grid branch from one stable
phase, what that saves, and which runs cannot branch and why. Pure and torch-free."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.core.errors import UserError
from harness.grid.branches import branch_point, dependency_order, plan_branches
from harness.grid.load import load_grid
from harness.optim.schedule import lr_at
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name

pytestmark = pytest.mark.usefixtures("runs_in_process")  # runs train in the test's process

REPO = Path(__file__).resolve().parents[2]


def _grid(tmp_path: Path, base: str, grid: str, extra: str = "", seeds: int = 2):
    path = tmp_path / "g.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            name: g
            base: {{workload: quadratic, optimizer: adamw, lr: 0.01, log_every: 2, {base}}}
            grid: {grid}
            seeds: {seeds}
            {extra}
            """
        )
    )
    return load_grid(path, vocab=lambda dataset: None)


def test_budgets_of_one_configuration_and_seed_branch_from_the_longest(tmp_path):
    g = _grid(tmp_path, "schedule: wsd, warmup_steps: 2", "{steps: [10, 20, 40], lr: [0.01, 0.1]}")
    plan = plan_branches(g.runs)
    by_id = {r.run_id: r for r in g.runs}
    assert len(plan.branches) == 8  # 2 lrs x 2 seeds x 2 shorter budgets
    assert len(plan.parents) == 4
    for b in plan.branches:
        run, parent = by_id[b.run_id], by_id[b.parent]
        assert parent.data.steps == 40 and run.data.steps in (10, 20)
        assert (run.optim.lr, run.execution.seed) == (parent.optim.lr, parent.execution.seed)
        assert b.step == branch_point(run) == run.data.steps - round(0.2 * run.data.steps)
        # the schedules agree at every step before the branch point, and differ at it
        assert all(lr_at(t, run) == lr_at(t, parent) for t in range(b.step))
        assert lr_at(b.step, run) < lr_at(b.step, parent)
    assert plan.steps_alone == 4 * 70
    assert plan.steps_branched == 4 * (40 + 2 + 4)
    assert not plan.refused


def test_the_issue_s_costs_four_and_eight_budgets(tmp_path):
    g = _grid(tmp_path, "schedule: wsd", "{steps: [100, 200, 400, 800]}", seeds=1)
    plan = plan_branches(g.runs)
    assert (plan.steps_branched, plan.steps_alone) == (940, 1500)  # 9.4 units instead of 15
    g = _grid(
        tmp_path, "schedule: wsd", "{steps: [100, 200, 300, 400, 500, 600, 700, 800]}", seeds=1
    )
    plan = plan_branches(g.runs)
    assert (plan.steps_branched, plan.steps_alone) == (1360, 3600)  # 13.6 instead of 36


def test_a_warmup_given_as_a_fraction_of_steps_cannot_branch_and_says_why(tmp_path):
    g = _grid(tmp_path, 'schedule: wsd, warmup_steps: "0.1 * steps"', "{steps: [10, 20, 40]}")
    plan = plan_branches(g.runs)
    assert not plan.branches
    assert len(plan.refused) == 4
    assert all("warmup_steps" in r.reason and "step 0" in r.reason for r in plan.refused)
    text = plan.describe()
    assert text.count("cannot branch:") == 4 and "0 runs branch" in text


def test_only_wsd_runs_that_differ_in_their_budget_branch(tmp_path):
    cosine = _grid(tmp_path, "schedule: cosine", "{steps: [10, 20, 40]}")
    assert plan_branches(cosine.runs).branches == () and plan_branches(cosine.runs).describe() == ""
    one_budget = _grid(tmp_path, "schedule: wsd, steps: 20", "{lr: [0.01, 0.1]}")
    assert plan_branches(one_budget.runs).branches == ()


def test_branch_off_in_the_grid_trains_every_run_alone(tmp_path):
    g = _grid(tmp_path, "schedule: wsd", "{steps: [10, 20, 40]}", extra="branch: off")
    assert g.branch == "off"
    plan = plan_branches(g.runs, g.branch)
    assert plan.branches == () and plan.steps_branched == plan.steps_alone == 140


def test_an_unknown_branch_mode_names_the_valid_ones(tmp_path):
    with pytest.raises(UserError, match=r"unknown branch 'sometimes'.*auto, off"):
        _grid(tmp_path, "schedule: wsd", "{steps: [10, 20]}", extra="branch: sometimes")


def test_parents_come_first_in_dependency_order(tmp_path):
    g = _grid(tmp_path, "schedule: wsd", "{steps: [10, 20, 40]}")
    plan = plan_branches(g.runs)
    order = [r.run_id for r in dependency_order(g.runs, plan)]
    assert order[:2] == list(plan.parents)
    assert sorted(order) == sorted(r.run_id for r in g.runs)


def test_the_dry_run_prints_the_cost_with_and_without_branching(tmp_path):
    _grid(tmp_path, "schedule: wsd", "{steps: [10, 20, 40]}")
    cmd = "from harness.cli import main; main()"
    argv = [sys.executable, "-c", cmd, "submit", str(tmp_path / "g.yaml"), "--dry-run"]
    out = subprocess.run(
        [*argv, "--launcher", "local"], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout
    assert "branching: 4 runs branch from 2 stable phases; steps trained 92 with branching, " in out
    assert "140 without (34% less)" in out


def test_a_slurm_task_holds_whole_families_parent_first(tmp_path):
    from harness.launch.slurm.arrays import group_into_tasks

    g = _grid(tmp_path, "schedule: wsd", "{steps: [10, 20, 40]}", seeds=3)
    plan = plan_branches(g.runs)
    runs = dependency_order(g.runs, plan)
    families = {p: p for p in plan.parents} | {b.run_id: b.parent for b in plan.branches}
    tasks = group_into_tasks(runs, 1, families)
    assert len(tasks) == 3  # one per (configuration, seed)
    for task, parent in zip(tasks, plan.parents, strict=True):
        assert task.run_ids[0] == parent
        assert set(task.run_ids) == {parent, *(b.run_id for b in plan.points_of(parent))}
    assert [len(t.run_ids) for t in group_into_tasks(runs, 6, families)] == [6, 3]
    assert len(group_into_tasks(runs, 1)) == 9  # without families: a run per task


def test_a_launcher_profile_turns_branching_off_unless_the_grid_says_otherwise(tmp_path):
    from harness.launch.branching import plan_for
    from harness.launch.profile import make_profile

    off = make_profile("p", {"kind": "local", "branch": False}, "p.yaml")  # YAML's off
    assert off.branch == "off"
    assert make_profile("p", {"kind": "local"}, "p.yaml").branch == "auto"
    with pytest.raises(UserError, match=r"p.yaml: branch: unknown branch 'never'"):
        make_profile("p", {"kind": "local", "branch": "never"}, "p.yaml")
    g = _grid(tmp_path, "schedule: wsd", "{steps: [10, 20, 40]}")
    assert plan_for(g, off).branches == ()
    g = _grid(tmp_path, "schedule: wsd", "{steps: [10, 20, 40]}", extra="branch: auto")
    assert len(plan_for(g, off).branches) == 4  # the grid's own value wins
