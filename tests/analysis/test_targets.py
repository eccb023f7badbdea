"""Tokens- and time-to-target from curves, AlgoPerf performance profiles, and the commands."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from harness.analysis.rows.arm_labels import METHOD
from harness.analysis.stats import performance_profiles
from harness.analysis.stats.to_target import reach
from harness.analysis.testing import make_run, write_run
from harness.cli import main
from harness.core.errors import UserError
from harness.core.targets import Target, parse_target

INF = math.inf


def curve(tokens, values, column="train_loss", seconds=None):
    seconds = seconds or [float(i + 1) for i in range(len(tokens))]
    return pd.DataFrame({"tokens": tokens, column: values, "elapsed_s": seconds})


# The convention: the first point at or below the target; linear in tokens (and in seconds)
# between it and the point before; the first point itself when it is already there.
@pytest.mark.parametrize(
    ("value", "want"),
    [
        (3.5, (250.0, 2.5)),  # halfway between (200, 4.0) and (300, 3.0)
        (3.8, (220.0, 2.2)),
        (3.0, (300.0, 3.0)),  # exactly on a point
        (5.0, (100.0, 1.0)),  # the first point already reaches it: no extrapolation
        (9.0, (100.0, 1.0)),
        (2.49, (INF, INF)),  # never: censored
    ],
)
def test_tokens_and_time_to_target_on_a_synthetic_curve(value, want):
    c = curve([100, 200, 300, 400], [5.0, 4.0, 3.0, 2.5])
    assert reach(c, Target("train_loss", value)) == pytest.approx(want)


def test_the_first_crossing_counts_and_points_without_the_column_are_skipped():
    c = curve([100, 200, 300, 400, 500], [np.nan, 4.0, np.nan, 3.0, 4.5], column="val_loss")
    assert reach(c, Target("val_loss", 3.5)) == pytest.approx((300.0, 3.0))  # 200..400, 2..4 s
    spiked = curve([100, 200, 300], [5.0, INF, 3.0])  # a non-finite point before: no line
    assert reach(spiked, Target("train_loss", 4.0)) == (300.0, 3.0)
    assert reach(curve([], []), Target("train_loss", 4.0)) == (INF, INF)


def test_targets_parse_from_grids_and_the_command_line():
    assert parse_target(3.9, "t") == Target("train_loss", 3.9)
    assert parse_target({"val_loss": "3.5"}, "t") == Target("val_loss", 3.5)
    for bad, msg in [
        ({"loss": 3}, "unknown target column 'loss'"),
        ("x", "expected a number"),
        ({"val_loss": 1, "train_loss": 2}, "one"),
        (math.nan, "finite"),
    ]:
        with pytest.raises(UserError, match=msg):
            parse_target(bad, "t")


# --- profiles on a hand example ------------------------------------------------------------------
# Two cells (bs 8, 64), three arms. Per run: tokens-to-target (inf: censored).
#   x, bs 8:  lr 1 seeds (100, 100) -> median 100; lr 2 seeds (80, inf, inf) -> inf. t = 100
#   y, bs 8:  200, 200 -> 200;  z, bs 8: censored -> inf
#   x, bs 64: 300;  y, bs 64: 150;  z, bs 64: 450
# Ratios: bs 8: x 1, y 2, z inf; bs 64: x 2, y 1, z 3.
RUNS = [
    ("x", 8, 1, 100),
    ("x", 8, 1, 100),
    ("x", 8, 2, 80),
    ("x", 8, 2, INF),
    ("x", 8, 2, INF),
    ("y", 8, 1, 200),
    ("y", 8, 1, 200),
    ("z", 8, 1, INF),
    ("x", 64, 1, 300),
    ("y", 64, 1, 150),
    ("z", 64, 1, 450),
]
RATIOS = {
    ("x", 8): 1.0,
    ("y", 8): 2.0,
    ("z", 8): INF,
    ("x", 64): 2.0,
    ("y", 64): 1.0,
    ("z", 64): 3.0,
}


def hand_table() -> pd.DataFrame:
    runs = pd.DataFrame(RUNS, columns=[METHOD, "batch_size", "lr", "t"])
    return performance_profiles.ratios(
        performance_profiles.arm_times(runs, ["batch_size"], ["lr"], "t"), ["batch_size"]
    )


def test_ratios_take_each_arms_fastest_configuration_by_its_median_over_seeds():
    table = hand_table()
    got = {(r[METHOD], r["batch_size"]): r[performance_profiles.RATIO] for _, r in table.iterrows()}
    assert got == RATIOS


def test_profile_and_score_match_an_independent_computation():
    table = hand_table()
    taus = [1.0, 1.5, 2.0, 2.9, 3.0, 4.0]
    got = performance_profiles.rho(table, taus).set_index([METHOD, "tau"])["rho"]
    for (arm, tau), value in got.items():  # rho(tau): fraction of the 2 cells with ratio <= tau
        want = sum(RATIOS[(arm, bs)] <= tau for bs in (8, 64)) / 2
        assert value == want, (arm, tau)
    assert got[("x", 1.0)] == 0.5 and got[("z", 2.9)] == 0.0 and got[("z", 3.0)] == 0.5
    # area on [1, 4] / 3, by hand: x, y: ((4 - 1) + (4 - 2)) / 2 / 3 = 5/6; z: (4 - 3) / 2 / 3
    scores = performance_profiles.score(table, 4.0)
    assert scores.to_dict() == pytest.approx({"x": 5 / 6, "y": 5 / 6, "z": 1 / 6})
    grid = np.linspace(1.0, 4.0, 300_001)  # and by a Riemann sum of rho over a fine grid
    for arm in "xyz":
        r = np.array([RATIOS[(arm, bs)] for bs in (8, 64)])
        rho = (r[None, :] <= grid[:, None]).mean(axis=1)
        assert scores[arm] == pytest.approx(rho.mean(), abs=1e-4)


def test_an_arm_missing_from_a_cell_and_a_cell_nobody_reaches_are_infinite():
    runs = pd.DataFrame(
        [
            ("x", 8, 1, 100.0),
            ("y", 64, 1, 50.0),
            ("x", 64, 1, 100.0),
            ("x", 16, 1, INF),
            ("y", 16, 1, INF),
        ],
        columns=[METHOD, "batch_size", "lr", "t"],
    )
    table = performance_profiles.ratios(
        performance_profiles.arm_times(runs, ["batch_size"], [], "t"), ["batch_size"]
    )
    got = {(r[METHOD], r["batch_size"]): r[performance_profiles.RATIO] for _, r in table.iterrows()}
    assert got == {
        ("x", 8): 1.0,
        ("y", 8): INF,
        ("x", 64): 2.0,
        ("y", 64): 1.0,
        ("x", 16): INF,
        ("y", 16): INF,
    }


# --- end to end ----------------------------------------------------------------------------------
def _points(tokens_per_loss: dict[float, int]) -> list[dict]:
    ordered = enumerate(sorted(tokens_per_loss.items(), reverse=True))
    return [
        {"step": i + 1, "tokens": t, "train_loss": loss, "elapsed_s": t / 100.0}
        for i, (loss, t) in ordered
    ]


@pytest.fixture
def timed(tmp_path: Path) -> tuple[Path, Path]:
    """Grid ``timed``: adamw reaches 4.0 at 1000 tokens, sgd at 3000, signsgd never (bs 16);
    at bs 64 sgd is faster (1000) than adamw (2000). Two seeds each."""
    root = tmp_path / "results"
    when = {
        ("adamw", 16): 1000,
        ("sgd", 16): 3000,
        ("adamw", 64): 2000,
        ("sgd", 64): 1000,
        ("signsgd", 16): None,
        ("signsgd", 64): None,
    }
    for (opt, bs), t in when.items():
        for seed in (0, 1):
            run = make_run(grid="timed", optimizer=opt, batch_size=bs, seed=seed)
            pts = {5.0: 500, 4.5: 4000} if t is None else {5.0: t // 2, 4.0: t, 3.5: 5000}
            write_run(root, run, val_ppl=30.0, curve=_points(pts))
    grid = tmp_path / "timed.yaml"
    grid.write_text("name: timed\ntarget: 4.0\nfigures: [performance_profile]\n")
    return root, grid


def invoke(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_analyze_targets_and_profiles_end_to_end(timed):
    root, grid = timed
    r = invoke("analyze", "targets", grid, "--results", root, "--format", "json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert len(rows) == 12 and sum(row["censored"] for row in rows) == 4
    got = {(row["method"], row["batch_size"]): row["tokens_to_target"] for row in rows}
    assert got[("adamw", 16)] == 1000 and got[("sgd", 64)] == 1000
    assert got[("signsgd", 16)] == "inf"  # JSON has no infinity: the output writes it so
    assert "censored (inf), not dropped" in r.stderr
    r = invoke("analyze", "profiles", grid, "--results", root, "--format", "json")
    assert r.exit_code == 0, r.output
    arms = {row["method"]: row for row in json.loads(r.stdout)}
    # bs 16: adamw 1, sgd 3; bs 64: adamw 2, sgd 1; signsgd inf in both
    assert arms["adamw"]["score"] == pytest.approx(((4 - 1) + (4 - 2)) / 2 / 3)
    assert arms["sgd"]["score"] == pytest.approx(((4 - 3) + (4 - 1)) / 2 / 3)
    assert arms["signsgd"]["score"] == 0 and arms["signsgd"]["reached"] == 0
    assert arms["adamw"]["rho(1)"] == 0.5 and arms["sgd"]["rho(2)"] == 0.5
    # --target overrides the grid's: at 3.5 every reaching run needs 5000 tokens
    r = invoke(
        "analyze",
        "profiles",
        grid,
        "--results",
        root,
        "--format",
        "json",
        "--target",
        "3.5",
        "--measure",
        "time",
    )
    arms = {row["method"]: row for row in json.loads(r.stdout)}
    assert arms["adamw"]["score"] == arms["sgd"]["score"] == 1.0


def test_no_target_is_one_clear_line(timed):
    root, _ = timed
    r = invoke("analyze", "profiles", "timed", "--results", root)
    assert r.exit_code == 2 and "no target: give --target" in r.output


def test_performance_profile_figure_is_drawn_from_the_grids_target(timed):
    root, grid = timed
    r = invoke("figures", grid, "--results", root)
    assert r.exit_code == 0, r.output
    out = root / "timed" / "figures"
    assert (out / "performance_profile.png").stat().st_size > 0
    side = json.loads((out / "performance_profile.json").read_text())
    assert "target: train_loss <= 4" in side["notes"]
    r = invoke("figures", "timed", "--results", root, "--figure", "performance_profile")
    assert "no target" in r.output  # skipped with the reason, not drawn


def test_a_grid_declares_its_target_per_scale(tmp_path):
    from harness.data.catalogue import vocab_lookup
    from harness.grid.load import load_grid

    p = tmp_path / "g.yaml"
    base = (
        "name: g\nbase: {model: tiny, optimizer: adamw, seq_len: 32, batch_size: 8, "
        "tokens: 2560, lr: 0.001}\n"
    )
    p.write_text(base + "target: {val_loss: 3.9}\nlocal: {target: 5.5}\n")
    assert load_grid(p, vocab=vocab_lookup(tmp_path)).target == Target("val_loss", 3.9)
    local = load_grid(p, vocab=vocab_lookup(tmp_path), local=True)
    assert local.target == Target("train_loss", 5.5)
    p.write_text(base + "target: {loss: 3.9}\n")
    with pytest.raises(UserError, match=r"g.yaml: target: unknown target column 'loss'"):
        load_grid(p, vocab=vocab_lookup(tmp_path))
