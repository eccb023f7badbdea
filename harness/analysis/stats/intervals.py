"""Confidence intervals whose coverage holds at the seed counts people use (n = 2, 3, 5).

Every interval the analysis reports comes from here, and each function names its method
(:data:`METHODS`) so that tables can say which one they used. All take per-arm summaries
(means, variances of the seeds, seed counts) as numpy arrays that broadcast, so the coverage
simulation (:mod:`coverage_simulation`) runs the very same code over thousands of draws.

- A mean: Student's t interval, ``m +- t_(1 - alpha/2, n - 1) * s / sqrt(n)``.
- A difference or any linear combination of independent arms' means: the Welch interval, with
  the Welch-Satterthwaite degrees of freedom; where the arms' seed counts differ, Banerjee's
  interval instead (:mod:`~harness.analysis.stats.banerjee`: Welch under-covers there).
- A ratio of two linear combinations (gap closure): Fieller's interval, which inverts the t test
  of ``N - theta * D = 0``; it is unbounded when the denominator is not distinguishable from 0
  (the gap itself is not significant), and says so rather than inventing a finite range.
- A zero crossing of a piecewise-linear difference (crossover): the same inversion, point by
  point along x (the set of x where the interpolated advantage is not significantly nonzero).

With one seed in an arm there is no variance estimate and so no interval (NaN).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special, stats

from harness.analysis.stats import banerjee

#: An array, or a number that broadcasts like one.
Values = np.ndarray | float

#: Method names as the notes print them.
METHODS = {
    "mean": "Student t interval over seeds (n - 1 df)",
    "diff": "Welch t interval (Welch-Satterthwaite df)",
    "paired": "paired t interval over matched seeds (n - 1 df)",
    "ratio": "Fieller interval with t quantiles (Welch-Satterthwaite df)",
    "crossing": "t-test inversion along x: the x where the interpolated advantage is not "
    "significantly nonzero (Welch-Satterthwaite df)",
    "delta": "delta method on the log of the ratio with t quantiles (Welch-Satterthwaite df)",
}

#: The note of a table where some interval or test had unequal seed counts in its arms.
UNEQUAL_N = (
    "unequal seed counts: Banerjee's interval and test (each arm's own t quantile, "
    "conservative), where Welch's df under-covers"
)
#: The note every table with an interval prints when some arm has one seed.
ONE_SEED = "n = 1: no interval"
#: The note of a quantity whose seeds are all identical (no seed variance to test against).
ZERO_VARIANCE = "identical seeds (zero seed variance): no interval and no test"


def t_quantile(confidence: float, df: np.ndarray | float) -> np.ndarray:
    """The two-sided t quantile ``t_(1 - (1 - confidence) / 2, df)``; NaN where df is not > 0."""
    df = np.asarray(df, float)
    p = 1.0 - (1.0 - confidence) / 2.0
    with np.errstate(invalid="ignore"):
        if 0.0 < p < 1.0:  # stats.t.ppf's own numbers (its _ppf), without its checks' cost
            return np.asarray(special.stdtrit(np.where(df > 0, df, np.nan), p), float)
        q = stats.t.ppf(p, np.where(df > 0, df, np.nan))
    return np.asarray(q, float)


def satterthwaite(weights: Sequence[Values], dfs: Sequence[Values]) -> np.ndarray:
    """Welch-Satterthwaite degrees of freedom of a sum of independent variance terms.

    ``weights[i]`` is the i-th term's contribution to the variance (``c_i^2 s_i^2 / n_i``) and
    ``dfs[i]`` its degrees of freedom (``n_i - 1``). A term with zero weight does not count.
    """
    return _satterthwaite(*_stacked(weights, dfs))


def _stacked(weights: Sequence[Values], dfs: Sequence[Values]) -> tuple[np.ndarray, np.ndarray]:
    """(terms, ...) weights and dfs, broadcast together and stacked."""
    both = np.broadcast_arrays(*[np.asarray(x, float) for x in (*weights, *dfs)])
    return np.stack(both[: len(weights)]), np.stack(both[len(weights) :])


def _satterthwaite(w: np.ndarray, d: np.ndarray) -> np.ndarray:
    """:func:`satterthwaite` of stacked (terms, ...) weights and dfs."""
    with np.errstate(divide="ignore", invalid="ignore"):
        den = np.where(w > 0, w * w / d, 0.0).sum(axis=0)
        out = w.sum(axis=0) ** 2 / den
    # all-zero variance (identical seeds): the smallest df of the terms, a finite choice
    df: np.ndarray = np.where(den > 0, out, d.min(axis=0))
    return df


def welch_quantile(
    weights: Sequence[Values], dfs: Sequence[Values], confidence: float
) -> np.ndarray:
    """The two-sided quantile of every Welch-type interval here: Welch-Satterthwaite's t where
    every term with weight has the same df (equal seed counts), Banerjee's effective quantile
    (:func:`harness.analysis.stats.banerjee.quantile`) where they differ."""
    w, d = _stacked(weights, dfs)
    hi = np.where(w > 0, d, -np.inf).max(axis=0)
    lo = np.where(w > 0, d, np.inf).min(axis=0)
    welch = t_quantile(confidence, _satterthwaite(w, d))
    if np.all(hi <= lo):
        return welch
    return np.where(hi <= lo, welch, banerjee.quantile(weights, dfs, (1.0 - confidence) / 2.0))


def welch_p_value(
    estimate: float, weights: Sequence[float], dfs: Sequence[float], alternative: str
) -> float:
    """The p-value of the test that inverts :func:`linear_interval`: of ``estimate = 0`` for a
    linear combination of independent means (``alternative``: ``two-sided``, ``less``,
    ``greater``); Welch's t where the dfs are equal, Banerjee's test where they differ."""
    se = float(np.sqrt(np.sum(weights)))
    t = estimate / se if se > 0 else float("nan")
    w, d = np.asarray(weights, float), np.asarray(dfs, float)
    if len(set(d[w > 0])) > 1:
        return banerjee.p_value(t, list(w), list(d), alternative)
    df = float(_satterthwaite(w, d))
    if alternative == "two-sided":
        return float(2 * _t_sf(abs(t), df))
    return float(_t_sf(-t, df) if alternative == "less" else _t_sf(t, df))


def _t_sf(x: float, df: float) -> float:
    """``stats.t.sf(x, df)``; its own numbers (its _sf, the cdf's at -x) without its checks'
    cost where x is finite and df > 0."""
    if math.isfinite(x) and df > 0:
        return float(special.stdtr(df, -x))
    return float(stats.t.sf(x, df))


def unequal_counts(*counts: float) -> bool:
    """Whether arms with these seed counts get Banerjee's interval (see :func:`welch_quantile`)."""
    return len(set(counts)) > 1


def mean_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """Student's t interval of the mean of ``values`` (NaN for one value or a non-finite one)."""
    v = np.asarray(values, float)
    if v.size < 2 or not np.isfinite(v).all():
        return float("nan"), float("nan")
    lo, hi = linear_interval(v.mean(), [v.var(ddof=1) / v.size], [v.size - 1.0], confidence)
    return float(lo), float(hi)


def linear_interval(
    estimate: Values,
    weights: Sequence[Values],
    dfs: Sequence[Values],
    confidence: float,
) -> tuple[np.ndarray, np.ndarray]:
    """``estimate +- t * sqrt(sum(weights))`` with Welch-Satterthwaite df (Banerjee's quantile
    where the dfs differ, see :func:`welch_quantile`): the Welch interval of a linear combination
    of independent means."""
    w = np.stack(np.broadcast_arrays(*[np.asarray(x, float) for x in weights]))
    half = welch_quantile(weights, dfs, confidence) * np.sqrt(w.sum(axis=0))
    est = np.asarray(estimate, float)
    return est - half, est + half


def welch_interval(a: np.ndarray, b: np.ndarray, confidence: float) -> tuple[float, float]:
    """Welch's interval of mean(b) - mean(a); NaN when an arm has one seed or a diverged one."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if min(a.size, b.size) < 2 or not (np.isfinite(a).all() and np.isfinite(b).all()):
        return float("nan"), float("nan")
    lo, hi = linear_interval(
        b.mean() - a.mean(),
        [a.var(ddof=1) / a.size, b.var(ddof=1) / b.size],
        [a.size - 1.0, b.size - 1.0],
        confidence,
    )
    return float(lo), float(hi)


def fieller(
    num: Values,
    den: Values,
    v_num: Values,
    v_den: Values,
    cov: Values,
    q: Values,
) -> tuple[np.ndarray, np.ndarray]:
    """Fieller's interval of num / den: the theta with
    (num - theta den)^2 <= q var(num - theta den).

    ``q`` is the squared t quantile. Where den is not significantly nonzero
    (den^2 < q v_den) the set is unbounded: (-inf, inf) is returned (the union of two rays is
    reported as the whole line, which is what a reader can use).
    """
    num, den, v_num, v_den, cov, q = (
        np.asarray(v, float) for v in (num, den, v_num, v_den, cov, q)
    )
    a = den * den - q * v_den
    b = num * den - q * cov
    c = num * num - q * v_num
    with np.errstate(divide="ignore", invalid="ignore"):
        disc = np.sqrt(np.maximum(b * b - a * c, 0.0))
        lo = (b - disc) / a
        hi = (b + disc) / a
    bounded = a > 0
    return np.where(bounded, lo, -np.inf), np.where(bounded, hi, np.inf)


def ratio_interval(
    num: Values,
    den: Values,
    parts: Sequence[tuple[Values, Values, Values, Values]],
    confidence: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Fieller's interval of num / den where num = sum c_i m_i and den = sum e_i m_i over
    independent arm means m_i.

    Args:
        num: the numerator's estimate.
        den: the denominator's estimate.
        parts: per arm ``(c_i, e_i, var_of_mean_i, df_i)``.
        confidence: two-sided level.

    The degrees of freedom are Welch-Satterthwaite's for the combination num - theta den (or
    Banerjee's quantile where the arms' seed counts differ, :func:`welch_quantile`), taken
    at each bound itself: the test of "num / den = theta" is inverted exactly, each bound found
    by a fixed-point iteration from the bound at the estimate's df (to 1e-12 relative, at most
    :data:`FIELLER_ITERATIONS` steps).
    """

    def var_terms(theta: np.ndarray) -> list[np.ndarray]:
        return [(c - theta * e) ** 2 * v for c, e, v, _ in parts]

    v_num = sum(c * c * v for c, _, v, _ in parts)
    v_den = sum(e * e * v for _, e, v, _ in parts)
    cov = sum(c * e * v for c, e, v, _ in parts)
    dfs = [d for *_, d in parts]
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = np.asarray(num, float) / np.asarray(den, float)
    q = welch_quantile(var_terms(theta), dfs, confidence) ** 2
    bounds = list(fieller(num, den, v_num, v_den, cov, q))
    for i in range(2):
        for _ in range(FIELLER_ITERATIONS):
            at = np.where(np.isfinite(bounds[i]), bounds[i], theta)
            q_b = welch_quantile(var_terms(at), dfs, confidence) ** 2
            new = fieller(num, den, v_num, v_den, cov, q_b)[i]
            with np.errstate(invalid="ignore"):
                done = np.all((new == bounds[i]) | (np.abs(new - bounds[i]) <= 1e-12 * np.abs(new)))
            bounds[i] = new
            if done:
                break
    return bounds[0], bounds[1]


def ratio_accepts(
    num: float,
    den: float,
    parts: Sequence[tuple[Values, Values, Values, Values]],
    theta: float,
    confidence: float,
) -> bool:
    """Whether the test that :func:`ratio_interval` inverts accepts ``num / den = theta``:
    (num - theta den)^2 <= q var(num - theta den), q the squared two-sided quantile at
    ``confidence`` (Welch-Satterthwaite's, Banerjee's at unequal df) taken at theta itself.

    This is membership in Fieller's confidence set as it is, also where the set is unbounded
    (the denominator not significantly nonzero): there it is about two rays or the whole line,
    which :func:`ratio_interval` reports as (-inf, inf); here the values between the rays, which
    the data do reject, stay rejected. The quantile's df moves with theta, so the set need not
    be an interval: test the values you need. ``parts`` as in :func:`ratio_interval`.
    """
    terms = [(c - theta * e) ** 2 * v for c, e, v, _ in parts]
    q = float(welch_quantile(terms, [d for *_, d in parts], confidence)) ** 2
    return bool((num - theta * den) ** 2 <= q * float(sum(terms)))


#: Most fixed-point steps per bound of :func:`ratio_interval` (it converges in a handful).
FIELLER_ITERATIONS = 50


#: Points per segment at which :func:`crossing_interval` tests the interpolated advantage.
CROSSING_GRID = 65


def crossing_interval(
    logx: np.ndarray,
    est: np.ndarray,
    coefs: np.ndarray,
    var: np.ndarray,
    df: np.ndarray,
    confidence: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The set of x where a piecewise-linear function of independent means is not
    significantly nonzero: the interval of its zero crossing, by inverting the t test.

    Args:
        logx: increasing log2 x, shape (k,).
        est: the function at each x, shape (..., k): ``est_j = coefs[j] . means``.
        coefs: (k, m): how each x's value combines the m independent means.
        var: (..., m) variances of the means (seed variance / n).
        df: (..., m) their degrees of freedom (n - 1).
        confidence: two-sided level.

    Between x_j and x_(j+1) the function is interpolated linearly in log2 x, its variance is
    sum_i ((1 - theta) coefs[j, i] + theta coefs[j+1, i])^2 var_i, with Welch-Satterthwaite df.

    Returns:
        (low, high, open_low, open_high): the hull of the set in log2 x (NaN where the set is
        empty: the sign is significant everywhere), and whether it reaches the first or the last
        x (the interval is then open on that side: the data do not bound it).
    """
    theta = np.linspace(0.0, 1.0, CROSSING_GRID)[:, None]  # (G, 1)
    c = (1.0 - theta) * coefs[:-1, None, :] + theta * coefs[1:, None, :]  # (k-1, G, m)
    e0, e1 = est[..., :-1, None], est[..., 1:, None]  # (..., k-1, 1)
    value = e0 + theta[:, 0] * (e1 - e0)  # (..., k-1, G)
    weights = c * c * var[..., None, None, :]  # (..., k-1, G, m)
    dfs = np.broadcast_to(df[..., None, None, :], weights.shape)
    total = weights.sum(axis=-1)
    t = welch_quantile(list(np.moveaxis(weights, -1, 0)), list(np.moveaxis(dfs, -1, 0)), confidence)
    with np.errstate(invalid="ignore"):
        inside = value * value <= t * t * total  # (..., k-1, G)
    lx = logx[:-1, None] + theta[:, 0] * (logx[1:, None] - logx[:-1, None])  # (k-1, G)
    lx = np.broadcast_to(lx, inside.shape)
    low = np.where(inside, lx, np.inf).min(axis=(-2, -1))
    high = np.where(inside, lx, -np.inf).max(axis=(-2, -1))
    empty = ~inside.any(axis=(-2, -1))
    low, high = np.where(empty, np.nan, low), np.where(empty, np.nan, high)
    return low, high, inside[..., 0, 0], inside[..., -1, -1]


def two_arm_coefs(k: int) -> np.ndarray:
    """(k, 2k) coefficients of a difference of two arms measured at the same k x values (means
    ordered a's then b's); signs do not matter for the variance."""
    eye = np.eye(k)
    return np.concatenate([eye, -eye], axis=1)
