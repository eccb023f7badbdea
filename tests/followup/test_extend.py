"""Edges on every numeric tuning axis, ``submit --extend`` planning (issue 19, item 3) and
confirmation seeds (item 2), on synthetic results: a known quadratic in log-lr."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path

import pandas as pd
import pytest

from harness.analysis.rows.edges import edge_note, open_edge
from harness.analysis.rows.preparation import VALUE
from harness.analysis.rows.tuning import confirmed, tune
from harness.core.catalogue import flat
from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.data.catalogue import vocab_lookup
from harness.followup.planning import in_place, plan_confirmation, plan_extension
from harness.grid.followup import ExtendSpec
from harness.grid.load import Grid, load_grid
from harness.grid.vary import vary
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name

pytestmark = pytest.mark.usefixtures("runs_in_process")  # runs train in the test's process

BASE = """
name: g
base: {model: tiny, optimizer: adamw, seq_len: 64, batch_size: 16, tokens: 102400,
       eval_tokens: 4096}
"""


def grid(tmp_path: Path, extra: str):
    p = tmp_path / "g.yaml"
    p.write_text(textwrap.dedent(BASE) + textwrap.dedent(extra))
    return load_grid(p, vocab=vocab_lookup(tmp_path))


# --- edges on every numeric tuning axis ---------------------------------------------------------


@pytest.mark.parametrize(
    ("axis", "searched", "best", "note"),
    [
        # {0, x} weight decay: 0 is the lower edge; best at x with only 0 below is open upward
        ("weight_decay", [0.0, 0.01], 0.01, "weight_decay=0.01 is the largest tried: add 0.1"),
        ("weight_decay", [0.0, 0.01], 0.0, ""),
        (
            "weight_decay",
            [0, 1e-4, 1e-3],
            1e-3,
            "weight_decay=0.001 is the largest tried: add 0.01",
        ),
        ("momentum", [0.0, 0.9], 0.9, "momentum=0.9 is the largest tried: add 0.99"),
        ("momentum", [0.8, 0.9], 0.8, "momentum=0.8 is the smallest tried: add 0.6"),
        ("beta1", [0.9, 0.99], 0.9, "beta1=0.9 is the smallest tried: add 0"),
        ("eps", [1e-8, 1e-6], 1e-8, "eps=1e-08 is the smallest tried: add 1e-10"),
        ("clip_value", [1e-3, 1e-2], 1e-2, "clip_value=0.01 is the largest tried: add 0.1"),
        ("embedding_lr_factor", [1, 3, 9], 9, "embedding_lr_factor=9 is the largest tried: add 27"),
        ("warmup_steps", [0, 10, 20], 20, "warmup_steps=20 is the largest tried: add 30"),
        # an optimizer's own hyperparameters: log when geometric, linear (integers kept) else
        ("gamma", [1e-3, 1e-2, 1e-1], 1e-1, "gamma=0.1 is the largest tried: add 1"),
        ("gamma", [0.25, 0.5, 0.75], 0.25, "gamma=0.25 is the smallest tried: add 0"),
        ("precondition_every", [1, 2, 3], 3, "precondition_every=3 is the largest tried: add 4"),
    ],
)
def test_every_numeric_axis_is_checked(axis: str, searched: list, best: float, note: str) -> None:
    assert edge_note(axis, searched, best) == note


def test_a_neighbour_tried_beyond_the_best_closes_its_edge() -> None:
    # lr 0.1 was tried (it diverged: the row is there, scored worst): 0.03 is no longer an edge
    assert open_edge("lr", [0.001, 0.01, 0.03], 0.03) is not None
    assert open_edge("lr", [0.001, 0.01, 0.03, 0.1], 0.03) is None


LINES = """
grid:
  weight_decay:
    0.0: {lr: [1.0e-3, 1.0e-2, 1.0e-1]}
    0.1: {lr: [1.0e-3, 1.0e-2]}
