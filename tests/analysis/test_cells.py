"""Cells by default (issue 30, item 5): a grid's conditions are cells unless pooled with
``--pool``, and a field derived by an expression (``warmup_steps: "0.1 * steps"``) follows its
sources and is never tuned over."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from harness import api
from harness.analysis.rows.conditions import auto_over, followers, open_conditions
from harness.analysis.testing import make_run, write_run
from harness.cli import main
from harness.core.errors import UserError

BATCHES = (16, 64)
LRS = (1e-3, 3e-3, 1e-2)


def _ppl(opt: str, bs: int, k: int, seed: int) -> float:
    """SGD worse than AdamW at batch 16, better at batch 64; the best lr is the largest one at
    batch 64 (an edge there), the middle one at batch 16."""
    level = {("adamw", 16): 20.0, ("adamw", 64): 30.0, ("sgd", 16): 25.0, ("sgd", 64): 24.0}
    best_k = 1 if bs == 16 else 2
    return level[(opt, bs)] + 2.0 * (k - best_k) ** 2 + 0.1 * (seed - 1)


def _run(opt: str, bs: int, lr: float, seed: int):
    steps = 1_048_576 // (bs * 64)
    return make_run(
        grid="conds",
        optimizer=opt,
        batch_size=bs,
        lr=lr,
        seed=seed,
        warmup_steps=int(0.1 * steps),
        lr_min=0.1 * lr,
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """Grid ``conds``: 2 optimizers x 2 batch sizes x 3 lrs x 3 seeds, warmup_steps = 0.1 x
    steps and lr_min = 0.1 x lr (expressions); one run of the plan (in the manifest) never ran."""
    root = tmp_path_factory.mktemp("results")
    for opt in ("adamw", "sgd"):
        for bs in BATCHES:
            for k, lr in enumerate(LRS):
                for s in range(3):
                    write_run(root, _run(opt, bs, lr, s), val_ppl=_ppl(opt, bs, k, s))
    return root


GRID = """\
name: conds
base: {model: tiny, dataset: kjv, seq_len: 64, tokens: 1048576, warmup_steps: "0.1 * steps",
       lr_min: "0.1 * lr"}
grid:
  optimizer: [adamw, sgd]
  batch_size: [16, 64]
  lr: [1.0e-3, 3.0e-3, 1.0e-2]
