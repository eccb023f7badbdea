"""Issue 30's options of ``harness analyze``, through the CLI on Parquet rows: ``--pooled-variance``
(each arm's seed variance pooled over the cells of a table), ``--family`` (one correction over
the claims of several commands), and the note of a comparison with unequal seed counts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from harness.analysis.testing import make_run, write_run
from tests.cli_calls import rows_of as _json
from tests.cli_calls import run as _run

#: Per optimizer and batch size: the seeds' values (cells differ in spread, not in noise model).
VALUES = {
    ("adamw", 8): (20.0, 20.4, 20.2),
    ("adamw", 32): (19.0, 19.1, 19.5),
    ("adamw", 128): (18.2, 18.0, 18.3),
    ("sgd", 8): (22.0, 22.9, 22.3),
    ("sgd", 32): (21.5, 21.0, 21.2),
    ("sgd", 128): (20.6, 20.0, 20.1),
    ("signum", 8): (21.0, 21.3, 21.1),
    ("signum", 32): (20.0, 20.5, 20.1),
    ("signum", 128): (19.4, 19.0, 19.3),
}


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("results")
    for (opt, bs), vals in VALUES.items():
        for s, v in enumerate(vals):
            write_run(root, make_run(grid="pool", optimizer=opt, batch_size=bs, seed=s), val_ppl=v)
    for opt, vals in (("sgd", (30.0, 31.0)), ("adamw", (27.0, 27.2, 27.1, 26.9, 27.3))):
        for s, v in enumerate(vals):
            write_run(root, make_run(grid="uneven", optimizer=opt, seed=s), val_ppl=v)
    return root


def _pooled(opts: tuple[str, ...]) -> tuple[float, float]:
    """(pooled variance, df) over the batch sizes of ``opts``, by hand."""
    cells = [np.array(v) for (o, _), v in VALUES.items() if o in opts]
    df = sum(c.size - 1 for c in cells)
    return sum((c.size - 1) * c.var(ddof=1) for c in cells) / df, df


ARMS = ("--a", "optimizer=sgd", "--b", "optimizer=adamw", "--by", "batch_size")


def test_best_with_pooled_variance_uses_the_pool_over_every_cell(root):
    rows = _json(
        root, "analyze", "best", "pool", "--by", "optimizer,batch_size", "--pooled-variance"
    )
    var, df = _pooled(("adamw", "sgd", "signum"))
    half = stats.t.ppf(0.975, df) * np.sqrt(var / 3)
    for r in rows:
        assert r["ci_high"] - r["mean"] == pytest.approx(half)
        assert r["mean"] - r["ci_low"] == pytest.approx(half)
    res = _run(root, "analyze", "best", "pool", "--by", "optimizer,batch_size", "--pooled-variance")
    assert "--pooled-variance: each arm's seed variance pooled over the cells" in res.stdout


def test_compare_with_pooled_variance_pools_each_arm_over_the_cells(root):
    rows = _json(
        root,
        "analyze",
        "compare",
        "pool",
        *ARMS,
        "--alternative",
        "two-sided",
        "--correction",
        "none",
        "--pooled-variance",
    )
    (va, da), (vb, db) = _pooled(("sgd",)), _pooled(("adamw",))
    se = np.sqrt(va / 3 + vb / 3)
    df = se**4 / ((va / 3) ** 2 / da + (vb / 3) ** 2 / db)  # Welch on the pooled variances
    for r in rows:
        d = np.mean(VALUES[("adamw", r["batch_size"])]) - np.mean(VALUES[("sgd", r["batch_size"])])
        assert r["diff"] == pytest.approx(d)
        assert r["ci_high"] - r["diff"] == pytest.approx(stats.t.ppf(0.975, df) * se)
        assert r["p"] == pytest.approx(2 * stats.t.sf(abs(d) / se, df))
    plain = _json(root, "analyze", "compare", "pool", *ARMS, "--alternative", "two-sided")
    assert all(
        p["ci_high"] - p["ci_low"] > r["ci_high"] - r["ci_low"]
        for p, r in zip(plain, rows, strict=True)
    )  # 2 df per cell against 6 per arm pooled


def test_gap_with_pooled_variance_gives_narrower_intervals_and_says_so(root):
    args = (
        "analyze",
        "gap",
        "pool",
        "--baseline",
        "optimizer=sgd",
        "--reference",
        "optimizer=adamw",
        "--by",
        "batch_size",
    )
    plain = {r["batch_size"]: r for r in _json(root, *args) if r["arm"] == "signum"}
    pooled = {
        r["batch_size"]: r for r in _json(root, *args, "--pooled-variance") if r["arm"] == "signum"
    }
    assert set(pooled) == {8, 32, 128}
    for bs, r in pooled.items():
        assert r["closure_pct"] == pytest.approx(plain[bs]["closure_pct"])
        assert r["ci_low_pct"] <= r["closure_pct"] <= r["ci_high_pct"]
    assert "--pooled-variance" in _run(root, *args, "--pooled-variance").stdout


def test_pooled_variance_needs_the_welch_test(root):
    res = _run(root, "analyze", "compare", "pool", *ARMS, "--test", "student", "--pooled-variance")
    assert res.exit_code == 2, res.output
    assert "--pooled-variance needs --test welch" in res.output


def test_compare_with_unequal_seed_counts_says_which_interval(root):
    args = ("analyze", "compare", "uneven", "--a", "optimizer=sgd", "--b", "optimizer=adamw")
    res = _run(root, *args)
    assert res.exit_code == 0, res.output
    assert "unequal seed counts: Banerjee's interval and test" in res.stdout
    (row,) = _json(root, *args, "--alternative", "two-sided")
    a, b = np.array([30.0, 31.0]), np.array([27.0, 27.2, 27.1, 26.9, 27.3])
    half = np.sqrt(
        stats.t.ppf(0.975, 1) ** 2 * a.var(ddof=1) / 2
        + stats.t.ppf(0.975, 4) ** 2 * b.var(ddof=1) / 5
    )
    assert row["ci_high"] - row["diff"] == pytest.approx(half)


def test_family_corrects_over_every_claim_of_several_commands(root):
    from harness.analysis.stats.corrections import holm
    from harness.core.paths import family_path

    compare = ("analyze", "compare", "pool", *ARMS, "--alternative", "two-sided")
    gap = (
        "analyze",
        "gap",
        "pool",
        "--baseline",
        "optimizer=sgd",
        "--reference",
        "optimizer=adamw",
        "--by",
        "batch_size",
    )
    alone = {r["batch_size"]: r["p_adj"] for r in _json(root, *compare)}
    first = {r["batch_size"]: r["p_adj"] for r in _json(root, *compare, "--family", "study")}
    assert first == pytest.approx(alone)  # the family holds this table's 3 claims only
    res = _run(root, *gap, "--family", "study")
    assert res.exit_code == 0, res.output
    assert "family study: holm correction over the 12 claim(s)" in res.stdout  # 3 + 3 x 3 tests
    claims = json.loads(family_path(root, "study").read_text())
    assert len(claims) == 12
    adjusted = dict(zip(claims, holm(np.array(list(claims.values()))), strict=True))
    again = _json(root, *compare, "--family", "study")  # replaces its 3 claims: still 12
    assert len(json.loads(family_path(root, "study").read_text())) == 12
    for r in again:
        key = f"compare pool val_ppl sgd vs adamw | batch_size={r['batch_size']}"
        assert r["p_adj"] == pytest.approx(adjusted[key])
        assert r["p_adj"] >= alone[r["batch_size"]]
    from harness.analysis.questions.family import adjusted as final

    assert final(root, "study") == pytest.approx(adjusted)  # what a study reads at its end
    rows = _json(root, *gap, "--family", "study")
    signum = next(r for r in rows if r["arm"] == "signum" and r["batch_size"] == 8)
    key = "gap pool val_ppl sgd vs adamw | batch_size=8: sgd vs signum"
    assert signum["p_baseline"] == pytest.approx(adjusted[key])


def test_a_bad_family_name_is_refused(root):
    res = _run(root, "analyze", "compare", "pool", *ARMS, "--family", "../x")
    assert res.exit_code == 2, res.output
    assert "--family" in res.output


def test_family_through_the_api_as_a_study_uses_it(root):
    """coupled_adam.py's protocol: a first pass records the claims, the second reads each p
    corrected over all of them."""
    from harness import api
    from harness.analysis.stats.corrections import holm

    def cells() -> list[dict]:
        out = []
        for where in ("batch_size = 8", "batch_size > 8"):
            table = api.analyze(
                "compare",
                "pool",
                results=root,
                where=where,
                a="optimizer=sgd",
                b="optimizer=adamw",
                by=["batch_size"],
                alternative="two-sided",
                family="api",
            )
            out += table.table.to_dict(orient="records")
        return out

    cells()
    second = cells()
    assert [c["p_adj"] for c in second] == pytest.approx(
        list(holm(np.array([c["p"] for c in second])))
    )
