"""How often each reported interval covers the truth: a simulation with known true values.

Every interval of the analysis (:mod:`harness.analysis.stats.intervals` and the functions built on
it) is run on many simulated experiments whose true value is known: per-seed values are the truth
plus noise, normal or heavy-tailed (Student t with 3 degrees of freedom, scaled to unit
variance), at n = 2, 3, 5 and 10 seeds per arm. The coverage is the share of experiments whose
interval holds the truth. The former percentile bootstrap of the gap closure is simulated too,
for comparison. ``scripts/coverage_table.py`` writes the table into ``docs/statistics.md``;
``tests/analysis/test_coverage.py`` fails when a nominal 95 % interval covers less than 93 % at
n = 3.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import optimize

from harness.analysis.stats.baseline_gap import closure, closure_interval, gap_t, small_gap
from harness.analysis.stats.batch_fit import fit_critical_batch
from harness.analysis.stats.crossing import advantage
from harness.analysis.stats.intervals import crossing_interval, linear_interval, two_arm_coefs
from harness.analysis.stats.optimum_fit import optimum_table
from harness.analysis.stats.pooled import pool
from harness.analysis.stats.power_law import budget_ratio_interval, checked, fit_power_law

#: The misspecified speed-up scenario's name.
SPEEDUP_DRIFT = "speed-up ratio, drifting power law (covered or flagged)"
#: The bench's extrapolated speed-up (issue 37 item 4): the candidate beats the baseline at the
#: largest budget, so the baseline's fitted curve is read beyond its last budget; the baseline
#: follows the drifting curve of SPEEDUP_DRIFT on budgets 5e8..4e9 (x2 apart, as the paper
#: protocol's with a fourth), the true ratio is 1.5 (it first reaches the candidate's loss at 6e9;
#: the curve falls until 9.6e9). The bench reads none of them better/worse (unchecked): the
#: rows say why (none covers at its level), the last the best variant tried.
EXTRAPOLATED = (
    "speed-up ratio, extrapolated 1.5x, drifting, 4 budgets (covered or flagged; noted: the "
    "bench reads it unchecked)",
    "speed-up ratio, extrapolated 1.5x, drifting, 3 budgets (noted: the bench reads it unchecked)",
    "speed-up ratio, extrapolated 1.5x, drifting, 4 budgets, variance max(lack of fit, seed) "
    "(covered or flagged; noted: tried, not used)",
)
#: Intervals whose simulation fits per experiment (``slow_reps``).
SLOW = (
    "speed-up ratio",
    SPEEDUP_DRIFT,
    *EXTRAPOLATED,
    "fitted optimum",
    "metric at optimum",
    "fitted optimum, asymmetric c = 0.08 (covered or flagged)",
    "fitted optimum, asymmetric c = 0.02 (covered or flagged)",
)
#: The Welch scenarios with unequal seed counts (Welch's df under-covered there: 90.5 % at
#: n = (2, 5); Banerjee's quantile now, :func:`harness.analysis.stats.intervals.welch_quantile`).
UNEQUAL = (
    "difference, n and n + 3 seeds, smaller arm noisier",
    "difference, n and 4 n seeds, equal noise",
)
#: Seed counts simulated.
SEED_COUNTS = (2, 3, 5, 10)
#: Nominal two-sided level simulated.
LEVEL = 0.95

Noise = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def _t3(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_t(3, shape) / np.sqrt(3.0)  # variance of t_3 is 3


#: Seed-noise distributions, each with unit variance.
NOISES: dict[str, Noise] = {
    "normal": lambda rng, shape: rng.standard_normal(shape),
    "student-t3": _t3,
}


def _summary(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, seed variance, n) over the last axis."""
    n = np.full(v.shape[:-1], float(v.shape[-1]))
    return v.mean(axis=-1), v.var(axis=-1, ddof=1), n


