"""The statistics of the analysis layer against hand-computed values and scipy."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from harness.analysis.rows.edges import edge_note
from harness.analysis.rows.preparation import VALUE, prepare
from harness.analysis.rows.selectors import ARM
from harness.analysis.rows.tuning import seed_stats, tune
from harness.analysis.stats.baseline_gap import closure, gap_closure
from harness.analysis.stats.corrections import bh, holm
from harness.analysis.stats.crossing import find_crossing
from harness.analysis.stats.power_law import PowerLaw, fit_power_law
from harness.analysis.stats.significance import compare, paper_test
from harness.core.errors import UserError

# Talk, Table 1 (val ppl, 160M, 3.2B tokens, mean of 3 seeds).
TABLE1 = {
    "adamw": 21.86,
    "signum": 23.23,
    "rmsprop": 27.04,
    "sgd_cclip": 33.40,
    "signsgd": 36.78,
    "sgd_gclip": 37.76,
    "sgd": 53.62,
}


def _seeds(values: dict[str, list[float]], **cols) -> pd.DataFrame:
    rows = [
        {ARM: arm, "seed": s, VALUE: v, **cols}
        for arm, vs in values.items()
        for s, v in enumerate(vs)
    ]
    return pd.DataFrame(rows)


# --- values ------------------------------------------------------------------------------------


def test_prepare_scores_diverged_worst_and_drops_faults():
    df = pd.DataFrame(
        {
            "status": ["completed", "diverged", "failed", "oom", "completed"],
            "val_ppl": [20.0, None, None, None, None],
        }
    )
    prep = prepare(df, "val_ppl", "min")
    assert list(prep.rows[VALUE]) == [20.0, math.inf]
    assert prep.diverged == 1
    assert prep.dropped == {"failed": 1, "oom": 1, "no val_ppl": 1}
    assert prepare(df, "val_ppl", "max").rows[VALUE].iloc[1] == -math.inf
    assert "1 diverged run(s) counted as worst" in prep.notes()


# --- tuning ------------------------------------------------------------------------------------


def _tuning_rows() -> pd.DataFrame:
    # optimizer a: lr 1 -> [10, 12], lr 2 -> [9, 10], lr 3 -> [9, inf] (one seed diverged)
    rows = [
        ("a", 1.0, 0, 10.0),
        ("a", 1.0, 1, 12.0),
        ("a", 2.0, 0, 9.0),
        ("a", 2.0, 1, 10.0),
        ("a", 3.0, 0, 8.0),
        ("a", 3.0, 1, math.inf),
        ("b", 1.0, 0, 5.0),
        ("b", 1.0, 1, 7.0),
        ("b", 2.0, 0, 6.0),
        ("b", 2.0, 1, 6.5),
    ]
    return pd.DataFrame(rows, columns=["optimizer", "lr", "seed", VALUE])


def test_seed_stats_hand_computed():
    st = seed_stats(_tuning_rows(), ["optimizer", "lr"]).set_index(["optimizer", "lr"])
    assert st.loc[("a", 1.0), "mean"] == 11.0
    assert st.loc[("a", 1.0), "std"] == pytest.approx(math.sqrt(2))  # corrected (ddof 1)
    assert st.loc[("a", 1.0), "two_sigma"] == pytest.approx(2 * math.sqrt(2))
    assert st.loc[("a", 3.0), "mean"] == math.inf and st.loc[("a", 3.0), "n_diverged"] == 1
    assert st.loc[("b", 2.0), "n"] == 2


def test_tune_picks_best_mean_diverged_never_wins_and_flags_edges():
    t = tune(_tuning_rows(), ["optimizer"], ["lr"], "min").set_index("optimizer")
    # a: lr 3 has the best single seed (8) but diverged once: worst, so lr 2 (mean 9.5) wins
    assert t.loc["a", "lr"] == 2.0 and t.loc["a", "mean"] == 9.5
    assert t.loc["a", "configs"] == 3 and t.loc["a", "runs"] == 6 and t.loc["a", "diverged"] == 1
    assert t.loc["a", "edge"] == ""
    # b: lr 1 (mean 6.0) vs lr 2 (6.25): best on the smallest lr tried -> add 0.5 (log spacing)
    assert t.loc["b", "lr"] == 1.0 and t.loc["b", "mean"] == 6.0
    assert t.loc["b", "edge"] == "lr=1 is the smallest tried: add 0.5"


def test_tune_max_goal_picks_largest():
    t = tune(_tuning_rows().assign(value=lambda d: -d[VALUE]), ["optimizer"], ["lr"], "max")
    assert list(t["lr"]) == [2.0, 1.0]


@pytest.mark.parametrize(
    ("axis", "searched", "best", "note"),
    [
        ("lr", [1e-4, 3e-4, 1e-3], 1e-3, "lr=0.001 is the largest tried: add 0.00333"),
        ("lr", [1e-4, 3e-4, 1e-3], 3e-4, ""),
        ("beta2", [0.95, 0.99, 0.999], 0.999, "beta2=0.999 is the largest tried: add 0.9999"),
        ("beta1", [0.5, 0.9], 0.5, "beta1=0.5 is the smallest tried: add 0"),
        ("beta1", [0.0, 0.5, 0.9], 0.0, ""),  # 0 is the bound of a decay rate
        ("weight_decay", [0.0, 0.1], 0.0, ""),
        ("coupled_scale_exp", [0, 1, 2], 2, "coupled_scale_exp=2 is the largest tried: add 3"),
        ("lr", [1e-3], 1e-3, ""),  # not searched
    ],
)
def test_edge_notes(axis, searched, best, note):
    assert edge_note(axis, searched, best) == note


# --- gap closure -------------------------------------------------------------------------------


def test_gap_closure_talk_table1_signum_closes_95_7_percent():
    c = closure(TABLE1["sgd"], TABLE1["signum"], TABLE1["adamw"])
    assert round(100 * float(c), 1) == 95.7
    assert float(closure(53.62, 27.04, 21.86)) == pytest.approx((53.62 - 27.04) / (53.62 - 21.86))
    seeds = _seeds({k: [v] for k, v in TABLE1.items()})
    out = gap_closure(seeds, [], "sgd", "adamw").set_index(ARM)
    assert round(out.loc["signum", "closure_pct"], 1) == 95.7
    assert out.loc["sgd", "closure_pct"] == 0 and out.loc["adamw", "closure_pct"] == 100
    assert np.isnan(out.loc["signum", "ci_low_pct"])  # one seed: no interval, and it says so
    assert out.loc["signum", "note"] == "n = 1: no interval"


def test_gap_closure_per_cell_and_diverged_arm():
    seeds = pd.concat(
        [
            _seeds({"sgd": [50, 52], "adam": [20, 22], "x": [27, 29]}, bs=8),
            _seeds({"sgd": [50, 52], "adam": [20, 22], "x": [math.inf, 30]}, bs=16),
        ]
    )
    out = gap_closure(seeds, ["bs"], "sgd", "adam").set_index(["bs", ARM])
    assert out.loc[(8, "x"), "closure_pct"] == pytest.approx(100 * (51 - 28) / (51 - 21))
    lo, hi = out.loc[(8, "x"), ["ci_low_pct", "ci_high_pct"]]
    assert lo <= out.loc[(8, "x"), "closure_pct"] <= hi
    assert out.loc[(16, "x"), "closure_pct"] == -math.inf
    assert "diverged" in out.loc[(16, "x"), "note"]


# --- crossover ---------------------------------------------------------------------------------


def test_find_crossing_interpolates_in_log2_x():
    xs = np.array([8.0, 16.0, 32.0])
    c = find_crossing(xs, np.array([-1.0, 1.0, 2.0]))
    assert c.x == pytest.approx(2**3.5) and c.b_better == "above" and c.sign_changes == 1
    c = find_crossing(xs, np.array([-1.0, 3.0, 2.0]))  # t = 1/4 of the way from 8 to 16
    assert c.x == pytest.approx(2**3.25)
    c = find_crossing(xs, np.array([1.0, -1.0, -2.0]))
    assert c.x == pytest.approx(2**3.5) and c.b_better == "below"
    assert find_crossing(xs, np.array([1.0, 2.0, 3.0])).b_better == "everywhere"
    assert np.isnan(find_crossing(xs, np.array([-1.0, 0.0, -2.0])).x)  # a tie is not "better"
    c = find_crossing(xs, np.array([1.0, -1.0, 1.0]))  # not monotone: the last change counts
    assert c.x == pytest.approx(2**4.5) and c.sign_changes == 2
    c = find_crossing(xs, np.array([-math.inf, 1.0, 1.0]))  # a diverged: midpoint in log2 x
    assert c.x == pytest.approx(2**3.5)


def test_crossover_single_seed_has_no_interval():
    from harness.analysis.stats.crossing import crossover

    seeds = _seeds({"a": [1.0]}, bs=8)
    for arm, bs, v in (("b", 8, 2.0), ("a", 16, 2.0), ("b", 16, 1.0)):
        seeds = pd.concat([seeds, _seeds({arm: [v]}, bs=bs)])
    res = crossover(seeds, [], "bs", "a", "b", "min").iloc[0]
    assert res["crossover"] == pytest.approx(2**3.5) and np.isnan(res["ci_low"])
    assert res["note"] == "n = 1 at some x: no interval"


def test_crossover_bootstrap_interval_covers_truth():
    """a worsens by 1 per doubling, b by 0.25 from 2 worse: b wins above 2^(3 + 8/3)."""
    from harness.analysis.stats.crossing import crossover

    truth = 2 ** (3 + 8 / 3)
    rng = np.random.default_rng(1)
    covered, trials = 0, 60
    for rep in range(trials):
        rows = [
            {ARM: arm, "bs": 2**lg, "seed": s, VALUE: base + slope * (lg - 3) + rng.normal(0, 0.3)}
            for arm, base, slope in (("a", 20.0, 1.0), ("b", 22.0, 0.25))
            for lg in range(3, 9)
            for s in range(8)
        ]
        res = crossover(pd.DataFrame(rows), [], "bs", "a", "b", "min", n_boot=300, seed=rep).iloc[0]
        assert res["b_better"] == "above"
        covered += res["ci_low"] <= truth <= res["ci_high"]
    assert covered >= 0.85 * trials


# --- significance tests ------------------------------------------------------------------------


def test_paper_test_is_app_f_exactly():
    a = np.array([3.14, 3.15, 3.13])  # s = 0.01
    b = np.array([3.12, 3.11, 3.13])  # s = 0.01, d = -0.02
    out = paper_test(a, b, "less", 0.05)
    assert round(stats.t.ppf(0.95, 2), 2) == 2.92  # the paper's t_(alpha, nu = 2)
    expected = stats.t.ppf(0.95, 2) * math.sqrt(0.01**2 + 0.01**2) / math.sqrt(3)
    assert out.threshold == pytest.approx(expected) and out.threshold == pytest.approx(
        0.02384, abs=1e-5
    )
    assert out.p > 0.05  # |d| = 0.02 < threshold: not significant
    better = paper_test(a, b - 0.02, "less", 0.05)  # d = -0.04 < -threshold
    assert better.p < 0.05
    assert paper_test(b - 0.02, a, "greater", 0.05).p == pytest.approx(better.p)


def test_compare_matches_scipy_and_hand_values():
    seeds = _seeds({"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0]})
    run = lambda test: compare(seeds, [], "a", "b", test=test, alternative="greater").iloc[0]  # noqa: E731
    welch = run("welch")
    assert welch["statistic"] == pytest.approx(3 / math.sqrt(2 / 3))
    assert welch["p"] == pytest.approx(stats.t.sf(3 / math.sqrt(2 / 3), 4))  # df = 4 here
    assert run("student")["p"] == pytest.approx(
        stats.ttest_ind([4, 5, 6], [1, 2, 3], alternative="greater").pvalue
    )
    assert run("mannwhitney")["p"] == pytest.approx(0.05)  # exact: 1 of C(6, 3) = 20 orderings
    assert welch["diff"] == 3.0 and welch["n_a"] == 3 and welch["std_b"] == 1.0
    paired = compare(
        _seeds({"a": [1.0, 2.0, 3.0], "b": [2.0, 4.0, 5.0]}),
        [],
        "a",
        "b",
        test="paired",
        alternative="greater",
    ).iloc[0]
    assert paired["statistic"] == pytest.approx(5.0)  # diffs 1, 2, 2: mean 5/3, sd 1/sqrt(3)
    assert paired["p"] == pytest.approx(stats.t.sf(5.0, 2))


def test_compare_paired_pairs_by_seed():
    seeds = pd.DataFrame(
        {ARM: ["a"] * 3 + ["b"] * 3, "seed": [0, 1, 2, 2, 1, 0], VALUE: [1, 2, 3, 3.5, 2.5, 1.5]}
    )
    r = compare(seeds, [], "a", "b", test="paired", alternative="greater").iloc[0]
    assert r["diff"] == pytest.approx(0.5)
    # every pair differs by exactly 0.5: no variance of the differences, so no test (issue 30;
    # it was statistic inf, p = 0, "significant")
    assert np.isnan(r["p"]) and "zero seed variance" in r["note"]
    seeds.loc[5, VALUE] = 1.6  # pairs now differ by 0.5, 0.5, 0.6
    r = compare(seeds, [], "a", "b", test="paired", alternative="greater").iloc[0]
    want = stats.ttest_rel([3.5, 2.5, 1.6], [3, 2, 1], alternative="greater").pvalue
    assert r["p"] == pytest.approx(want)


def test_compare_corrections_and_significance_per_cell():
    cells = [
        _seeds({"a": [10.0, 10.2, 10.1], "b": [9.0, 9.1, 9.2]}, bs=8),
        _seeds({"a": [10.0, 10.2, 10.1], "b": [10.0, 10.3, 10.05]}, bs=16),
    ]
    out = compare(pd.concat(cells), ["bs"], "a", "b", test="welch", correction="holm")
    assert list(out["significant"]) == ["yes", "no"]
    p = out["p"].to_numpy()
    assert out["p_adj"].tolist() == pytest.approx(holm(p).tolist())


def test_compare_rejects_too_few_seeds_and_unequal_paper():
    with pytest.raises(UserError, match="at least 2 seeds"):
        compare(_seeds({"a": [1.0], "b": [2.0, 3.0]}), [], "a", "b")
    with pytest.raises(UserError, match="same number of seeds"):
        compare(_seeds({"a": [1.0, 2.0], "b": [2.0, 3.0, 4.0]}), [], "a", "b", test="paper")
    with pytest.raises(UserError, match="one-sided"):
        compare(
            _seeds({"a": [1.0, 2.0], "b": [2.0, 3.0]}),
            [],
            "a",
            "b",
            test="paper",
            alternative="two-sided",
        )


def test_compare_diverged_seed_is_not_a_number_for_t_tests():
    seeds = _seeds({"a": [10.0, math.inf, 10.1], "b": [9.0, 9.1, 9.2]})
    t = compare(seeds, [], "a", "b", test="welch").iloc[0]
    assert t["significant"] == "n/a" and "diverged" in t["note"]
    mw = compare(seeds, [], "a", "b", test="mannwhitney").iloc[0]
    assert mw["p"] == pytest.approx(0.05) and mw["significant"] == "no"  # ranks handle inf


def test_holm_and_bh_hand_computed_and_scipy():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    assert holm(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert bh(p).tolist() == pytest.approx([0.02, 0.04, 0.04, 0.02])
    q = np.random.default_rng(0).uniform(0, 0.2, 17)
    assert bh(q).tolist() == pytest.approx(stats.false_discovery_control(q).tolist())
    with_nan = holm(np.array([0.01, np.nan, 0.02]))
    assert np.isnan(with_nan[1]) and with_nan[[0, 2]].tolist() == pytest.approx([0.02, 0.02])


# --- speed-up ----------------------------------------------------------------------------------


def test_power_law_fit_recovers_parameters_and_budget():
    d = np.array([1e9, 2e9, 4e9, 8e9, 16e9])
    truth = PowerLaw(A=300.0, alpha=0.3, E=2.4, sign=1.0)
    fit = fit_power_law(d, truth(d), "min")
    assert (fit.A, fit.alpha, fit.E) == pytest.approx((300.0, 0.3, 2.4), rel=1e-4)
    target = float(truth(6e9))
    assert fit.budget_for(target) == pytest.approx(6e9, rel=1e-4)
    assert fit.budget_for(2.3) == math.inf  # below the asymptote: never reached
    rising = fit_power_law(d, 1.0 - truth(d) + 2.4, "max")  # accuracy-like: rises to E
    assert rising.alpha == pytest.approx(0.3, rel=1e-4) and pytest.approx(1.0, rel=1e-4) == rising.E


def test_speedup_ratio_and_interval_cover_truth():
    """b = adam: 2.4 + 300 D^-0.3; a = signum: 2.5 + 300 D^-0.3, final value at 8e9 tokens."""
    from harness.analysis.stats.power_law import speedup

    truth = ((2.5 + 300 * 8e9**-0.3 - 2.4) / 300) ** (-1 / 0.3) / 8e9  # 0.405
    covered, trials = 0, 20
    for rep in range(trials):
        rng = np.random.default_rng(100 + rep)
        rows = [
            {ARM: arm, "tokens": x, "seed": s, VALUE: e + 300 * x**-0.3 + rng.normal(0, 0.003)}
            for arm, e in (("signum", 2.5), ("adam", 2.4))
            for x in (1e9, 2e9, 4e9, 8e9)
            for s in range(4)
        ]
        out = speedup(pd.DataFrame(rows), [], "tokens", "signum", "adam", "min")
        out = out.iloc[0]
        assert out["ratio"] == pytest.approx(truth, rel=0.05)
        assert out["budget_a"] == 8e9 and out["note"] == ""
        covered += out["ci_low"] <= truth <= out["ci_high"]
    assert covered >= 0.85 * trials


def test_speedup_needs_three_budgets():
    from harness.analysis.stats.power_law import speedup

    rows = [{ARM: a, "tokens": x, "seed": 0, VALUE: 3.0} for a in ("a", "b") for x in (1.0, 2.0)]
    with pytest.raises(UserError, match="at least 3 values of tokens"):
        speedup(pd.DataFrame(rows), [], "tokens", "a", "b", "min")


def test_gap_fieller_interval_and_holm_significance_hand_computed():
    """Fieller's closure interval solved by hand; vs_* say better/worse only after Holm."""
    vals = {"sgd": [50.0, 52.0, 54.0], "adam": [20.0, 21.0, 22.0], "x": [26.0, 27.0, 28.0]}
    vals["rms"] = [19.0, 21.5, 23.0]  # beats adam on the mean, not significantly
    out = gap_closure(_seeds(vals), [], "sgd", "adam").set_index(ARM)
    # N = 52 - 27 = 25, D = 52 - 21 = 31; var of means: sgd 4/3, x 1/3, adam 1/3
    vn, vd, c = 4 / 3 + 1 / 3, 4 / 3 + 1 / 3, 4 / 3
    theta = 25 / 31
    w = [(1 - theta) ** 2 * 4 / 3, 1 / 3, theta**2 / 3]
    df = sum(w) ** 2 / sum(x * x / 2 for x in w)
    q = stats.t.ppf(0.975, df) ** 2
    a, b, cc = 31**2 - q * vd, 25 * 31 - q * c, 25**2 - q * vn
    lo = (b - math.sqrt(b * b - a * cc)) / a
    assert out.loc["x", "closure_pct"] == pytest.approx(100 * theta)
    assert out.loc["x", "ci_low_pct"] == pytest.approx(100 * lo, rel=0.05)  # df at the estimate
    # exact inversion: every theta whose test "N - theta D = 0" is not rejected, each at its
    # own Welch-Satterthwaite df (issue 30: the df is refined at each bound, not once)
    grid = np.linspace(0.5, 1.2, 70001)
    terms = np.stack([(1 - grid) ** 2 * 4 / 3, np.full_like(grid, 1 / 3), grid**2 / 3])
    dfs = terms.sum(0) ** 2 / (terms**2 / 2).sum(0)
    kept = grid[np.abs(25 - grid * 31) <= stats.t.ppf(0.975, dfs) * np.sqrt(terms.sum(0))]
    assert out.loc["x", "ci_low_pct"] == pytest.approx(100 * kept.min(), abs=2e-3)
    assert out.loc["x", "ci_high_pct"] == pytest.approx(100 * kept.max(), abs=2e-3)
    p = [
        stats.ttest_ind(vals[arm], vals[ref], equal_var=False).pvalue
        for arm in ("rms", "x")
        for ref in ("sgd", "adam")
    ]
    adj = holm(np.array(p))
    assert out.loc["rms", "p_reference"] == pytest.approx(adj[1])
    assert out.loc["x", "p_baseline"] == pytest.approx(adj[2])
    assert out.loc["x", "vs_baseline"] == "better" and out.loc["rms", "vs_reference"] == "n.s."
    assert out.loc["sgd", "vs_baseline"] == "-"