seeds: 1
"""


def test_an_edge_is_judged_along_the_line_through_the_best(tmp_path: Path) -> None:
    """lr 0.1 was tried at weight decay 0 only: the best (lr 0.01, wd 0.1) is the largest lr on
    its own line (wd held at 0.1), so its edge is open though 0.1 was tried in the cell; a
    diverged lr 0.1 on that line closes it."""
    g = grid(tmp_path, LINES)
    rows = synthetic(g.runs, lambda r: quadratic(r) - 20 * r.optim.weight_decay)
    t = tune(rows, ["optimizer"], ["lr", "weight_decay"], "min").iloc[0]
    assert (t["lr"], t["weight_decay"]) == (1e-2, 0.1)
    assert "lr=0.01 is the largest tried: add 0.1" in t["edge"]
    runs = {r.run_id: r for r in g.runs}
    plan = plan_extension(rows, runs, ExtendSpec(axes=("lr",)), change=partial(vary, g))
    assert [(r.optim.lr, r.optim.weight_decay) for r in plan.runs] == [(0.1, 0.1)]
    runs.update({r.run_id: r for r in plan.runs})
    rows = synthetic(list(runs.values()), lambda r: quadratic(r) - 20 * r.optim.weight_decay)
    rows.loc[(rows["lr"] == 0.1) & (rows["weight_decay"] == 0.1), VALUE] = math.inf  # diverged
    t = tune(rows, ["optimizer"], ["lr", "weight_decay"], "min").iloc[0]
    assert (t["lr"], t["weight_decay"]) == (1e-2, 0.1) and "lr=" not in t["edge"]
    assert plan_extension(rows, runs, ExtendSpec(axes=("lr",))).runs == ()
    # a column that moves with lr (lr_min: "0.1 * lr") is part of the line, not held
    g = grid(tmp_path, LINES.replace("grid:", "grid:\n  lr_min: ['0.1 * lr']"))
    rows = synthetic(g.runs, lambda r: quadratic(r) - 20 * r.optim.weight_decay)
    t = tune(rows, ["optimizer"], ["lr", "lr_min", "weight_decay"], "min").iloc[0]
    assert "lr=0.01 is the largest tried: add 0.1" in t["edge"]


def test_weight_decay_zero_x_best_at_x_flagged_in_tuning(tmp_path: Path) -> None:
    g = grid(tmp_path, "grid: {optimizer: {sgd: {lr: [0.1], weight_decay: [0, 0.01]}}}\nseeds: 2\n")
    rows = synthetic(g.runs, lambda r: -r.optim.weight_decay)  # more decay is better
    plan = plan_extension(rows, {r.run_id: r for r in g.runs}, ExtendSpec())
    assert sorted({r.optim.weight_decay for r in plan.runs}) == [0.1]
    assert {r.extend_round for r in plan.runs} == {1} and len(plan.runs) == 2


# --- --extend planning on a known quadratic in log-lr ------------------------------------------

OPTIMUM = {"adamw": 0.1, "sgd": 5e-5}
"""The lr minimising each arm's loss: both beyond the grid's [1e-4, 1e-2]."""


def quadratic(run: RunConfig) -> float:
    return 3.0 + (math.log10(run.optim.lr) - math.log10(OPTIMUM[run.optim.optimizer])) ** 2


def synthetic(
    runs: tuple[RunConfig, ...] | list[RunConfig], loss: Callable[[RunConfig], float]
) -> pd.DataFrame:
    """Result rows of ``runs`` (completed, ``value`` = loss plus a small seed effect)."""
    out = []
    for r in runs:
        value = loss(r) + 1e-4 * r.execution.seed
        out.append({"run_id": r.run_id, **flat(r), "status": "completed", VALUE: value})
    return pd.DataFrame(out)


def extend_until_done(
    runs: Mapping[str, RunConfig], spec: ExtendSpec, g: Grid | None = None
) -> tuple[list[list[float]], dict[str, RunConfig], list[str]]:
    """Plan, 'train' (synthetic rows), repeat until nothing is planned: the lrs added per round."""
    runs = dict(runs)
    rounds: list[list[float]] = []
    for _ in range(10):
        rows = synthetic(list(runs.values()), quadratic)
        plan = plan_extension(rows, runs, spec, change=partial(vary, g) if g else in_place)
        if not plan.runs:
            return rounds, runs, list(plan.lines)
        rounds.append(sorted({r.optim.lr for r in plan.runs}))
        runs.update({r.run_id: r for r in plan.runs})
    raise AssertionError("never converged")


EXTEND_GRID = """
grid:
  optimizer:
    adamw: {lr: [1.0e-4, 1.0e-3, 1.0e-2]}
    sgd: {lr: [1.0e-4, 1.0e-3, 1.0e-2], momentum: [0.9]}