seeds: 3
"""


def _cli(root: Path, *args: str):
    return CliRunner().invoke(main, [*args, "--results", str(root)])


def _json(result) -> pd.DataFrame:
    assert result.exit_code == 0, result.output
    return pd.DataFrame(json.loads(result.stdout))


ARMS = ("--a", "optimizer=adamw", "--b", "optimizer=sgd")


@pytest.mark.parametrize(
    "args",
    [
        ("best", "conds", "--by", "optimizer"),
        ("compare", "conds", *ARMS),
        ("gap", "conds", "--baseline", "optimizer=sgd", "--reference", "optimizer=adamw"),
        ("optimum", "conds"),
        ("power", "conds", *ARMS),
    ],
)
def test_batch_sizes_are_cells_without_by(root, args):
    """Without --by batch_size every question keeps the batch sizes apart: main pooled them
    into one cell (warmup_steps, tuned over, told them apart)."""
    res = _cli(root, "analyze", *args, "--format", "json")
    table = _json(res)
    assert "batch_size" in table.columns
    assert sorted(table["batch_size"].unique()) == list(BATCHES)
    assert "warmup_steps" not in res.stderr and "lr_min" not in res.stderr
    assert "cells by batch_size too" in res.stderr


def test_compare_per_batch_size_gets_the_sign_right(root):
    """Pooled, the comparison of the best-over-batch-sizes hides that SGD wins at batch 64."""
    table = _json(_cli(root, "analyze", "compare", "conds", *ARMS, "--format", "json"))
    diff = dict(zip(table["batch_size"], table["diff"], strict=True))
    assert diff[16] > 0 > diff[64]  # b - a: SGD worse at 16, better at 64


def test_expression_fields_are_never_tuned_nor_edges(root):
    res = _cli(root, "analyze", "best", "conds", "--by", "optimizer")
    assert res.exit_code == 0, res.output
    notes = [line for line in res.output.splitlines() if line.startswith("note:")]
    assert any(n.endswith("tuned over: lr") for n in notes), notes
    assert "warmup_steps" not in res.output and "lr_min" not in res.output
    table = _json(_cli(root, "analyze", "best", "conds", "--by", "optimizer", "--format", "json"))
    edges = table.set_index(["optimizer", "batch_size"])["edge"]
    assert edges[("adamw", 64)].startswith("lr=0.01 is the largest tried")
    assert edges[("adamw", 16)] == ""


def test_pool_tunes_over_the_condition(root):
    """--pool batch_size: one cell per optimizer, batch size tuned over like lr; warmup_steps
    still follows it (not tuned, no edge)."""
    res = _cli(
        root,
        "analyze",
        "best",
        "conds",
        "--by",
        "optimizer",
        "--pool",
        "batch_size",
        "--format",
        "json",
    )
    table = _json(res)
    assert len(table) == 2
    best = dict(zip(table["optimizer"], table["batch_size"], strict=True))
    assert best == {"adamw": 16, "sgd": 64}
    assert "tuned over: lr, batch_size" in res.stderr
    assert "warmup_steps" not in res.stderr and "lr_min" not in res.stderr
    assert not table["edge"].str.contains("warmup_steps|lr_min").any()


def test_over_a_condition_pools_it_as_before(root):
    res = _cli(
        root,
        "analyze",
        "best",
        "conds",
        "--by",
        "optimizer",
        "--over",
        "lr,batch_size",
        "--format",
        "json",
    )
    table = _json(res)
    assert dict(zip(table["optimizer"], table["batch_size"], strict=True)) == {
        "adamw": 16,
        "sgd": 64,
    }


def test_pool_through_the_api(root):
    ans = api.analyze("best", "conds", results=root, by=["optimizer"], pool=["batch_size"])
    assert len(ans.table) == 2


@pytest.mark.parametrize("axis", ["lr", "nosuch", "warmup_steps"])
def test_pool_of_a_non_condition_is_refused(root, axis):
    res = _cli(root, "analyze", "best", "conds", "--by", "optimizer", "--pool", axis)
    assert res.exit_code == 2
    assert f"--pool: {axis!r} is not a condition" in res.output
    assert "valid choices: " in res.output and "batch_size" in res.output


def test_followers_from_the_data_and_the_yaml(root, tmp_path):
    from harness.analysis.questions.query import Query, load

    prep, _ = load(Query(grid="conds", results=str(root)))
    rows = prep.rows
    assert followers(rows) == ["warmup_steps", "lr_min"]
    assert auto_over(rows, ["optimizer", "batch_size"]) == ["lr"]
    assert auto_over(rows, ["optimizer"]) == ["lr"]
    assert open_conditions(rows, ["optimizer"]) == ["batch_size"]
    assert open_conditions(rows, ["optimizer"], pool=["batch_size"]) == []
    # a grid's own expressions follow even when the data alone could not tell
    one = rows[rows["batch_size"] == 16]
    assert "lr_min" in followers(one)  # a constant multiple of lr
    path = tmp_path / "conds.yaml"
    path.write_text(GRID)
    prep, _ = load(Query(grid=str(path), results=str(root)))
    assert set(prep.expressions) == {"warmup_steps", "lr_min"}


def test_a_zipped_lr_follows_the_batch_size(tmp_path):
    """lr zipped with the batch size (one lr per batch size): cells by batch size, lr not tuned;
    pooled, the batch size is what is tuned."""
    for bs, lr in ((16, 1e-3), (64, 2e-3)):
        for s in range(2):
            write_run(
                tmp_path,
                make_run(grid="zip", batch_size=bs, lr=lr, seed=s),
                val_ppl=20.0 + bs / 16 + s * 0.1,
            )
    res = _cli(tmp_path, "analyze", "best", "zip", "--pool", "batch_size", "--format", "json")
    table = _json(res)
    assert len(table) == 1 and int(table["batch_size"].iloc[0]) == 16
    assert "tuned over: batch_size" in res.stderr  # lr moves with it: not tuned
    assert "lr" not in table.columns or math.isclose(float(table["lr"].iloc[0]), 1e-3)


@pytest.fixture(scope="module")
def partial(tmp_path_factory) -> Path:
    """Grid ``part``: 24 runs planned (2 optimizers x 2 batch sizes x 2 lrs x 3 seeds), 6 with
    a row (one completed cell per optimizer... and one diverged), 18 missing."""
    root = tmp_path_factory.mktemp("partial")
    from harness.store.manifest import write_manifest

    plan = [
        make_run(grid="part", optimizer=o, batch_size=b, lr=lr, seed=s)
        for o in ("adamw", "sgd")
        for b in BATCHES
        for lr in LRS[:2]
        for s in range(3)
    ]
    write_manifest(root, "part", plan)
    done = [r for r in plan if r.data.batch_size == 16 and r.optim.lr == LRS[0]]
    for k, run in enumerate(done):
        status = "diverged" if k == 0 else "completed"
        write_run(root, run, val_ppl=20.0 + k, status=status)
    write_run(root, plan[-1], status="failed")  # a failed run is still missing
    return root


MISSING = "18 of 24 planned runs have no result yet"


@pytest.mark.parametrize(
    "args",
    [
        ("best", "part", "--by", "optimizer"),
        ("compare", "part", *ARMS),
        ("gap", "part", "--baseline", "optimizer=sgd", "--reference", "optimizer=adamw"),
        ("power", "part", *ARMS),
        ("targets", "part", "--target", "100"),
        ("profiles", "part", "--target", "100"),
    ],
)
def test_every_table_says_how_many_planned_runs_are_missing(partial, args):
    res = _cli(partial, "analyze", *args)
    assert res.exit_code == 0, res.output
    assert f"note: {MISSING}" in res.output


def test_where_restricts_the_plan_too(partial):
    res = _cli(partial, "analyze", "best", "part", "--by", "optimizer", "--where", "lr < 0.002")
    assert "note: 6 of 12 planned runs have no result yet" in res.output
    res = _cli(partial, "analyze", "best", "part", "--by", "optimizer", "--where", "val_ppl < 99")
    assert f"note: {MISSING} (the whole plan" in res.output


def test_a_complete_sweep_says_nothing(root):
    assert "planned runs" not in _cli(root, "analyze", "best", "conds", "--by", "optimizer").output


def test_the_report_says_how_many_planned_runs_are_missing(partial):
    html = api.report("part", results=partial)
    assert MISSING in html


def test_an_expression_field_is_never_extended(tmp_path):
    """``lr_min: "0.1 * lr"`` and ``warmup_steps: "0.1 * steps"``: the best lr sits on an edge,
    and only lr is extended (main also planned lr_min beyond its own edge)."""
    from functools import partial

    from harness.core.catalogue import flat
    from harness.data.catalogue import vocab_lookup
    from harness.followup.planning import plan_extension
    from harness.grid.followup import ExtendSpec
    from harness.grid.load import load_grid
    from harness.grid.vary import vary

    path = tmp_path / "g.yaml"
    path.write_text(
        "name: g\nbase: {model: tiny, optimizer: adamw, seq_len: 64, tokens: 102400, "
        'eval_tokens: 4096, lr_min: "0.1 * lr", warmup_steps: "0.1 * steps"}\n'
        "grid: {batch_size: [8, 16], lr: [1.0e-4, 1.0e-3, 1.0e-2]}\nseeds: 2\n"
    )
    g = load_grid(path, vocab=vocab_lookup(tmp_path))
    rows = pd.DataFrame(
        [
            {
                "run_id": r.run_id,
                **flat(r),
                "status": "completed",
                "value": 3.0 - math.log10(r.optim.lr) * 0.1 + 1e-4 * r.execution.seed,
            }
            for r in g.runs
        ]
    )
    runs = {r.run_id: r for r in g.runs}
    plan = plan_extension(rows, runs, ExtendSpec(), change=partial(vary, g))
    text = "\n".join(plan.lines)
    assert "lr=0.01 is the largest tried" in text
    assert "lr_min" not in text and "warmup_steps" not in text
    assert sorted({r.optim.lr for r in plan.runs}) == [0.1]
    assert all(r.optim.lr_min == pytest.approx(0.1 * r.optim.lr) for r in plan.runs)


def _panels(drawn) -> int:
    import matplotlib.pyplot as plt

    (d,) = drawn
    assert d.figure is not None, d.skipped
    n = sum(1 for ax in d.figure.axes if ax.has_data())
    plt.close(d.figure)
    return n


def test_figures_and_report_share_pool(root):
    """--pool is one option of analyze, figures and report: a pooled batch size is no panel."""
    kw = {"results": root, "names": ["loss_curves"], "write": False}
    assert _panels(api.figures("conds", **kw).drawn) == 2  # a panel per batch size
    assert _panels(api.figures("conds", **kw, pool=["batch_size"]).drawn) == 1
    with pytest.raises(UserError, match="--pool: 'lr' is not a condition"):
        api.figures("conds", **kw, pool=["lr"])
    html = api.report("conds", results=root, pool=["batch_size"])
    assert "harness analyze best conds --pool batch_size" in html
    assert "pooled (--pool): batch_size" in html
    res = _cli(root, "report", "conds", "-o", str(root / "r.html"), "--pool", "nosuch")
    assert res.exit_code == 2 and "valid choices: batch_size" in res.output


def test_a_yaml_expression_the_data_cannot_tell_follows(tmp_path):
    """``lr_min: "lr ** 2 * 100"`` moves one to one with lr but not as a constant multiple:
    only the grid YAML says it is derived; named as GRID, it is never tuned over."""
    for lr in (1e-3, 3e-3, 1e-2):
        for s in range(2):
            run = make_run(grid="sq", lr=lr, lr_min=lr * lr * 100, seed=s)
            write_run(tmp_path, run, val_ppl=20.0 + abs(math.log10(lr / 3e-3)) + 0.1 * s)
    path = tmp_path / "sq.yaml"
    path.write_text("name: sq\nbase: {lr_min: 'lr ** 2 * 100'}\ngrid: {lr: [1.0e-3, 3.0e-3]}\n")
    by_name = _cli(tmp_path, "analyze", "best", "sq")
    assert "tuned over: lr, lr_min" in by_name.output  # the data alone: two tuned axes
    by_yaml = _cli(tmp_path, "analyze", "best", str(path))
    assert by_yaml.exit_code == 0, by_yaml.output
    assert "note: tuned over: lr\n" in by_yaml.output
