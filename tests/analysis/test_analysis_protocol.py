"""The analysis protocol of issue 13: select by one metric and report another (the paper's
Sec. 6.2 picks the SGD-embedding factor by loss, then reports the embedding metrics there), and
arms compared across grids (its Table 4 sets SGD embeddings beside AdamW and Coupled Adam)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.analysis.testing import make_run, write_run
from harness.cli import main
from tests.cli_calls import rows_of as _json

# The paper's Table 7, D = 5B: factor f -> (loss, rho, kappa). Loss picks f = 300; rho alone
# would pick 600 and kappa alone 100: three different models.
TABLE7 = {100: (3.23, 59.0, 25.0), 300: (3.17, 71.0, 15.5), 600: (3.24, 79.0, 11.6)}
# Table 1 (125M, 5B): optimizer -> (loss, rho, kappa)
TABLE1 = {"adamw": (3.14, -54.0, 0.6), "coupled_adam": (3.12, 87.0, 4.8)}
SEEDS = (-0.002, 0.0, 0.002)  # per-seed offsets of the loss (mean exact)
ADAM = {"beta1": 0.9, "beta2": 0.95, "eps": 1e-8}


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("results")
    for f, (loss, rho, kappa) in TABLE7.items():
        for s, off in enumerate(SEEDS):
            run = make_run(
                grid="sgd_embeddings",
                optimizer="adamw",
                embedding_optimizer="sgd",
                embedding_lr_factor=float(f),
                momentum=0.9,
                nesterov=False,
                weight_decay_mode="decoupled",
                seed=s,
                **ADAM,
            )
            write_run(
                root, run, val_ppl=math.exp(loss + off), metrics={"rho": rho + s, "kappa": kappa}
            )
    for opt, (loss, rho, kappa) in TABLE1.items():
        for s, off in enumerate(SEEDS):
            run = make_run(grid="coupled_adam", optimizer=opt, seed=s, **ADAM)
            write_run(
                root, run, val_ppl=math.exp(loss + off), metrics={"rho": rho + s, "kappa": kappa}
            )
    return root


def test_select_by_loss_reports_the_embedding_metric_at_the_loss_best_factor(root):
    (row,) = _json(root, "analyze", "best", "sgd_embeddings", "--metric", "rho")
    assert row["embedding_lr_factor"] == 300  # picked by val_loss, the default
    assert row["mean"] == pytest.approx(72.0)  # rho there (71 + mean seed offset 1)
    assert row["select_mean"] == pytest.approx(math.log(math.exp(3.17)), abs=1e-9)
    (by_rho,) = _json(
        root, "analyze", "best", "sgd_embeddings", "--metric", "rho", "--select-by", "rho"
    )
    assert by_rho["embedding_lr_factor"] == 600 and by_rho["mean"] == pytest.approx(80.0)
    (kappa,) = _json(root, "analyze", "best", "sgd_embeddings", "--metric", "kappa")
    assert kappa["embedding_lr_factor"] == 300 and kappa["mean"] == pytest.approx(15.5)
    # the loss itself is unchanged by the default (val_ppl selects by itself)
    (ppl,) = _json(root, "analyze", "best", "sgd_embeddings")
    assert ppl["embedding_lr_factor"] == 300 and "select_mean" not in ppl


def test_select_by_reaches_the_figures(root):
    res = CliRunner().invoke(
        main,
        [
            "figures",
            "sgd_embeddings",
            "--figure",
            "loss_curves",
            "--metric",
            "rho",
            "--results",
            str(root),
        ],
    )
    assert res.exit_code == 0, res.output
    side = json.loads((root / "sgd_embeddings" / "figures" / "loss_curves-rho.json").read_text())
    assert side["select_by"] == "val_loss" and side["metric"] == "rho"
    # what every figure's points are: the loss-best factor, drawn by rho
    from harness.analysis.present.figures.common import tuned_points
    from harness.analysis.rows.arm_labels import add_methods
    from harness.analysis.rows.load import select
    from harness.analysis.rows.preparation import prepare

    frame = select("sgd_embeddings", results=root).frame("runs")
    prep = prepare(frame, "rho", "max", "val_loss", "min")
    points = tuned_points(add_methods(prep.rows), ["method"], "max", prep.select_goal)
    assert points.over == ["embedding_lr_factor"]
    assert points.table["embedding_lr_factor"].tolist() == [300]
    assert points.table["mean"].tolist() == pytest.approx([72.0])


def test_arms_compared_across_two_grids(root):
    """Table 4's rows from two grids: AdamW and Coupled Adam (coupled_adam), and AdamW with
    SGD embeddings tuned over f by loss (sgd_embeddings)."""
    rows = _json(
        root,
        "analyze",
        "best",
        "coupled_adam",
        "sgd_embeddings",
        "--metric",
        "rho",
        "--by",
        "optimizer,embedding_optimizer",
    )
    got = {(r["optimizer"], r["embedding_optimizer"]): r for r in rows}
    assert set(got) == {("adamw", None), ("coupled_adam", None), ("adamw", "sgd")}
    assert got[("adamw", "sgd")]["embedding_lr_factor"] == 300
    assert got[("adamw", "sgd")]["mean"] == pytest.approx(72.0)
    assert got[("coupled_adam", None)]["mean"] == pytest.approx(88.0)
    cmp = _json(
        root,
        "analyze",
        "compare",
        "coupled_adam",
        "sgd_embeddings",
        "--metric",
        "val_loss",
        "--a",
        "grid=coupled_adam,optimizer=adamw",
        "--b",
        "embedding_optimizer=sgd",
        "--test",
        "paper",
    )
    (c,) = cmp
    assert c["mean_b"] - c["mean_a"] == pytest.approx(3.17 - 3.14, abs=1e-9)
    everything = _json(root, "analyze", "best", "--by", "grid,optimizer,embedding_optimizer")
    assert {r["grid"] for r in everything} == {"coupled_adam", "sgd_embeddings"}
    one = _json(root, "analyze", "best", "coupled_adam", "--by", "optimizer")
    assert {r["optimizer"] for r in one} == {"adamw", "coupled_adam"}


def test_figures_of_two_grids(root):
    res = CliRunner().invoke(
        main,
        [
            "figures",
            "coupled_adam",
            "sgd_embeddings",
            "--figure",
            "loss_curves",
            "--results",
            str(root),
        ],
    )
    assert res.exit_code == 0, res.output
    side = root / "coupled_adam+sgd_embeddings" / "figures" / "loss_curves.json"
    sidecar = json.loads(side.read_text())
    assert sidecar["grids"] == ["coupled_adam", "sgd_embeddings"]
    assert sidecar["rows"]["runs"] == 9 + 6


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["best", "sgd_embeddings", "--select-by", "nope"], "--select-by 'nope' has no known"),
        (["best", "sgd_embeddings", "--select-by", "mean_norm"], "no known direction"),
        (["best", "sgd_embeddings", "no_such_grid"], "no results for grid 'no_such_grid'"),
    ],
)
def test_bad_selection_is_one_line_exit_2(root, args, message):
    res = CliRunner().invoke(main, ["analyze", *args, "--results", str(root)])
    assert res.exit_code == 2 and message in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_rows_written_before_iso_sym_count_as_iso_sym(tmp_path):
    """``iso`` changed meaning: a trained row without ``iso_sym`` holds the symmetric value."""
    old = make_run(grid="iso", lr=1e-3)
    new = make_run(grid="iso", lr=2e-3)
    write_run(tmp_path, old, val_ppl=30.0, metrics={"iso": 0.65}, source=None)
    write_run(tmp_path, new, val_ppl=31.0, metrics={"iso": 0.8, "iso_sym": 0.64}, source=None)
    sym = {
        r["lr"]: r["mean"]
        for r in _json(tmp_path, "analyze", "best", "iso", "--by", "lr", "--metric", "iso_sym")
    }
    assert sym == {1e-3: pytest.approx(0.65), 2e-3: pytest.approx(0.64)}
    res = CliRunner().invoke(
        main,
        ["analyze", "best", "iso", "--by", "lr", "--metric", "iso", "--results", str(tmp_path)],
    )
    assert res.exit_code == 0 and "1 run(s) left out (no iso)" in res.output
