"""``harness analyze`` end to end: Parquet rows written like real runs, DuckDB, the CLI runner."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from harness.analysis.stats.significance import paper_test
from harness.analysis.testing import make_run, write_run
from harness.cli import main
from tests.cli_calls import rows_of as _json
from tests.cli_calls import run as _run

OFFSETS = (-0.1, 0.0, 0.1)  # seed s adds OFFSETS[s]: mean exact, std 0.1
BEST_LR = {"adamw": 2e-3, "sgd": 0.3, "signum": 3e-4}
LEVEL = {
    "adamw": (22.0, 0.5),
    "sgd": (21.0, 3.0),
    "signum": (23.0, 0.7),
}  # ppl at bs 8, per doubling^2


def _ppl(opt: str, bs: int, k: int) -> float:
    base, slope = LEVEL[opt]
    return base + slope * math.log2(bs / 8) / 2 + k * k


def _opt_fields(opt: str) -> dict:
    return {
        "adamw": {"beta1": 0.9, "beta2": 0.95, "eps": 1e-8},
        "sgd": {"momentum": 0.9, "nesterov": False},
        "signum": {"beta1": 0.9},
    }[opt]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """Grids ``opt`` (3 optimizers x 3 batch sizes x 3 lrs x 3 seeds), ``coupled``, ``budget``,
    ``scales`` (full and local rows) and ``single`` (one seed)."""
    root = tmp_path_factory.mktemp("results")
    for opt in LEVEL:
        ks = (0, 1, 2) if opt == "signum" else (-1, 0, 1)  # signum's best lr is the smallest tried
        for bs in (8, 32, 128):
            for k in ks:
                for s, off in enumerate(OFFSETS):
                    run = make_run(
                        grid="opt",
                        optimizer=opt,
                        lr=BEST_LR[opt] * 3.0**k,
                        batch_size=bs,
                        micro_batch_size=8,
                        seed=s,
                        **_opt_fields(opt),
                    )
                    if opt == "sgd" and k == 1 and bs >= 32:
                        write_run(root, run, status="diverged")
                    else:
                        write_run(root, run, val_ppl=_ppl(opt, bs, k) + off)
    write_run(root, make_run(grid="opt", optimizer="adamw", lr=0.5, seed=9), status="failed")
    for opt, losses in (("adamw", (3.14, 3.15, 3.13)), ("coupled_adam", (3.10, 3.11, 3.09))):
        for s, loss in enumerate(losses):
            run = make_run(grid="coupled", optimizer=opt, seed=s, beta1=0.9, beta2=0.95, eps=1e-8)
            write_run(
                root,
                run,
                val_ppl=math.exp(loss),
                metrics={"iso": (0.3 if opt == "adamw" else 0.9) + s / 100},
            )
    for opt, e in (("signum", 3.2), ("adamw", 3.0)):
        for mult in (1, 2, 4, 8):
            for s in range(2):
                run = make_run(grid="budget", optimizer=opt, tokens=2**20 * mult, seed=s)
                write_run(root, run, val_ppl=e + 30 * mult**-0.3 + (0.01 if s else -0.01))
    for scale, model in (("full", "tiny"), ("local", "micro")):
        for s in range(2):
            run = make_run(grid="scales", scale=scale, model=model, seed=s)
            write_run(root, run, val_ppl=20.0 + s + (5 if scale == "local" else 0))
    for opt in ("adamw", "sgd"):
        write_run(root, make_run(grid="single", optimizer=opt, lr=0.1), val_ppl=30.0)
    for opt, n, ppl in (
        ("adamw", None, 23.0),
        ("coupled_adam", 0.0, 22.0),
        ("coupled_adam", 1.0, 22.5),
    ):
        for s in range(2):
            run = make_run(grid="scaled", optimizer=opt, coupled_scale_exp=n, seed=s)
            write_run(root, run, val_ppl=ppl + 0.1 * s - 0.05)
    return root


def test_best_picks_tuned_lr_reports_seeds_diverged_and_edges(root):
    out = {
        (r["optimizer"], r["batch_size"]): r
        for r in _json(root, "analyze", "best", "opt", "--by", "optimizer,batch_size")
    }
    assert len(out) == 9
    sgd = out[("sgd", 32)]
    assert sgd["lr"] == pytest.approx(0.3) and sgd["mean"] == pytest.approx(_ppl("sgd", 32, 0))
    assert (
        sgd["std"] == pytest.approx(0.1)
        and sgd["n"] == 3
        and sgd["two_sigma"] == pytest.approx(0.2)
    )
    assert sgd["diverged"] == 3 and sgd["configs"] == 3 and sgd["edge"] == ""
    assert out[("signum", 8)]["edge"] == "lr=0.0003 is the smallest tried: add 0.0001"
    res = _run(root, "analyze", "best", "opt", "--by", "optimizer,batch_size")
    assert "note: 6 diverged run(s) counted as worst" in res.stdout
    assert "note: 1 run(s) left out (failed)" in res.stdout
    assert "note: tuned over: lr" in res.stdout


def test_best_accepts_grid_yaml_and_where(root, tmp_path):
    yaml_file = tmp_path / "opt.yaml"
    yaml_file.write_text("name: opt\n")
    rows = _json(
        root, "analyze", "best", str(yaml_file), "--by", "optimizer", "--where", "batch_size = 8"
    )
    assert {r["optimizer"]: r["mean"] for r in rows} == pytest.approx(
        {o: _ppl(o, 8, 0) for o in LEVEL}
    )


def test_gap_closure_per_batch_size(root):
    rows = _json(
        root,
        "analyze",
        "gap",
        "opt",
        "--baseline",
        "optimizer=sgd",
        "--reference",
        "optimizer=adamw",
        "--by",
        "batch_size",
        "--n-boot",
        "200",
    )
    got = {(r["batch_size"], r["arm"]): r for r in rows}
    m = {o: _ppl(o, 128, 0) for o in LEVEL}
    expected = 100 * (m["sgd"] - m["signum"]) / (m["sgd"] - m["adamw"])
    sig = got[(128, "signum")]
    assert sig["closure_pct"] == pytest.approx(expected)
    assert sig["ci_low_pct"] <= expected <= sig["ci_high_pct"]
    assert got[(128, "sgd")]["closure_pct"] == 0 and got[(128, "adamw")]["closure_pct"] == 100
    assert sig["lr"] == pytest.approx(3e-4)  # the tuned configuration is shown
    res = _run(
        root,
        "analyze",
        "gap",
        "opt",
        "--baseline",
        "optimizer=sgd",
        "--reference",
        "optimizer=adamw",
        "--by",
        "batch_size",
        "--n-boot",
        "50",
    )
    assert "note: edge: batch_size=8, arm=signum: lr=0.0003 is the smallest tried" in res.stdout


def test_arm_without_a_by_column_joins_every_cell(root):
    """adamw has no coupled_scale_exp: compared against coupled_adam at every exponent."""
    rows = _json(
        root,
        "analyze",
        "compare",
        "scaled",
        "--a",
        "optimizer=adamw",
        "--b",
        "optimizer=coupled_adam",
        "--by",
        "coupled_scale_exp",
    )
    assert [r["coupled_scale_exp"] for r in rows] == [0.0, 1.0]
    assert all(r["mean_a"] == pytest.approx(23.0) and r["n_a"] == 2 for r in rows)
    assert [r["mean_b"] for r in rows] == pytest.approx([22.0, 22.5])


def test_crossover_of_adamw_over_sgd(root):
    (row,) = _json(
        root,
        "analyze",
        "crossover",
        "opt",
        "--x",
        "batch_size",
        "--a",
        "optimizer=sgd",
        "--b",
        "optimizer=adamw",
        "--n-boot",
        "300",
    )
    # d(bs) = m_sgd - m_adamw = -1 + 1.25 log2(bs / 8): zero at log2 bs = 3 + 0.8
    assert row["crossover"] == pytest.approx(2**3.8)
    assert row["b_better"] == "above" and row["sign_changes"] == 1
    assert row["ci_low"] <= 2**3.8 <= row["ci_high"] and row["p_boot"] > 0.9
    res = _run(
        root,
        "analyze",
        "crossover",
        "opt",
        "--x",
        "batch_size",
        "--a",
        "optimizer=adamw",
        "--b",
        "optimizer=signum",
        "--n-boot",
        "100",
    )
    assert res.exit_code == 0 and "nowhere" in res.stdout  # signum never beats adamw: said plainly


def test_compare_paper_test_on_coupled_adam(root):
    (row,) = _json(
        root,
        "analyze",
        "compare",
        "coupled",
        "--a",
        "optimizer=adamw",
        "--b",
        "optimizer=coupled_adam",
        "--test",
        "paper",
        "--metric",
        "val_loss",
    )
    ref = paper_test(np.array([3.14, 3.15, 3.13]), np.array([3.10, 3.11, 3.09]), "less", 0.05)
    assert row["diff"] == pytest.approx(-0.04)
    assert row["threshold"] == pytest.approx(ref.threshold) and row["p"] == pytest.approx(ref.p)
    assert row["significant"] == "yes"
    (iso,) = _json(
        root,
        "analyze",
        "compare",
        "coupled",
        "--a",
        "optimizer=adamw",
        "--b",
        "optimizer=coupled_adam",
        "--metric",
        "iso",
        "--test",
        "mannwhitney",
    )
    assert iso["diff"] == pytest.approx(0.6) and iso["p"] == pytest.approx(0.05)  # greater: auto


def test_speedup_budget_ratio(root):
    (row,) = _json(
        root,
        "analyze",
        "speedup",
        "budget",
        "--a",
        "optimizer=signum",
        "--b",
        "optimizer=adamw",
        "--n-boot",
        "100",
    )
    truth = ((3.2 + 30 * 8**-0.3 - 3.0) / 30) ** (-1 / 0.3) / 8
    assert row["ratio"] == pytest.approx(truth, rel=1e-3)
    assert row["alpha"] == pytest.approx(0.3, rel=1e-3) and row["E"] == pytest.approx(3.0, rel=1e-3)


def test_scale_policy(root):
    res = _run(root, "analyze", "best", "scales")
    assert res.exit_code == 2 and "pick one with --scale" in res.stderr
    (local,) = _json(root, "analyze", "best", "scales", "--scale", "local")
    assert local["mean"] == pytest.approx(25.5)
    (full,) = _json(root, "analyze", "best", "scales", "--scale", "full")
    assert full["mean"] == pytest.approx(20.5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["best", "opt", "--by", "optimizer,colour"], "--by: unknown column 'colour'"),
        (["best", "opt", "--over", "lrr"], "--over: unknown column 'lrr'"),
        (["best", "opt", "--where", "colour = 1"], "--where 'colour = 1'"),
        (["best", "opt", "--where", "lr > 10"], "matches no runs"),
        (["best", "nosuchgrid"], "no results for grid 'nosuchgrid'"),
        (["best", "opt", "--metric", "nope"], "metric 'nope' has no known direction"),
        (["best", "opt", "--metric", "optimizer", "--goal", "min"], "is not numeric"),
        (
            ["gap", "opt", "--baseline", "optimizer=sgdd", "--reference", "optimizer=adamw"],
            "'optimizer=sgdd' matches no rows; values present: optimizer: adamw, sgd, signum",
        ),
        (
            ["gap", "opt", "--baseline", "optimizer", "--reference", "optimizer=adamw"],
            "expected K=V",
        ),
        (
            ["compare", "single", "--a", "optimizer=sgd", "--b", "optimizer=adamw"],
            "needs at least 2 seeds per arm; sgd has 1",
        ),
        (
            [
                "crossover",
                "opt",
                "--x",
                "optimizer",
                "--a",
                "optimizer=sgd",
                "--b",
                "optimizer=adamw",
            ],
            "needs a positive number",
        ),
        (
            [
                "speedup",
                "opt",
                "--a",
                "optimizer=sgd",
                "--b",
                "optimizer=adamw",
                "--by",
                "batch_size",
            ],
            "at least 3 values of tokens",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(root, args, message):
    res = _run(root, "analyze", *args)
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and message in lines[0], res.stderr
    # one line, and for a SQL error DuckDB's hint on an indented second one
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("  ")), res.stderr


def test_formats_and_help(root):
    res = _run(root, "analyze", "best", "opt", "--by", "optimizer,batch_size", "--format", "csv")
    assert res.exit_code == 0
    header = res.stdout.splitlines()[0].split(",")
    assert header[:3] == ["optimizer", "batch_size", "lr"] and "two_sigma" in header
    assert "note: tuned over: lr" in res.stderr  # notes stay off stdout for csv/json
    for cmd in ("best", "gap", "crossover", "compare", "speedup"):
        res = CliRunner().invoke(main, ["analyze", cmd, "--help"])
        assert res.exit_code == 0 and "Example: harness analyze" in res.output
        assert "--where" in res.output and "--metric" in res.output and "--format" in res.output


def test_optimum_fits_the_quadratic_in_log_lr(root):
    """ppl = base + k^2 at lr = best * 3^k: the fit's optimum is the best lr exactly."""
    rows = {
        (r["optimizer"], r["batch_size"]): r
        for r in _json(root, "analyze", "optimum", "opt", "--axis", "lr", "--by", "batch_size")
    }
    adam = rows[("adamw", 8)]
    assert adam["optimum"] == pytest.approx(BEST_LR["adamw"]) and adam["points"] == 3
    assert adam["metric"] == pytest.approx(_ppl("adamw", 8, 0))
    assert adam["ci_low"] < BEST_LR["adamw"] < adam["ci_high"]
    assert adam["metric_ci_low"] < adam["metric"] < adam["metric_ci_high"]
    assert adam["note"] == ""
    # sgd diverged at its largest lr for bs >= 32: two finite points, no fit, said so
    assert "fewer than 3 finite values of lr" in rows[("sgd", 32)]["note"]
    # signum's best is its smallest lr: the fit puts the optimum on the range's end, and the
    # interval reaches beyond what was searched
    assert "beyond the searched lr" in rows[("signum", 8)]["note"]


