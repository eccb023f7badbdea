"""The fitted optimum's window check on a correctly specified curve (issue 37 item 6): a true
quadratic in log lr, 5 lrs 3x apart, 3 seeds of sd 0.1, curvature 0.2 per (ln lr)^2, where the
3 points around the best often do not bound the optimum within their noise (31 % of cells read
"unchecked window" before the 4-point window was tried, 3-4 % after). At most 10 % of cells may
carry a flag, shown with the Monte Carlo error (the flagged share's upper bound, not its point
estimate, must be below 10 %), the intervals still cover, and on the misspecified (asymmetric)
curves the share of cells covered or flagged keeps its 93 % floor: the check exists to catch a
wrong model."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from harness.analysis.stats.fit_check import OK
from harness.analysis.stats.optimum_fit import optimum_table
from tests.coverage_simulation import ASYM_X, NOISES, OPT_LR, OPT_TRUTH, _optimum_cells

#: Cells per simulated curve: the flagged share's Monte Carlo standard error is about 1 % at 6 %.
CELLS = 600
#: Cells per row of the measurement (:func:`main`).
MAIN_CELLS = 1000
CURVATURE = 0.2
#: The correct curve: a quadratic in log lr with its optimum at OPT_TRUTH.
CORRECT = OPT_TRUTH[1] + CURVATURE * (np.log(OPT_LR) - np.log(OPT_TRUTH[0])) ** 2
#: Most cells of a correct curve that may carry a flag.
FLAG_CAP = 0.10
#: Least share of a wrong curve's cells that are covered or flagged (the coverage table's floor).
FLOOR = 0.93
#: The kinds of flag counted apart by :func:`shares`.
KINDS = ("lack of fit", "window-sensitive", "unchecked")


def asymmetric(c: float) -> tuple[np.ndarray, float]:
    """The coverage table's asymmetric curve 3 + 0.2 x^2 + c e^(1.5 x) at the simulation's lrs,
    and its true optimum."""
    curve = 3 + 0.2 * ASYM_X**2 + c * np.exp(1.5 * ASYM_X)
    x_star = optimize.brentq(lambda x: 0.4 * x + 1.5 * c * np.exp(1.5 * x), -5.0, 5.0)
    return curve, float(OPT_TRUTH[0] * np.exp(x_star))


def mc_se(p: float, n: int) -> float:
    """The Monte Carlo standard error of a share p over n independent cells."""
    return math.sqrt(max(p * (1 - p), 1.0 / n) / n)


def shares(curve: np.ndarray, truth: float, cells: int, seed: int) -> dict[str, float]:
    """Shares of ``cells`` simulated cells (3 seeds of normal noise, sd 0.1) that are flagged,
    covered, covered or flagged, and flagged by each of :data:`KINDS`."""
    t = _optimum_cells(NOISES["normal"], 3, cells, np.random.default_rng(seed), curve)
    flagged = t["fit_check"] != OK
    covered = (t["ci_low"] <= truth) & (t["ci_high"] >= truth)
    kinds = {k: float(t["fit_check"].str.contains(k).mean()) for k in KINDS}
    out = {"flagged": float(flagged.mean()), "covered": float(covered.mean())}
    return out | {"covered or flagged": float((covered | flagged).mean())} | kinds


@pytest.mark.slow  # 600 cells, 10-25 s
def test_a_correct_curve_is_flagged_in_at_most_10_percent_of_cells_and_covered() -> None:
    """Before: 9.5 % of these cells flagged (upper bound 11.9 % > 10 %); 10.3 % and 11.7 % on
    two draws of 300 (about 6 % lack of fit, 3.7-4.0 % "unchecked window")."""
    t = _optimum_cells(NOISES["normal"], 3, CELLS, np.random.default_rng(37), CORRECT)
    flagged = float((t["fit_check"] != OK).mean())
    upper = flagged + 2 * mc_se(flagged, CELLS)  # one-sided 97.7 % Monte Carlo bound
    assert upper <= FLAG_CAP, (flagged, upper, t["fit_check"].value_counts())
    covered = float(((t["ci_low"] <= OPT_TRUTH[0]) & (t["ci_high"] >= OPT_TRUTH[0])).mean())
    assert covered >= 0.95 - 2 * mc_se(0.95, CELLS), covered
    # "unchecked" only where it truly cannot run: 3 points, no spare one to test the fit
    unchecked = t["fit_check"].str.contains("unchecked")
    assert (unchecked == (t["points"] == 3)).all(), t.loc[unchecked, ["points", "fit_check"]]


@pytest.mark.slow  # 1,000 cells, 20-50 s
def test_a_wrong_curve_is_covered_or_flagged_at_the_floor() -> None:
    """The coverage table's milder asymmetric curve (c = 0.02, 3 seeds, sd 0.1), the one at the
    floor (``tests/analysis/test_coverage.py`` holds both curves at 300 cells): before, 93.9 % of
    these 1,000 cells covered or flagged (93.0 % of the first 300 and of the first 600)."""
    curve, truth = asymmetric(0.02)
    got = shares(curve, truth, MAIN_CELLS, 0)["covered or flagged"]
    assert got >= FLOOR, got


def _cell(means: list[float], std: list[float]) -> pd.Series:
    """One cell of 3 seeds at the simulation's 5 lrs, answered by ``optimum_table``."""
    table = pd.DataFrame({"lr": OPT_LR, "mean": means, "std": std, "n": 3})
    return optimum_table(table, [], "lr", "min").iloc[0]