seeds: 2
"""


def test_extend_plans_the_right_points_and_converges(tmp_path: Path) -> None:
    g = grid(tmp_path, EXTEND_GRID)
    rounds, runs, last = extend_until_done({r.run_id: r for r in g.runs}, ExtendSpec())
    # adamw's optimum 0.1 is two decades up: 0.1 (round 1), 1 (round 2: 0.1 now inside);
    # sgd's 5e-5 is 0.3 decade down: 1e-5 (round 1), then 1e-4 is inside.
    assert rounds == [[1e-5, 0.1], [1.0]]
    by_round = {(r.optim.optimizer, r.optim.lr): r.extend_round for r in runs.values()}
    assert by_round[("adamw", 0.1)] == 1 and by_round[("adamw", 1.0)] == 2
    assert by_round[("sgd", 1e-5)] == 1 and by_round[("sgd", 1e-3)] is None
    # only that cell and arm: sgd never gets adamw's values, every seed of the best is planned
    assert ("sgd", 0.1) not in by_round and ("adamw", 1e-5) not in by_round
    assert sum(1 for r in runs.values() if r.extend_round) == 3 * 2
    # done: planning again adds nothing (idempotent), and extension runs keep the grid's run_ids
    again = plan_extension(synthetic(list(runs.values()), quadratic), runs, ExtendSpec())
    assert again.runs == () and last == []
    assert {r.run_id for r in g.runs} <= set(runs)


def test_extension_runs_are_resolved_as_the_grid_resolves_them(tmp_path: Path) -> None:
    # lr_min is an expression over lr: each extension run evaluates it at its own lr, even one
    # built from an earlier round's run (not a point of the grid)
    g = grid(tmp_path, EXTEND_GRID.replace("grid:", "grid:\n  lr_min: ['0.1 * lr']"))
    rounds, runs, _ = extend_until_done({r.run_id: r for r in g.runs}, ExtendSpec(), g)
    assert rounds == [[1e-5, 0.1], [1.0]]
    for r in runs.values():
        assert r.optim.lr_min == pytest.approx(0.1 * r.optim.lr)
    _, moved, _ = extend_until_done({r.run_id: r for r in g.runs}, ExtendSpec())
    # values changed in place would move lr_min on its own and leave it stale beside a new lr
    assert any(r.optim.lr_min != pytest.approx(0.1 * r.optim.lr) for r in moved.values())
    confirm = plan_confirmation(
        synthetic(list(runs.values()), quadratic), runs, [5], change=partial(vary, g)
    )
    got = sorted((r.optim.lr, r.optim.lr_min / r.optim.lr, r.execution.seed) for r in confirm.runs)
    assert got == [(1e-4, pytest.approx(0.1), 5), (0.1, pytest.approx(0.1), 5)]


def test_extend_stops_at_the_grids_bounds_and_rounds(tmp_path: Path) -> None:
    g = grid(tmp_path, EXTEND_GRID)
    start = {r.run_id: r for r in g.runs}
    bounded = ExtendSpec(axes=("lr",), bounds=(("lr", 5e-5, 0.05),))
    rounds, _, last = extend_until_done(start, bounded)
    assert rounds == [[5e-5, 0.05]]  # clipped to the bounds, then the bounds are the edges
    assert sum("limit reached" in line for line in last) == 2
    rounds, _, last = extend_until_done(start, ExtendSpec(rounds=1))
    assert rounds == [[1e-5, 0.1]] and any("1 round(s)" in line for line in last)
    rounds, _, _ = extend_until_done(start, ExtendSpec(axes=("momentum",)))
    assert rounds == []  # lr not extendable: nothing planned


LOCAL_EXTEND = """
grid: {lr: [1.0e-3, 1.0e-2]}
seeds: 1
extend: {axes: [lr], rounds: 3, bounds: {lr: [1.0e-5, 1.0]}}
local:
  base: {tokens: 20480}
  extend: {rounds: 1, bounds: {lr: [1.0e-4, 0.5]}}
