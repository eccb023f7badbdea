"""``analyze critical-batch`` and the ``steps_to_target`` figure on curves with known steps."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from harness.analysis.stats.batch_fit import OVERHEAD
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
    """Independent: the mean steps are exactly 50 (1 + B_noise / B), so the fit of
    S(B) = a + b/B is exact (a = 50, b = 50 B_noise) and B* = 0.2 b / a from the small-batch
    limit."""
    return OVERHEAD * B_NOISE[opt]


def test_critical_batch_from_curves(root):
    res = CliRunner().invoke(
        main,
        [
            "analyze",
            "critical-batch",
            "cb",
            "--target",
            str(TARGET),
            "--format",
            "json",
            "--results",
            str(root),
        ],
    )
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
    # adamw (large noise scale) keeps scaling longer than sgd; sgd's B* = 4 lies below the
    # smallest measured batch size, and the fit check says so
    assert got[("adamw", 8)]["critical_batch"] > got[("sgd", 8)]["critical_batch"]
    assert got[("adamw", 8)]["fit_check"] == "ok"
    assert "beyond the measured batch sizes" in got[("sgd", 8)]["fit_check"]


def test_steps_to_target_figure(root, tmp_path):
    res = CliRunner().invoke(
        main, ["figures", "cb", "--figure", "steps_to_target", "--results", str(root)]
    )
    assert res.exit_code == 0, res.output
    assert (root / "cb" / "figures" / "steps_to_target.png").stat().st_size > 0