def _mean(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    m, var, k = _summary(5.0 + noise(rng, (reps, n)))
    lo, hi = linear_interval(m, [var / k], [k - 1.0], LEVEL)
    return (lo <= 5.0) & (hi >= 5.0)


def _difference(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    a = _summary(10.0 + noise(rng, (reps, n)))
    b = _summary(11.0 + 2.0 * noise(rng, (reps, n)))  # unequal variances: Welch's case
    lo, hi = linear_interval(
        b[0] - a[0], [a[1] / a[2], b[1] / b[2]], [a[2] - 1.0, b[2] - 1.0], LEVEL
    )
    return (lo <= 1.0) & (hi >= 1.0)


def _difference_unequal(n_b: Callable[[int], int], sd_a: float) -> Callable[..., np.ndarray]:
    """Unequal seed counts: n seeds of sd ``sd_a`` against ``n_b(n)`` of sd 1 (n = 2, sd 2:
    the (2, 5) case where Welch's df overstated the information)."""

    def sim(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
        a = _summary(11.0 + sd_a * noise(rng, (reps, n)))
        b = _summary(10.0 + noise(rng, (reps, n_b(n))))
        lo, hi = linear_interval(
            b[0] - a[0], [a[1] / a[2], b[1] / b[2]], [a[2] - 1.0, b[2] - 1.0], LEVEL
        )
        return (lo <= -1.0) & (hi >= -1.0)

    return sim


#: Pooled-variance scenarios (``--pooled-variance``): 4 cells of n seeds; the interval of cell
#: 0's mean (or of the difference of two arms in cell 0) on the variance pooled over the cells.
POOLED = (
    "mean, variance pooled over 4 cells, equal noise",
    "difference, each arm pooled over 4 cells, equal noise across cells",
    "mean, variance pooled over 4 cells of sd 2, 1, 1, 0.5: the noisiest cell (noted)",
    "mean, variance pooled over 4 cells of sd 2, 1, 1, 0.5: the quietest cell (noted)",
)


def _pooled_arm(noise: Noise, n: int, reps: int, rng, sds: np.ndarray) -> tuple[np.ndarray, ...]:
    """(cell means, pooled variance, its df) of one arm: 4 cells of n seeds around 0."""
    m, var, k = _summary(sds[None, :, None] * noise(rng, (reps, sds.size, n)))
    pooled_var, df = pool(var, k)
    return m, pooled_var, df


def _pooled_mean(sds: tuple[float, ...], cell: int) -> Callable[..., np.ndarray]:
    def sim(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
        m, var, df = _pooled_arm(noise, n, reps, rng, np.array(sds))
        lo, hi = linear_interval(m[:, cell], [var / n], [df], LEVEL)
        return (lo <= 0.0) & (hi >= 0.0)

    return sim


def _pooled_difference(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    ma, va, da = _pooled_arm(noise, n, reps, rng, np.ones(4))
    mb, vb, db = _pooled_arm(noise, n, reps, rng, np.full(4, 2.0))
    lo, hi = linear_interval(mb[:, 0] - ma[:, 0], [va / n, vb / n], [da, db], LEVEL)
    return (lo <= 0.0) & (hi >= 0.0)


#: Gap-closure scenario: (true mean, noise sd) of baseline, X and reference; closure 0.8.
GAP = {"b": (50.0, 4.0), "x": (26.0, 2.0), "r": (20.0, 1.0)}


def _gap_arms(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> list[np.ndarray]:
    return [m + sd * noise(rng, (reps, n)) for m, sd in GAP.values()]


def _true_closure() -> float:
    return float(closure(GAP["b"][0], GAP["x"][0], GAP["r"][0]))


def _gap_closure(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    b, x, r = (_summary(v) for v in _gap_arms(noise, n, reps, rng))
    lo, hi = closure_interval(b, x, r, LEVEL)
    return (lo <= _true_closure()) & (_true_closure() <= hi)


#: Small-gap scenarios: noise sd 1 in all three arms, gap B - R of ``g`` seed sd, closure 0.8;
#: the share of *bounded* intervals that cover or carry the small-gap note
#: (:func:`harness.analysis.stats.baseline_gap.small_gap`). Bounded ones are rare at a small gap
#: (4 % at g = 1, n = 2), so each draws :data:`SMALL_GAP_DRAWS` times ``reps`` experiments.
SMALL_GAP_DRAWS = 10


def _gap_small(g: float) -> Callable[..., np.ndarray]:
    def sim(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
        k = reps * SMALL_GAP_DRAWS
        b, x, r = (_summary(m + noise(rng, (k, n))) for m in (0.0, -0.8 * g, -g))
        lo, hi = closure_interval(b, x, r, LEVEL)
        bounded = np.isfinite(lo) & np.isfinite(hi)
        flagged = small_gap(gap_t(b, r), n)
        return ((lo <= 0.8) & (hi >= 0.8) | flagged)[bounded]

    return sim


def _gap_small_unflagged(g: float) -> Callable[..., np.ndarray]:
    """As :func:`_gap_small`, the share of bounded intervals *without* the note that cover."""

    def sim(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
        k = reps * SMALL_GAP_DRAWS
        b, x, r = (_summary(m + noise(rng, (k, n))) for m in (0.0, -0.8 * g, -g))
        lo, hi = closure_interval(b, x, r, LEVEL)
        shown = np.isfinite(lo) & np.isfinite(hi) & ~small_gap(gap_t(b, r), n)
        return ((lo <= 0.8) & (hi >= 0.8))[shown]

    return sim


#: The small-gap scenarios' names.
SMALL_GAP = (
    "gap closure, gap 1 sd, bounded (covered or flagged)",
    "gap closure, gap 2 sd, bounded (covered or flagged)",
)
#: Reported for the documentation, not held to the floor: at 3 seeds and a gap of 1 sd the
#: unflagged bounded intervals cover 92 % (the observed t does not tell those apart).
SMALL_GAP_UNFLAGGED = (
    "gap closure, gap 1 sd, bounded without the note (noted)",
    "gap closure, gap 2 sd, bounded without the note (noted)",
)


#: Bootstrap resamples of the former percentile interval (simulated for comparison only).
N_BOOT = 400


def _gap_bootstrap(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    arms = _gap_arms(noise, n, reps, rng)
    idx = rng.integers(0, n, size=(3, reps, N_BOOT, n))
    mb, mx, mr = (
        np.take_along_axis(v[:, None, :], i, axis=2).mean(axis=2)
        for v, i in zip(arms, idx, strict=True)
    )
    c = closure(mb, mx, mr)
    lo, hi = np.nanquantile(c, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=1)
    return (lo <= _true_closure()) & (_true_closure() <= hi)


#: Crossover scenario: a = 20 + (log2 x - 3), b = 22 + 0.25 (log2 x - 3), noise sd 0.3,
#: x = 8..256; b beats a above 2^(3 + 8/3).
CROSS_LOGX = np.arange(3.0, 9.0)
CROSS_TRUTH = 3.0 + 8.0 / 3.0


def _crossover(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    k = CROSS_LOGX.size
    a = _summary((20.0 + (CROSS_LOGX - 3.0))[None, :, None] + 0.3 * noise(rng, (reps, k, n)))
    b = _summary((22.0 + 0.25 * (CROSS_LOGX - 3.0))[None, :, None] + 0.3 * noise(rng, (reps, k, n)))
    adv = advantage(a[0], b[0], "min")
    var = np.concatenate([a[1] / a[2], b[1] / b[2]], axis=-1)
    df = np.concatenate([a[2] - 1.0, b[2] - 1.0], axis=-1)
    lo, hi, _, _ = crossing_interval(CROSS_LOGX, adv, two_arm_coefs(k), var, df, LEVEL)
    return (lo <= CROSS_TRUTH) & (hi >= CROSS_TRUTH)


#: Critical-batch scenario: steps S(B) = 50 (1 + 100 / B) (McCandlish et al.), seed noise 5 % of
#: S; the truth is B* = 0.2 B_noise = 20 (20 % over linear scaling from the small-batch limit).
#: Batch sizes 8..128 by doubling, and a x4 grid (4, 16, 64, 256).
CB_B = 2.0 ** np.arange(3, 8)
CB_B4 = 4.0 ** np.arange(1, 5)
CB_TRUTH = 20.0


def _critical_batch_on(b: np.ndarray) -> Callable[..., np.ndarray]:
    def sim(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
        steps = 50 * (1 + 100 / b)[None, :, None] * (1 + 0.05 * noise(rng, (reps, b.size, n)))
        out = np.zeros(reps, bool)
        for i in range(reps):
            f = fit_critical_batch(b, list(steps[i]), confidence=LEVEL)
            out[i] = f.ci_low <= CB_TRUTH <= f.ci_high
        return out

    return sim


#: Speed-up scenario: b = 2.4 + 300 D^-0.3, a = 2.5 + 300 D^-0.3 at 8e9 tokens, noise 0.003.
SPEED_D = np.array([1e9, 2e9, 4e9, 8e9])
SPEED_TRUTH = ((2.5 + 300 * 8e9**-0.3 - 2.4) / 300) ** (-1 / 0.3) / 8e9


def _speedup(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    curve_b = 2.4 + 300 * SPEED_D**-0.3
    final_a = 2.5 + 300 * 8e9**-0.3
    b = _summary(curve_b[None, :, None] + 0.003 * noise(rng, (reps, SPEED_D.size, n)))
    a = _summary(final_a + 0.003 * noise(rng, (reps, n)))
    out = np.zeros(reps, bool)
    for i in range(reps):
        _, lo, hi = budget_ratio_interval(
            SPEED_D,
            (b[0][i], b[1][i], b[2][i]),
            (a[0][i], a[1][i], a[2][i]),
            8e9,
            "min",
            LEVEL,
            polish=False,
        )
        out[i] = lo <= SPEED_TRUTH <= hi
    return out


#: Misspecified speed-up (issue 30): b = 2.4 + 300 D^-0.3 + 0.02 ln(D / 1e9)^2, a curve that
#: bends away from the power law as it flattens; covered, or flagged by ``fit_check``.
DRIFT = 0.02


def _drift_curve(d: np.ndarray | float) -> np.ndarray:
    return np.asarray(2.4 + 300 * np.power(d, -0.3) + DRIFT * np.log(np.asarray(d) / 1e9) ** 2)


DRIFT_TRUTH = (
    optimize.brentq(lambda d: float(_drift_curve(d)) - (2.5 + 300 * 8e9**-0.3), 1e8, 8e9) / 8e9
)


def _speedup_drift(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    final_a = 2.5 + 300 * 8e9**-0.3
    b = _summary(_drift_curve(SPEED_D)[None, :, None] + 0.003 * noise(rng, (reps, SPEED_D.size, n)))
    a = _summary(final_a + 0.003 * noise(rng, (reps, n)))
    out = np.zeros(reps, bool)
    for i in range(reps):
        b_i, a_i = (b[0][i], b[1][i], b[2][i]), (a[0][i], a[1][i], a[2][i])
        fit = fit_power_law(SPEED_D, b_i[0], "min", polish=False)
        _, lo, hi = budget_ratio_interval(SPEED_D, b_i, a_i, 8e9, "min", LEVEL, polish=False)
        lo, hi, flags = checked(fit, SPEED_D, b_i, a_i, 8e9, "min", LEVEL, (lo, hi), polish=False)
        out[i] = bool(flags) or lo <= DRIFT_TRUTH <= hi
    return out


EXTRAPOLATED_TRUTH = 1.5
EXTRAPOLATED_D = np.array([5e8, 1e9, 2e9, 4e9])


def _lack_of_fit_variance(d: np.ndarray, b: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """b's (means, variances, n) with every variance the larger of the pooled seed variance and
    the fit's lack-of-fit mean square (the variant tried: model error as noise; its df are
    then those of the seed variances, a generous choice)."""
    means, vars_, ns = b
    fit = fit_power_law(d, means, "min", polish=False)
    lof = float((ns * (means - fit(d)) ** 2).sum()) / max(d.size - 3, 1)
    pure = float(((ns - 1) * vars_).sum() / (ns - 1).sum())
    return means, np.full(d.size, max(lof, pure)), ns


def _speedup_extrapolated(
    budgets: np.ndarray, variance: Callable[..., tuple[np.ndarray, ...]] | None = None
) -> Callable[..., np.ndarray]:
    """The extrapolated speed-up on ``budgets`` (the last the candidate's): covered, or flagged
    by ``fit_check`` (with 3 budgets nothing can be checked: covered only); ``variance``
    replaces b's seed variances (a variant tried)."""
    top = float(budgets[-1])
    final_a = float(_drift_curve(EXTRAPOLATED_TRUTH * top))

    def sim(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
        curve = _drift_curve(budgets)[None, :, None]
        b = _summary(curve + 0.003 * noise(rng, (reps, budgets.size, n)))
        a = _summary(final_a + 0.003 * noise(rng, (reps, n)))
        out = np.zeros(reps, bool)
        for i in range(reps):
            b_i, a_i = (b[0][i], b[1][i], b[2][i]), (a[0][i], a[1][i], a[2][i])
            fit = fit_power_law(budgets, b_i[0], "min", polish=False)
            flags: list[str] = []
            if budgets.size > 3:  # the bench's checks, on the seed variances
                _, lo, hi = budget_ratio_interval(
                    budgets, b_i, a_i, top, "min", LEVEL, polish=False
                )
                _, _, flags = checked(
                    fit, budgets, b_i, a_i, top, "min", LEVEL, (lo, hi), polish=False
                )
            if variance is not None:
                b_i = variance(budgets, b_i)
            _, lo, hi = budget_ratio_interval(budgets, b_i, a_i, top, "min", LEVEL, polish=False)
            if budgets.size > 3:
                lo, hi, _ = checked(
                    fit, budgets, b_i, a_i, top, "min", LEVEL, (lo, hi), polish=False
                )
            out[i] = bool(flags) or lo <= EXTRAPOLATED_TRUTH <= hi
        return out

    return sim


#: Optimum scenario: metric 3 + 0.5 (ln lr - ln 1.5e-3)^2 at lr = 1e-3 * 3^(-2..2), noise 0.1.
OPT_LR = 1e-3 * 3.0 ** np.arange(-2, 3)
OPT_TRUTH = (1.5e-3, 3.0)


def _optimum_cells(
    noise: Noise, n: int, reps: int, rng: np.random.Generator, curve: np.ndarray | None = None
) -> pd.DataFrame:
    if curve is None:
        curve = OPT_TRUTH[1] + 0.5 * (np.log(OPT_LR) - np.log(OPT_TRUTH[0])) ** 2
    v = curve[None, :, None] + 0.1 * noise(rng, (reps, OPT_LR.size, n))
    m, var, _ = _summary(v)
    table = pd.DataFrame(
        {
            "cell": np.repeat(np.arange(reps), OPT_LR.size),
            "lr": np.tile(OPT_LR, reps),
            "mean": m.ravel(),
            "std": np.sqrt(var).ravel(),
            "n": n,
        }
    )
    return optimum_table(table, ["cell"], "lr", "min", LEVEL)


def _optimum(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    t = _optimum_cells(noise, n, reps, rng)
    return ((t["ci_low"] <= OPT_TRUTH[0]) & (t["ci_high"] >= OPT_TRUTH[0])).to_numpy()


def _optimum_metric(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    t = _optimum_cells(noise, n, reps, rng)
    return ((t["metric_ci_low"] <= OPT_TRUTH[1]) & (t["metric_ci_high"] >= OPT_TRUTH[1])).to_numpy()


#: Misspecified optimum scenarios (issue 30): true curves 3 + 0.2 x^2 + c e^(1.5 x),
#: x = ln lr - ln 1.5e-3, steeper above their optimum than a quadratic (c = 0.08: the issue's;
#: c = 0.02: milder, harder to detect); same grid and noise as the quadratic.
ASYM_X = np.log(OPT_LR) - np.log(OPT_TRUTH[0])


def _optimum_asymmetric(c: float) -> Callable[..., np.ndarray]:
    """Covered, or flagged by ``fit_check`` (a flagged value is not quoted as it stands)."""
    curve = 3 + 0.2 * ASYM_X**2 + c * np.exp(1.5 * ASYM_X)
    x_star = optimize.brentq(lambda x: 0.4 * x + 1.5 * c * np.exp(1.5 * x), -5.0, 5.0)
    truth = float(OPT_TRUTH[0] * np.exp(x_star))

    def sim(noise: Noise, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
        t = _optimum_cells(noise, n, reps, rng, curve)
        covered = (t["ci_low"] <= truth) & (t["ci_high"] >= truth)
        return (covered | (t["fit_check"] != "ok")).to_numpy()

    return sim


#: The asymmetric scenarios' names.
ASYMMETRIC = (
    "fitted optimum, asymmetric c = 0.08 (covered or flagged)",
    "fitted optimum, asymmetric c = 0.02 (covered or flagged)",
)


#: Interval name -> (method as the notes name it, simulation returning covered flags).
INTERVALS: dict[str, tuple[str, Callable[..., np.ndarray]]] = {
    "mean": ("Student t", _mean),
    "difference": ("Welch t", _difference),
    UNEQUAL[0]: ("Welch t; Banerjee at unequal n", _difference_unequal(lambda n: n + 3, 2.0)),
    UNEQUAL[1]: ("Welch t; Banerjee at unequal n", _difference_unequal(lambda n: 4 * n, 1.0)),
    POOLED[0]: ("Student t, pooled df", _pooled_mean((1.0, 1.0, 1.0, 1.0), 0)),
    POOLED[1]: ("Welch t, pooled df", _pooled_difference),
    POOLED[2]: ("Student t, pooled df", _pooled_mean((2.0, 1.0, 1.0, 0.5), 0)),
    POOLED[3]: ("Student t, pooled df", _pooled_mean((2.0, 1.0, 1.0, 0.5), 3)),
    "gap closure": ("Fieller, t quantiles", _gap_closure),
    SMALL_GAP[0]: ("as above; small-gap note", _gap_small(1.0)),
    SMALL_GAP[1]: ("as above; small-gap note", _gap_small(2.0)),
    SMALL_GAP_UNFLAGGED[0]: ("as above", _gap_small_unflagged(1.0)),
    SMALL_GAP_UNFLAGGED[1]: ("as above", _gap_small_unflagged(2.0)),
    "crossover": ("t-test inversion", _crossover),
    "critical batch": ("Fieller on b/a of S = a + b/B", _critical_batch_on(CB_B)),
    "critical batch (x4 grid)": ("Fieller on b/a of S = a + b/B", _critical_batch_on(CB_B4)),
    "speed-up ratio": ("delta method on log, t quantiles", _speedup),
    SPEEDUP_DRIFT: ("as above; fit_check", _speedup_drift),
    EXTRAPOLATED[0]: ("as above; fit_check", _speedup_extrapolated(EXTRAPOLATED_D)),
    EXTRAPOLATED[1]: ("as above", _speedup_extrapolated(EXTRAPOLATED_D[1:])),
    EXTRAPOLATED[2]: (
        "as above; fit_check",
        _speedup_extrapolated(EXTRAPOLATED_D, _lack_of_fit_variance),
    ),
    "fitted optimum": ("Fieller on -c1 / 2 c2", _optimum),
    "metric at optimum": ("Welch t on the fit", _optimum_metric),
    ASYMMETRIC[0]: ("as above; fit_check", _optimum_asymmetric(0.08)),
    ASYMMETRIC[1]: ("as above; fit_check", _optimum_asymmetric(0.02)),
    "gap closure (former)": ("percentile bootstrap", _gap_bootstrap),
}


def coverage(
    names: tuple[str, ...] | None = None,
    seed_counts: tuple[int, ...] = SEED_COUNTS,
    reps: int = 4000,
    slow_reps: int | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Coverage (percent) of each interval, noise and seed count.

    Args:
        names: keys of :data:`INTERVALS` (None: all).
        seed_counts: seeds per arm.
        reps: simulated experiments per (interval, noise, n).
        slow_reps: experiments for the speed-up ratio (one curve fit each; None: ``reps``).
        seed: random seed.

    Returns:
        Columns interval, method, noise, n, reps, coverage_pct.
    """
    rows: list[tuple[str, str, str, int, int, float]] = []
    for name in names or tuple(INTERVALS):
        method, simulate = INTERVALS[name]
        k = slow_reps if name in SLOW and slow_reps else reps
        for noise, draw in NOISES.items():
            for n in seed_counts:
                rng = np.random.default_rng([seed, n, len(rows)])
                covered = simulate(draw, n, k, rng)
                rows.append((name, method, noise, n, k, 100.0 * float(covered.mean())))
    return pd.DataFrame(rows, columns=["interval", "method", "noise", "n", "reps", "coverage_pct"])