"""


def test_local_section_overrides_extend_key_by_key(tmp_path: Path) -> None:
    full = grid(tmp_path, LOCAL_EXTEND)
    assert full.extend == ExtendSpec(("lr",), 3, (("lr", 1e-5, 1.0),))
    local = load_grid(tmp_path / "g.yaml", vocab=vocab_lookup(tmp_path), local=True)
    assert local.extend == ExtendSpec(("lr",), 1, (("lr", 1e-4, 0.5),))  # axes kept
    rounds, _, last = extend_until_done({r.run_id: r for r in local.runs}, local.extend)
    assert rounds == [[0.1]] and any("1 round(s)" in line for line in last)
    only_local = grid(tmp_path, "grid: {lr: [1.0e-3]}\nlocal: {extend: {rounds: 2}}\n")
    assert only_local.extend is None
    p = tmp_path / "g.yaml"
    assert load_grid(p, vocab=vocab_lookup(tmp_path), local=True).extend == ExtendSpec(rounds=2)
    p.write_text(textwrap.dedent(BASE) + "local: {extend: {round: 2}}\n")
    with pytest.raises(UserError, match=r"local.extend: unknown key 'round'; valid keys: axes"):
        load_grid(p, vocab=vocab_lookup(tmp_path))


def test_a_diverged_value_beyond_the_best_stops_extension(tmp_path: Path) -> None:
    g = grid(tmp_path, "grid: {lr: [1.0e-3, 1.0e-2]}\nseeds: 1\n")
    runs = {r.run_id: r for r in g.runs}
    plan = plan_extension(synthetic(g.runs, quadratic), runs, ExtendSpec())
    assert [r.optim.lr for r in plan.runs] == [0.1]
    runs.update({r.run_id: r for r in plan.runs})
    rows = synthetic(list(runs.values()), quadratic)
    rows.loc[rows["lr"] == 0.1, VALUE] = math.inf  # diverged: scored worst
    assert plan_extension(rows, runs, ExtendSpec()).runs == ()


# --- confirmation seeds -------------------------------------------------------------------------


def test_seeds_grammar(tmp_path: Path) -> None:
    plain = grid(tmp_path, "grid: {lr: [1.0e-3, 1.0e-2]}\nseeds: 3\n")
    split = grid(tmp_path, "grid: {lr: [1.0e-3, 1.0e-2]}\nseeds: {tune: 3, confirm: 2}\n")
    assert [r.run_id for r in plain.runs] == [r.run_id for r in split.runs]
    assert plain.confirm_seeds == () and split.confirm_seeds == (3, 4)
    listed = grid(tmp_path, "grid: {lr: [1.0e-3]}\nseeds: {tune: [0, 1], confirm: [7]}\n")
    assert listed.confirm_seeds == (7,) and [r.execution.seed for r in listed.runs] == [0, 1]
    for bad, message in [
        ("seeds: {tune: 2, test: 1}", "unknown key 'test'; valid keys: confirm, tune"),
        ("seeds: {tune: [0, 1], confirm: [1]}", "also tuning seeds"),
        ("extend: {axis: [lr]}", "unknown key 'axis'; valid keys: axes, bounds, rounds"),
        ("extend: {axes: [schedule]}", "'schedule' is not an extendable axis"),
        ("extend: {bounds: {lr: [1, 0.1]}}", "low < high"),
    ]:
        with pytest.raises(UserError, match=message.replace("(", r"\(")):
            grid(tmp_path, "grid: {lr: [1.0e-3]}\n" + bad + "\n")


def test_confirmation_trains_the_selected_configuration_on_fresh_seeds(tmp_path: Path) -> None:
    g = grid(tmp_path, EXTEND_GRID.replace("seeds: 2", "seeds: {tune: 2, confirm: 3}"))
    runs = {r.run_id: r for r in g.runs}
    plan = plan_confirmation(synthetic(g.runs, quadratic), runs, g.confirm_seeds)
    got = sorted((r.optim.optimizer, r.optim.lr, r.execution.seed) for r in plan.runs)
    assert got == [(o, lr, s) for o, lr in (("adamw", 1e-2), ("sgd", 1e-4)) for s in (2, 3, 4)]
    assert all(r.confirm and r.extend_round is None for r in plan.runs)


def test_analysis_reports_confirmed_values_else_says_same_seeds(tmp_path: Path) -> None:
    g = grid(tmp_path, EXTEND_GRID.replace("seeds: 2", "seeds: {tune: 2, confirm: 2}"))
    runs = {r.run_id: r for r in g.runs}
    tune_rows = synthetic(g.runs, quadratic)
    plan = plan_confirmation(tune_rows, runs, g.confirm_seeds)
    confirm_rows = synthetic(list(plan.runs), lambda r: quadratic(r) + 0.5)  # winner's curse
    keys, over = ["optimizer"], ["lr"]
    same = confirmed(tune_rows, keys, over, "min")
    assert "selected and tested on the same seeds" in same.note
    assert same.table.set_index("optimizer").loc["adamw", "mean"] == pytest.approx(3 + 1 + 5e-5)
    both = confirmed(pd.concat([tune_rows, confirm_rows], ignore_index=True), keys, over, "min")
    t = both.table.set_index("optimizer")
    assert t.loc["adamw", "lr"] == 1e-2 and t.loc["adamw", "n"] == 2
    assert t.loc["adamw", "mean"] == pytest.approx(3 + 1 + 0.5 + 2.5e-4)  # seeds 2 and 3
    assert t.loc["adamw", "tune_mean"] == pytest.approx(3 + 1 + 5e-5)
    assert set(both.seeds["seed"]) == {2, 3} and "confirmed on fresh seeds" in both.note
    # a sweep over lr (one cell per lr) keeps every point on the tuning seeds
    sweep = confirmed(pd.concat([tune_rows, confirm_rows]), ["optimizer", "lr"], [], "min")
    assert set(sweep.seeds["seed"]) == {0, 1} and "a sweep over lr" in sweep.note


# --- end to end: a tiny local grid closes its lr edge, then confirms ---------------------------

E2E = """
name: e2e
base: {model: tiny, dataset: classics-bpe8k, optimizer: adamw, seq_len: 32, batch_size: 8,
       tokens: 2048, eval_tokens: 2048, log_every: 4, warmup_steps: 2}
