"""The two-sided Student t quantiles at the default confidence for 1 to 64 degrees of
freedom, held as the numbers :func:`~harness.analysis.stats.intervals.t_quantile` computes
(``tests/analysis/test_t_table.py`` holds them equal): every tuned table (``analyze best``,
the intervals of each configuration's seeds) needs only these, and importing ``scipy.stats``
costs about a second of CPU, more than the rest of ``analyze best`` over 100,000 runs. Other
confidences and degrees of freedom are computed by scipy, as before.
"""

from __future__ import annotations

import numpy as np

from harness.analysis.stats.defaults import CONFIDENCE

T_QUANTILES: tuple[float, ...] = (
    12.706204736174694,
    4.302652729749462,
    3.1824463052837078,
    2.7764451051977934,
    2.5705818356363146,
    2.4469118511449786,
    2.364624251592784,
    2.306004135204166,
    2.262157162798205,
    2.228138851986274,
    2.200985160091639,
    2.1788128296672284,
    2.1603686564627913,
    2.144786687917804,
    2.131449545559776,
    2.1199052992212546,
    2.1098155778333156,
    2.1009220402410382,
    2.0930240544083087,
    2.085963447265864,
    2.0796138447276795,
    2.0738730679040254,
    2.0686576104190486,
    2.0638985616280245,
    2.0595385527532972,
    2.0555294386428735,
    2.0518305164802846,
    2.0484071417952454,
    2.045229642132703,
    2.0422724563012378,
    2.039513446396408,
    2.0369333434601016,
    2.0345152974493383,
    2.0322445093177186,
    2.030107928250343,
    2.0280940009804502,
    2.0261924630291093,
    2.0243941639119694,
    2.022690920036761,
    2.021075390306273,
    2.019540970441376,
    2.0180817028184443,
    2.016692199227824,
    2.0153675744437636,
    2.014103388880846,
    2.012895598919429,
    2.0117405137297655,
    2.010634757624232,
    2.0095752371292392,
    2.008559112100761,
    2.007583770315836,
    2.006646805061688,
    2.0057459953178687,
    2.0048792881880564,
    2.0040447832891455,
    2.003240718847872,
    2.002465459291007,
    2.0017174841452356,
    2.000995378088267,
    2.0002978220142604,
    1.999623584994939,
    1.9989715170333788,
    1.998340542520741,
    1.997729654317693,
)
"""``t_quantile(CONFIDENCE, df)`` for df = 1, 2, ... (index df - 1)."""


def tabled_t_quantile(confidence: float, df: np.ndarray | float) -> np.ndarray:
    """:func:`~harness.analysis.stats.intervals.t_quantile`, the same numbers, read from
    :data:`T_QUANTILES` where every df is a whole number it holds (or not > 0: NaN), else
    computed (scipy imported then)."""
    df = np.asarray(df, float)
    table = np.asarray((np.nan, *T_QUANTILES))
    whole = (df == np.floor(df)) & (df <= len(T_QUANTILES))
    if confidence != CONFIDENCE or not bool(np.all(whole | ~(df > 0))):
        from harness.analysis.stats.intervals import t_quantile

        return t_quantile(confidence, df)
    index = np.where(df > 0, df, 0).astype(int)  # NaN and df <= 0: index 0, NaN
    return np.asarray(table[index], dtype=float)