def test_gap_unbounded_when_the_gap_is_not_significant():
    vals = {"sgd": [20.0, 25.0, 30.0], "adam": [22.0, 24.0, 27.0], "x": [23.0, 24.0, 25.0]}
    row = gap_closure(_seeds(vals), [], "sgd", "adam").set_index(ARM).loc["x"]
    assert row["ci_low_pct"] == -math.inf and row["ci_high_pct"] == math.inf
    assert "unbounded" in row["note"]


def test_fitted_optimum_and_its_interval_by_test_inversion():
    """A known quadratic in log lr whose optimum (1.5e-3) lies between grid points; the interval
    matches an independent inversion of the t test of 'the slope is zero at u0'."""
    from harness.analysis.stats.optimum_fit import optimum_table

    lr = 1e-3 * 3.0 ** np.arange(-2, 3)
    u = np.log(lr)
    mean = 3 + 0.5 * (u - np.log(1.5e-3)) ** 2
    std = np.array([0.1, 0.2, 0.1, 0.3, 0.1])
    table = pd.DataFrame({"lr": lr, "mean": mean, "std": std, "n": 3})
    row = optimum_table(table, [], "lr", "min").iloc[0]
    assert row["optimum"] == pytest.approx(1.5e-3) and row["metric"] == pytest.approx(3.0)
    assert row["grid_best"] == pytest.approx(1e-3) and row["points"] == 5
    # independent: slope(u0) = c1 + 2 c2 (u0 - u_bar) of np.polyfit's fit, t-inverted
    noisy = mean + np.array([0.05, -0.1, 0.02, 0.2, -0.05])  # a draw, so the slope test bites
    row = optimum_table(table.assign(mean=noisy), [], "lr", "min").iloc[0]
    c = np.polyfit(u - u.mean(), noisy, 2)[::-1]
    assert np.log(row["optimum"]) == pytest.approx(u.mean() - c[1] / (2 * c[2]))
    grid = np.linspace(u[0] - 1, u[-1] + 1, 4001)

    def inverted(idx: slice) -> np.ndarray:
        uu, mm, ss = u[idx], noisy[idx], std[idx]
        design = np.stack([np.ones(uu.size), uu - uu.mean(), (uu - uu.mean()) ** 2], axis=1)
        p, cc = np.linalg.pinv(design), np.polyfit(uu - uu.mean(), mm, 2)[::-1]
        kept = []
        for u0 in grid:
            w = p[1] + 2 * (u0 - uu.mean()) * p[2]
            terms = w**2 * ss**2 / 3
            df = terms.sum() ** 2 / (terms**2 / 2).sum()
            slope = cc[1] + 2 * cc[2] * (u0 - uu.mean())
            kept.append(abs(slope) <= stats.t.ppf(0.975, df) * math.sqrt(terms.sum()))
        return grid[np.array(kept)]

    # the reported interval spans the 5-point fit's and the 3-point fit's around the best
    # (model error between fit windows, issue 30), each an inversion of the slope's t test
    inside = np.concatenate([inverted(slice(0, 5)), inverted(slice(1, 4))])
    assert np.log(row["ci_low"]) == pytest.approx(inside.min(), abs=0.02)
    assert np.log(row["ci_high"]) == pytest.approx(inside.max(), abs=0.02)