def test_a_sub_window_too_flat_to_bound_the_optimum_still_checks_the_fit() -> None:
    """A cell of the correct quadratic (best at the 4th lr: a 4-point main window) whose 3 points
    around the best do not bound the optimum within their noise: their confidence set is
    unbounded, but it holds the main fit's interval, so the windows agree; the interval spans
    the values of the main window the 3 points accept (here down to its first lr, 3.3e-4: they
    are nearly a line). Before: "unchecked window: the 3-point fit around the best has no
    bounded optimum", and the main fit's interval alone."""
    row = _cell([4.348, 3.466, 3.121, 3.057, 3.53], [0.13, 0.183, 0.098, 0.15, 0.036])
    assert row["points"] == 4
    assert row["fit_check"] == OK
    assert row["ci_low"] == pytest.approx(OPT_LR[1]) and row["ci_high"] < OPT_LR[3]
    assert row["ci_low"] <= OPT_TRUTH[0] <= row["ci_high"]


def test_a_sub_window_whose_unbounded_set_rejects_the_main_interval_is_flagged() -> None:
    """A cell of the asymmetric curve (c = 0.08): the 3 points around the best do not bound an
    optimum, and their confidence set (two rays) excludes every value of the 5-point fit's
    interval: a disagreement, named as such (before: only "unchecked window")."""
    row = _cell([4.25, 3.524, 3.149, 3.327, 4.69], [0.199, 0.088, 0.177, 0.06, 0.049])
    assert "3-point fit rejects every optimum in the 5-point fit's interval" in row["fit_check"]
    assert "unchecked" not in row["fit_check"]


def test_a_higher_is_better_metric_gets_the_same_check_as_its_mirror() -> None:
    """Negated means with goal "max" are the same question: the same windows (the 4-point
    sub-window around the best, not around the smallest mean), checks and intervals."""
    rng = np.random.default_rng(7)
    v = CORRECT[None, :, None] + 0.1 * rng.standard_normal((60, OPT_LR.size, 3))
    table = pd.DataFrame(
        {
            "cell": np.repeat(np.arange(60), OPT_LR.size),
            "lr": np.tile(OPT_LR, 60),
            "mean": v.mean(axis=2).ravel(),
            "std": v.std(axis=2, ddof=1).ravel(),
            "n": 3,
        }
    )
    low = optimum_table(table, ["cell"], "lr", "min")
    high = optimum_table(table.assign(mean=-table["mean"]), ["cell"], "lr", "max")
    assert (low["fit_check"] == high["fit_check"]).all()
    for col in ("ci_low", "ci_high"):
        np.testing.assert_allclose(low[col], high[col], rtol=1e-9)
    np.testing.assert_allclose(low["metric"], -high["metric"], rtol=1e-9)


def main() -> None:
    """The measurement in ``docs/statistics.md``: ``python tests/analysis/test_window_check.py``
    (:data:`MAIN_CELLS` cells per row, shares in % with their Monte Carlo standard error)."""
    rows = [("correct quadratic, draw 37", CORRECT, OPT_TRUTH[0], 37)]
    rows += [("correct quadratic, draw 38", CORRECT, OPT_TRUTH[0], 38)]
    rows += [(f"asymmetric c = {c}, draw 0", *asymmetric(c), 0) for c in (0.08, 0.02)]
    cols = ("flagged", *KINDS, "covered", "covered or flagged")
    print("| curve (3 seeds, sd 0.1) | cells | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 2) + "|")
    for name, curve, truth, seed in rows:
        got = shares(curve, truth, MAIN_CELLS, seed)
        cells = [f"{100 * got[k]:.1f} ± {100 * mc_se(got[k], MAIN_CELLS):.1f}" for k in cols]
        print(f"| {name} | {MAIN_CELLS} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