def test_power_from_the_seed_variance(root):
    from harness.analysis.stats.power import power

    (row,) = _json(
        root,
        "analyze",
        "power",
        "coupled",
        "--a",
        "optimizer=adamw",
        "--b",
        "optimizer=coupled_adam",
        "--metric",
        "val_loss",
        "--test",
        "paper",
    )
    assert row["diff"] == pytest.approx(-0.04) and row["std_a"] == pytest.approx(0.01)
    expected = float(power(0.04, 1e-4, 3, 1e-4, 3, alpha=0.05, two_sided=False, test="paper"))
    assert row["power"] == pytest.approx(expected) and row["seeds_needed"] >= 2
    assert row["detectable"] < 0.04  # significant at 3 seeds (compare says so): detectable


def test_notes_that_stop_a_misreading(root, tmp_path):
    """One seed, a reference beaten by another arm, and a declared derived axis are noted."""
    res = _run(root, "analyze", "best", "single", "--by", "optimizer")
    assert "one seed in 2 cell(s)" in res.stdout
    gap = _run(
        root,
        "analyze",
        "gap",
        "opt",
        "--baseline",
        "optimizer=sgd",
        "--reference",
        "optimizer=adamw",
        "--by",
        "batch_size",
    )
    assert "note: sgd beats the reference adamw at batch_size=8" in gap.stdout
    assert "welch two-sided t test, holm correction" in gap.stdout
    yaml_file = tmp_path / "opt.yaml"
    yaml_file.write_text("name: opt\nderived_axes: {lr: batch_size}\n")
    res = _run(root, "analyze", "best", str(yaml_file), "--by", "optimizer,batch_size")
    assert "the searched lr values were derived from batch_size" in res.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: opt\nderived_axes: [lr]\n")
    res = _run(root, "analyze", "best", str(bad), "--by", "optimizer")
    assert res.exit_code == 2 and "derived_axes: expected a mapping" in res.stderr


