"""The critical batch size in the cited form (S(B) = a + b/B over every batch size), on curves
imported with ``harness import --curves`` (issue 30, items 2 and 3)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize

from harness.analysis.stats.batch_fit import fit_critical_batch
from tests.cli_calls import run as _run

#: Zhang et al. 2024 ("How does critical batch size scale in pre-training?"), their published
#: notebook plots/chinchilla.ipynb (github.com/hlzhang109/critical-batch-size): the fewest steps
#: to each model's goal loss (C4 eval loss) at batch sizes 64..16384, and the goal losses.
ZHANG_BATCH = [2**i for i in range(6, 15)]
ZHANG_STEPS = {
    "85M": [46000, 23000, 13282, 7000, 3840, 2500, 1800, 1600, 1600],
    "151M": [96000, 49000, 24000, 11951, 7128, 4200, 2760, 2400, 2300],
    "302M": [196000, 90000, 46000, 23400, 13300, 7224, 4980, 3400, 2879],
    "604M": [311000, 166000, 81000, 37440, 21320, 11400, 7199, 4700, 3800],
    "1.2B": [643000, 331000, 176000, 94000, 46500, 25000, 15360, 8900, 6500],
}
ZHANG_GOAL = {"85M": 3.42, "151M": 3.24, "302M": 3.07, "604M": 2.92, "1.2B": 2.736}
#: Their rule's values for the smallest and largest model as issue 30 quotes them (reference
#: batch 256).
ZHANG_QUOTED = {"85M": 745.0, "1.2B": 2533.0}


def _import(root: Path, grid: str, runs: list[dict], points: list[dict]) -> None:
    """Results and curves CSVs written from dicts and imported with --curves."""
    for name, rows in (("runs", runs), ("curves", points)):
        cols = list(rows[0])
        lines = [",".join(cols)] + [",".join(str(r[c]) for c in cols) for r in rows]
        (root / f"{grid}_{name}.csv").write_text("\n".join(lines) + "\n")
    res = _run(
        root,
        "import",
        str(root / f"{grid}_runs.csv"),
        "--grid",
        grid,
        "--curves",
        str(root / f"{grid}_curves.csv"),
    )
    assert res.exit_code == 0, res.output
    assert f"imported the loss curves of {len(runs)} run(s)" in res.stdout


def _critical(root: Path, grid: str, *args: str) -> list[dict]:
    res = _run(root, "analyze", "critical-batch", grid, "--format", "json", *args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def zhang(tmp_path_factory) -> Path:
    """The published step counts as curves: each run is above its model's goal loss at step 1
    and reaches it at the published step."""
    root = tmp_path_factory.mktemp("zhang")
    runs, points = [], []
    for model, steps in ZHANG_STEPS.items():
        goal = ZHANG_GOAL[model]
        for b, s in zip(ZHANG_BATCH, steps, strict=True):
            runs.append({"model": model, "batch_size": b, "optimizer": "adamw", "val_loss": goal})
            for step, loss in ((1, goal + 1.0), (s, goal)):
                points.append({"model": model, "batch_size": b, "step": step, "train_loss": loss})
    _import(root, "zhang", runs, points)
    return root


def _their_rule(model: str) -> float:
    """Independent: S(B) = a + b/B fitted to log steps (scipy), then 20 % over linear scaling
    from B = 256: (a B + b) = 1.2 (256 a + b)."""
    b_ = np.array(ZHANG_BATCH, float)
    s = np.array(ZHANG_STEPS[model], float)
    (a, b), _ = optimize.curve_fit(
        lambda x, a, b: np.log(a + b / x), b_, np.log(s), p0=(s[-1], s[0] * b_[0])
    )
    return 1.2 * 256 + 0.2 * b / a


def test_zhang_published_step_counts_give_critical_batches_monotone_in_model_size(zhang):
    """The former grid-anchored interpolation gave 422, 1057, 2114, 2176, 1420."""
    got = {}
    for model, goal in ZHANG_GOAL.items():
        rows = _critical(
            zhang,
            "zhang",
            "--where",
            f"model = '{model}'",
            "--target",
            str(goal),
            "--reference-batch",
            "256",
        )
        assert [r["steps"] for r in rows] == pytest.approx(ZHANG_STEPS[model])
        assert {r["reference_batch"] for r in rows} == {256}
        got[model] = rows[0]["critical_batch"]
        assert got[model] == pytest.approx(_their_rule(model), rel=0.03)
        assert "n = 1: no interval" in rows[0]["note"]
    values = list(got.values())
    assert values == sorted(values) and len(set(values)) == len(values)
    for model, quoted in ZHANG_QUOTED.items():
        assert got[model] == pytest.approx(quoted, rel=0.05)


def _synthetic(root: Path, grid: str, batches, b_noise: float, first_loss=None) -> None:
    """S(B) = 50 (1 + b_noise / B) with seed jitter -2, 0, +2 %; each curve is a straight line
    from 6.0 at step 1 through the target 5.0 at S (logged at step 1 and at the integer step
    2 S rounded up), or starts at ``first_loss[B]`` when given."""
    runs, points = [], []
    for b in batches:
        for seed, j in enumerate((-0.02, 0.0, 0.02)):
            s = 50 * (1 + b_noise / b) * (1 + j)
            runs.append({"batch_size": b, "seed": seed, "optimizer": "adamw", "val_loss": 4.9})
            end = int(np.ceil(2 * s))
            start = (first_loss or {}).get(b, 6.0)
            for step, loss in ((1, start), (end, 6.0 - (end - 1) / (s - 1))):
                points.append({"batch_size": b, "seed": seed, "step": step, "train_loss": loss})
    _import(root, grid, runs, points)


def test_the_critical_batch_does_not_move_with_the_grid(tmp_path):
    """The former method moved (23 -> 57 on one curve) as the smallest batch went 4 -> 32."""
    _synthetic(tmp_path, "from4", [4, 8, 16, 32, 64, 128], 100.0)
    _synthetic(tmp_path, "from32", [32, 64, 128], 100.0)
    small = _critical(tmp_path, "from4", "--target", "5.0")[0]
    large = _critical(tmp_path, "from32", "--target", "5.0")[0]
    assert small["critical_batch"] == pytest.approx(20.0, rel=1e-6)  # 0.2 B_noise
    assert large["critical_batch"] == pytest.approx(20.0, rel=1e-6)
    assert small["ci_low"] <= 20.0 <= small["ci_high"]
    assert small["fit_check"] == "ok"
    assert "beyond the measured batch sizes 32..128" in large["fit_check"]


def test_a_critical_batch_between_two_distant_batches_is_flagged(tmp_path):
    _synthetic(tmp_path, "x4", [4, 16, 64, 256], 160.0)  # B* = 32: between 16 and 64
    row = _critical(tmp_path, "x4", "--target", "5.0")[0]
    assert row["critical_batch"] == pytest.approx(32.0, rel=1e-6)
    assert "data support only 16 < B* < 64" in row["fit_check"]


def test_left_censored_steps_are_flagged(tmp_path):
    """A run already at the target at its first logged point was reported as reaching it there,
    with no word."""
    _synthetic(tmp_path, "cens", [8, 16, 32, 64], 100.0, first_loss={64: 4.95})
    rows = {r["batch_size"]: r for r in _critical(tmp_path, "cens", "--target", "5.0")}
    assert rows[64]["steps"] == pytest.approx(1.0)
    assert "left-censored: 3 of 3 run(s)" in rows[64]["steps_check"]
    assert rows[8]["steps_check"] == "ok"


def test_fit_critical_batch_without_plateau_or_seeds():
    b = np.array([8.0, 16.0, 32.0])
    ideal = [np.array([400.0, 404.0, 396.0]) * 8 / x for x in b]  # perfect linear scaling
    out = fit_critical_batch(b, ideal)
    assert not (np.isfinite(out.critical) and np.isfinite(out.ci_high))  # nothing resolved
    one = fit_critical_batch(b, [np.array([400.0]), np.array([300.0]), np.array([250.0])])
    assert one.critical > 0 and "n = 1: no interval" in one.note and np.isnan(one.ci_low)
    same = fit_critical_batch(b, [np.full(3, v) for v in (400.0, 300.0, 250.0)])
    assert "identical seeds" in same.note and np.isnan(same.ci_low)


def test_curves_whose_key_names_no_run_or_several_are_refused_and_nothing_written(tmp_path):
    (tmp_path / "runs.csv").write_text("batch_size,seed,val_loss\n8,0,5.0\n8,1,5.1\n")
    cases = {
        "batch_size,seed,step,train_loss\n16,0,1,6.0\n": "no imported run has batch_size=16",
        "batch_size,step,train_loss\n8,1,6.0\n": "2 imported runs have batch_size=8",
        "batch_size,seed,train_loss\n8,0,6.0\n": "no 'step' column",
        "batch_size,seed,step,loss\n8,0,1,6.0\n": "column 'loss' is neither a curve column",
    }
    for text, message in cases.items():
        (tmp_path / "curves.csv").write_text(text)
        res = _run(
            tmp_path,
            "import",
            str(tmp_path / "runs.csv"),
            "--grid",
            "bad",
            "--curves",
            str(tmp_path / "curves.csv"),
        )
        assert res.exit_code == 2 and message in res.output, res.output
        assert not (tmp_path / "bad").exists()