grid: {lr: [1.0e-3, 1.0e-2]}
seeds: {tune: 1, confirm: 1}
extend: {axes: [lr], rounds: 4}
local: {base: {}}
"""


@pytest.mark.slow
def test_local_grid_reaches_an_interior_optimum_with_extend(
    tmp_path: Path, prepared_data: Path
) -> None:
    from click.testing import CliRunner

    from harness.cli import main
    from harness.store.manifest import read_manifest

    path = tmp_path / "e2e.yaml"
    path.write_text(textwrap.dedent(E2E))
    argv = [
        "submit",
        str(path),
        "--local",
        "--extend",
        "--confirm",
        "--results",
        str(tmp_path / "res"),
        "--data",
        str(prepared_data),
    ]
    plain = CliRunner().invoke(main, [a for a in argv if a not in ("--extend", "--confirm")])
    assert plain.exit_code == 0 and "launching 2" in plain.output, plain.output
    dry = CliRunner().invoke(main, [*argv, "--dry-run"], catch_exceptions=False)
    assert "round 1 adds 0.1" in dry.output and "estimated compute" in dry.output, dry.output
    assert not any(r.extend_round for r in read_manifest(tmp_path / "res", "e2e").values())
    first = CliRunner().invoke(main, argv, catch_exceptions=False)
    assert first.exit_code == 0, first.output
    assert "round 1 adds" in first.output and "--extend: no best on an open edge" in first.output
    runs = read_manifest(tmp_path / "res", "e2e").values()
    tried = sorted(r.optim.lr for r in runs if not r.confirm)
    assert tried[:2] == [1e-3, 1e-2] and len(tried) >= 3  # at least one value beyond 0.01
    assert {r.extend_round for r in runs if r.optim.lr > 1e-2} >= {1}
    (picked,) = [r for r in runs if r.confirm]
    assert picked.execution.seed == 1 and tried[0] < picked.optim.lr < tried[-1]  # interior
    again = CliRunner().invoke(main, argv, catch_exceptions=False)  # idempotent: nothing new
    assert "0 new run(s) planned" in again.output and "launching 0" in again.output
    best = CliRunner().invoke(
        main,
        ["analyze", "best", str(path), "--results", str(tmp_path / "res")],
        catch_exceptions=False,
    )
    assert "confirmed on fresh seeds: 1 of 1" in best.output and "edge:" not in best.output


@pytest.mark.parametrize(
    ("local", "digest"), [(False, "ab5b5cd7244703f6"), (True, "0085e897f940fd5f")]
)
def test_confirmation_seeds_change_no_shipped_run_id(local: bool, digest: str) -> None:
    """optimizer_gap declares seeds {tune: 3, confirm: 3} and an extend: section: its runs and
    their run_ids are those it had with seeds [0, 1, 2] (sha256 of the sorted ids, from main)."""
    import hashlib

    path = Path(__file__).resolve().parents[2] / "grids" / "optimizer_gap.yaml"
    vocab = {"classics-gpt2": 50304, "classics-bpe8k": 8192}
    g = load_grid(path, vocab=vocab.__getitem__, local=local)
    ids = ",".join(sorted(r.run_id for r in g.runs))
    assert hashlib.sha256(ids.encode()).hexdigest()[:16] == digest
    assert g.confirm_seeds == (3, 4, 5) and g.extend is not None


def test_confirm_without_confirmation_seeds_is_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from harness.cli import main

    path = tmp_path / "g.yaml"
    path.write_text(textwrap.dedent(BASE) + "grid: {lr: [1.0e-3]}\nseeds: 2\n")
    r = CliRunner().invoke(
        main,
        [
            "submit",
            str(path),
            "--launcher",
            "local",
            "--confirm",
            "--dry-run",
            "--results",
            str(tmp_path / "res"),
        ],
    )
    assert r.exit_code == 2
    assert "declares no confirmation seeds; write e.g. seeds: {tune: 3, confirm: 3}" in r.output
    assert not (tmp_path / "res").exists()


@pytest.mark.slurm
def test_extend_with_wait_loops_on_slurm(slurm_env: Path, prepared_data: Path) -> None:
    """On SLURM, submit --extend --wait queues each round once the previous one finished."""
    import yaml

    from harness.store.manifest import read_manifest
    from tests.slurm_runs import invoke, rows, write_profile

    launcher = write_profile(slurm_env / "launchers", "slurm-ext")
    path = slurm_env / "ext.yaml"  # quadratic runs: what is tested is how the rounds are queued
    base = {"workload": "quadratic", "optimizer": "adamw", "steps": 6, "warmup_steps": 1}
    doc = {"name": "ext", "launcher": launcher, "base": base, "seeds": 1}
    grid = {"grid": {"lr": [1.0e-3, 1.0e-2]}, "extend": {"axes": ["lr"], "rounds": 2}}
    path.write_text(yaml.safe_dump({**doc, **grid}))
    root = slurm_env / "results"
    out = invoke("submit", path, "--extend", "--wait", "--results", root, "--data", prepared_data)
    assert out.exit_code == 0, out.output
    assert "round 1 adds 0.1" in out.output and out.output.count("finished:") >= 2, out.output
    manifest = read_manifest(root, "ext")
    assert {r.optim.lr for r in manifest.values()} >= {1e-3, 1e-2, 0.1}
    assert set(rows(root, "ext")) == set(manifest)  # every round ran
    again = invoke("submit", path, "--extend", "--results", root, "--data", prepared_data)
    assert "0 new run(s) planned" in again.output and "launching 0" in again.output
