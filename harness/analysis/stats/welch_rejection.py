"""The power of Welch's t test from its actual distribution, not the noncentral t shortcut.

Welch's test rejects when |mean_b - mean_a| > t_(1 - alpha/2)(df_hat) * se_hat, where se_hat and
the Welch-Satterthwaite df_hat are computed from the two sample variances. The usual power
formula (noncentral t with the df and se of the true variances) ignores that both are random;
at 2-3 seeds per arm it overstates the power (0.46 where the test's rejection rate is 0.37).

Given the sample variances, the difference of means is normal, N(delta, sigma_a^2 / n_a +
sigma_b^2 / n_b), and independent of them (normal seed noise). So the power is an expectation
over the two scaled chi-square variances of a normal probability; it is computed here on a
product grid of :data:`NODES` quantile midpoints of each chi-square (error below 0.005 against
simulation, ``tests/analysis/test_guardrails.py``). Beyond :data:`EXACT_UP_TO` seeds per arm the
noncentral t is accurate and is used instead (:mod:`harness.analysis.stats.power`). With
unequal seed counts the test is Banerjee's (:mod:`harness.analysis.stats.banerjee`), whose
critical value sqrt(t_a^2 w_a + t_b^2 w_b) replaces Welch's on the same grid.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

#: Quantile midpoints per chi-square in the quadrature.
NODES = 64
#: Largest seed count per arm computed by the quadrature.
EXACT_UP_TO = 30


def welch_power(
    delta: np.ndarray | float,
    var_a: np.ndarray | float,
    n_a: np.ndarray | float,
    var_b: np.ndarray | float,
    n_b: np.ndarray | float,
    *,
    alpha: float,
    two_sided: bool,
) -> np.ndarray:
    """Rejection probability of Welch's t test (one-sided: H1 in the direction of ``delta`` >
    0) at true difference ``delta``, true seed variances ``var_a``, ``var_b`` and seed counts
    ``n_a``, ``n_b`` (>= 2). Arrays broadcast."""
    d, va, na, vb, nb = np.broadcast_arrays(
        *(np.asarray(v, float) for v in (delta, var_a, n_a, var_b, n_b))
    )
    u = (np.arange(NODES) + 0.5) / NODES
    fa, fb = na[..., None, None] - 1, nb[..., None, None] - 1  # df of each sample variance
    # (..., K, 1) and (..., 1, K): the variances of the means on each chi-square's quantile grid
    wa = va[..., None, None] * stats.chi2.ppf(u, na[..., None] - 1)[..., :, None] / fa / (fa + 1)
    wb = vb[..., None, None] * stats.chi2.ppf(u, nb[..., None] - 1)[..., None, :] / fb / (fb + 1)
    se_hat = np.sqrt(wa + wb)
    df_hat = (wa + wb) ** 2 / (wa**2 / fa + wb**2 / fb)
    level = 1 - (alpha / 2 if two_sided else alpha)
    crit = stats.t.ppf(level, df_hat) * se_hat
    # unequal seed counts: Banerjee's test (harness.analysis.stats.banerjee), each arm's own t
    ta, tb = stats.t.ppf(level, fa), stats.t.ppf(level, fb)
    crit = np.where(fa == fb, crit, np.sqrt(ta * ta * wa + tb * tb * wb))
    sd = np.sqrt(va / na + vb / nb)[..., None, None]
    dd = d[..., None, None]
    p = stats.norm.sf((crit - dd) / sd)
    if two_sided:
        p = p + stats.norm.cdf((-crit - dd) / sd)
    return np.asarray(p.mean(axis=(-2, -1)), float)
