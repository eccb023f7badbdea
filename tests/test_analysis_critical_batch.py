"""``analyze critical-batch`` and the ``steps_to_target`` figure on curves with known steps."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from harness.analysis.stats.critical_batch import OVERHEAD, critical_batch
from harness.analysis.testing import make_run, write_run
from harness.cli import main

U = math.log(256)  # the synthetic curves start at log(vocab) and fall linearly in steps
TARGET = 5.0
BATCHES = (8, 16, 32, 64)
B_NOISE = {"adamw": 100.0, "sgd": 20.0}  # S(B) = 50 (1 + B_noise / B) (McCandlish et al.)
JITTER = (-0.02, 0.0, 0.02)


def _steps(opt: str, b: int, s: int) -> float:
    return 50 * (1 + B_NOISE[opt] / b) * (1 + JITTER[s])


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    for opt in B_NOISE:
        for b in BATCHES:
            for s in range(3):
                run = make_run(grid="cb", optimizer=opt, batch_size=b, seed=s, tokens=2**20)
                total = run.data.steps
                final = U - total * (U - TARGET) / _steps(opt, b, s)  # reaches TARGET at S
                write_run(root, run, val_ppl=math.exp(final), points=16)
    return root


def _expected_critical(opt: str) -> float:
    """Independent: g(B) = B S(B) - 1.2 B_0 S(B_0) on mean steps, zero by linear interpolation
    in log2 B between the bracketing batch sizes."""
    m = {b: np.mean([_steps(opt, b, s) for s in range(3)]) for b in BATCHES}
    g = [b * m[b] - (1 + OVERHEAD) * 8 * m[8] for b in BATCHES]
    i = next(j for j in range(3) if g[j] <= 0 < g[j + 1])
    t = g[i] / (g[i] - g[i + 1])
    return 2 ** (math.log2(BATCHES[i]) + t)


def test_critical_batch_from_curves(root):
    res = CliRunner().invoke(
        main,
        ["analyze", "critical-batch", "cb", "--target", str(TARGET), "--format", "json",
         "--results", str(root)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    # a given target is not called the default (notes go to stderr with --format json)
    assert f"target: train_loss <= {TARGET:.4g} (--target)" in res.stderr
    assert "default" not in res.stderr
    rows = json.loads(res.stdout)
    got = {(r["optimizer"], r["batch_size"]): r for r in rows}
    for opt in B_NOISE:
        for b in BATCHES:
            mean = np.mean([_steps(opt, b, s) for s in range(3)])
            assert got[(opt, b)]["steps"] == pytest.approx(mean, rel=1e-6)
            assert got[(opt, b)]["tokens"] == pytest.approx(mean * b * 64, rel=1e-6)
        row = got[(opt, 8)]
        assert row["critical_batch"] == pytest.approx(_expected_critical(opt), rel=1e-6)
        assert row["ci_low"] <= row["critical_batch"] <= row["ci_high"]
    # adamw (large noise scale) keeps scaling longer than sgd
    assert got[("adamw", 8)]["critical_batch"] > got[("sgd", 8)]["critical_batch"]


def test_critical_batch_interval_and_no_crossing():
    b = np.array([8.0, 16.0, 32.0])
    ideal = [np.array([400.0, 404.0, 396.0]) * 8 / x for x in b]  # perfect linear scaling
    out = critical_batch(b, ideal)
    assert np.isnan(out["critical_batch"]) and "linear scaling holds" in out["note"]
    assert np.isnan(out["ci_low"])  # 20 % overhead excluded everywhere: no interval
    one = critical_batch(b, [np.array([400.0]), np.array([300.0]), np.array([250.0])])
    assert one["critical_batch"] > 8 and "n = 1: no interval" in one["note"]


def test_steps_to_target_figure(root, tmp_path):
    res = CliRunner().invoke(
        main, ["figures", "cb", "--figure", "steps_to_target", "--results", str(root)]
    )
    assert res.exit_code == 0, res.output
    assert (root / "cb" / "figures" / "steps_to_target.png").stat().st_size > 0
