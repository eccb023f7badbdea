"""The columns the statistics read from their input frames, and the seed spread they share.

The statistics take DataFrames of per-seed values (one row per run) prepared by
:mod:`harness.analysis.rows`; these are the names of the columns they read.
"""

from __future__ import annotations

import numpy as np

#: The column holding the value analysed (the metric, or the worst value for diverged runs).
VALUE = "value"
#: The column holding the value that selects configurations, when another metric does.
SELECT = "select_value"
#: The column holding each row's arm label (``--a``/``--b``, a baseline, a reference).
ARM = "arm"
#: Column holding each row's method label (the lines of a figure, the arms of a profile).
METHOD = "method"


def std_or_nan(values: np.ndarray) -> float:
    """Corrected standard deviation (ddof 1); NaN for one value or a non-finite one."""
    v = np.asarray(values, dtype=float)
    return float(np.std(v, ddof=1)) if v.size > 1 and np.isfinite(v).all() else float("nan")