def test_long_ema_horizon_is_noted(tmp_path):
    for s in range(2):  # 1024 steps; beta2 = 0.999 averages over ~1000 of them
        run = make_run(grid="ema", optimizer="adamw", beta1=0.9, beta2=0.999, seed=s)
        write_run(tmp_path, run, val_ppl=20.0 + s)
    res = _run(tmp_path, "analyze", "best", "ema")
    assert "beta2=0.999 averages over ~1000 steps, more than a third" in res.stdout
    assert "beta1=" not in res.stdout


def test_tuned_fit_uses_each_arms_fitted_optimum(tmp_path):
    """a's true optimum lies between grid points (k = 0.5): on the grid a looks worse than b,
    at the fitted optimum it is better, and compare says so with --tuned fit."""
    for opt, centre, base in (("adamw", 0.5, 20.0), ("signum", 0.0, 20.1)):
        for k in range(-2, 3):
            for s, off in enumerate(OFFSETS):
                run = make_run(grid="fit", optimizer=opt, lr=1e-3 * 3.0**k, seed=s)
                write_run(tmp_path, run, val_ppl=base + (k - centre) ** 2 + off)
    args = ("analyze", "compare", "fit", "--a", "optimizer=adamw", "--b", "optimizer=signum")
    (grid,) = _json(tmp_path, *args)
    (fit,) = _json(tmp_path, *args, "--tuned", "fit")
    assert grid["mean_a"] == pytest.approx(20.25) and grid["diff"] == pytest.approx(-0.15)
    assert fit["mean_a"] == pytest.approx(20.0) and fit["diff"] == pytest.approx(0.1)
    assert fit["std_a"] == pytest.approx(0.1) and fit["n_a"] == 3  # one value per seed
    res = _run(tmp_path, *args, "--tuned", "fit", "--fit-axis", "beta1")
    assert res.exit_code == 2 and "--fit-axis" in res.stderr
    gap = _json(
        tmp_path,
        "analyze",
        "gap",
        "fit",
        "--baseline",
        "optimizer=signum",
        "--reference",
        "optimizer=adamw",
        "--tuned",
        "fit",
    )
    assert {r["arm"]: r["mean"] for r in gap} == pytest.approx({"signum": 20.1, "adamw": 20.0})


def test_every_registered_question_is_a_command():
    from harness.analysis.questions.registry import QUESTIONS

    res = CliRunner().invoke(main, ["analyze", "--help"])
    for name, question in QUESTIONS.items():
        assert callable(question.answerer()) and name in res.output
        sub = CliRunner().invoke(main, ["analyze", name, "--help"])
        shown = [o.flag for o in question.options if not o.hidden]
        assert sub.exit_code == 0 and all(flag in sub.output for flag in shown)
