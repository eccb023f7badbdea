"""Statistics of the analysis: numbers (or frames of per-seed values) in, numbers out.

Nothing here reads the store, DuckDB or a grid, or knows the questions of ``harness analyze``
(an import-linter contract in ``pyproject.toml`` keeps it so); callers hand in the per-seed
values :mod:`harness.analysis.rows` prepared. The names below are the public ones, as
``scipy.stats`` exports its own; the modules behind them may move::

    from harness.analysis import stats
    lo, hi = stats.mean_interval(values, 0.95)

Modules: ``intervals`` (every interval reported, with its method), ``corrections`` (multiple
comparisons), ``significance`` (tests of b against a per cell), ``power`` (seeds needed,
detectable differences), ``baseline_gap`` (gap closure), ``crossing`` (the x at which b starts to
beat a), ``power_law`` (speed-up as a budget ratio), ``optimum_fit`` (the fitted optimum of a tuned
axis), ``critical_batch`` (steps to target and their checks), ``batch_fit`` (the critical batch
size from S(B) = a + b/B), ``fit_check`` (lack of fit, window checks, the approximately-best
band), ``welch_rejection`` (Welch's actual power at few seeds), ``to_target`` (tokens- and
time-to-target from a curve), ``performance_profiles`` (AlgoPerf), ``two_arm`` (the one two-arm
comparison of the bench and ``analyze compare``), ``banerjee`` (intervals
and tests at unequal seed counts), ``pooled`` (seed variance pooled over cells), ``bootstrap``,
``cells`` (grouping by key columns) and ``frame`` (the column names read).

Importing this package is cheap: a name's module (and scipy) is imported when the name is first
used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

#: Public name -> the module (under this package) defining it.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("N_BOOT", "CONFIDENCE"), "defaults"),
    **dict.fromkeys(("resampled_means",), "bootstrap"),
    **dict.fromkeys(("groups", "iter_cells", "with_keys"), "cells"),
    **dict.fromkeys(("CORRECTIONS", "Adjust", "holm", "bh", "reading_levels"), "corrections"),
    **dict.fromkeys(
        (
            "TwoArmTest",
            "TwoArmResult",
            "TwoArmReading",
            "two_arm_test",
            "correct_family",
            "two_arms",
        ),
        "two_arm",
    ),
    **dict.fromkeys(
        (
            "SequentialDesign",
            "SequentialCell",
            "StageResult",
            "OBRIEN_FLEMING",
            "POCOCK",
            "SPENDING",
            "DEFAULT_SPENDING",
            "sequential_design",
            "sequential_cell",
            "sequential_family",
        ),
        "sequential",
    ),
    **dict.fromkeys(("pool", "pooled_by", "mean_intervals"), "pooled"),
    **dict.fromkeys(
        (
            "Reading",
            "reading",
            "steps_check",
            "steps_to",
            "steps_table",
            "curves_by_run",
            "default_target",
        ),
        "critical_batch",
    ),
    **dict.fromkeys(("OVERHEAD", "NEAR", "BatchFit", "fit_critical_batch"), "batch_fit"),
    **dict.fromkeys(
        ("OK", "LackOfFit", "lack_of_fit", "intervals_disjoint", "Band", "approximately_best"),
        "fit_check",
    ),
    **dict.fromkeys(("welch_power",), "welch_rejection"),
    **dict.fromkeys(("Crossing", "find_crossing", "advantage", "crossover"), "crossing"),
    **dict.fromkeys(("VALUE", "SELECT", "ARM", "METHOD", "std_or_nan"), "frame"),
    **dict.fromkeys(
        ("closure", "closure_interval", "gap_closure", "gap_t", "small_gap"), "baseline_gap"
    ),
    **dict.fromkeys(
        (
            "METHODS",
            "ONE_SEED",
            "ZERO_VARIANCE",
            "UNEQUAL_N",
            "t_quantile",
            "satterthwaite",
            "welch_quantile",
            "welch_p_value",
            "mean_interval",
            "linear_interval",
            "welch_interval",
            "fieller",
            "ratio_interval",
            "crossing_interval",
            "two_arm_coefs",
        ),
        "intervals",
    ),
    **dict.fromkeys(("T_QUANTILES", "tabled_t_quantile"), "t_table"),
    **dict.fromkeys(("Fit", "optimum_table", "fitted_seeds"), "optimum_fit"),
    **dict.fromkeys(("TAU_MAX", "arm_times", "ratios", "rho", "score"), "performance_profiles"),
    **dict.fromkeys(("seeds_needed", "detectable", "power_table", "variance_range"), "power"),
    **dict.fromkeys(("PowerLaw", "fit_power_law", "speedup", "budget_ratio_interval"), "power_law"),
    **dict.fromkeys(
        (
            "ALTERNATIVES",
            "TESTS",
            "SignificanceResult",
            "SignificanceTest",
            "paper_test",
            "compare",
        ),
        "significance",
    ),
    **dict.fromkeys(
        ("TOKENS_TO_TARGET", "TIME_TO_TARGET", "CENSORED", "MEASURES", "reach"), "to_target"
    ),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """The public ``name``, imported from its module on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # the names as mypy and editors see them
    from harness.analysis.stats.baseline_gap import (  # noqa: F401
        closure,
        closure_interval,
        gap_closure,
        gap_t,
        small_gap,
    )
    from harness.analysis.stats.batch_fit import NEAR, OVERHEAD, BatchFit, fit_critical_batch  # noqa: F401
    from harness.analysis.stats.bootstrap import resampled_means  # noqa: F401
    from harness.analysis.stats.cells import groups, iter_cells, with_keys  # noqa: F401
    from harness.analysis.stats.corrections import (  # noqa: F401
        CORRECTIONS,
        Adjust,
        bh,
        holm,
        reading_levels,
    )
    from harness.analysis.stats.critical_batch import (  # noqa: F401
        Reading,
        curves_by_run,
        default_target,
        reading,
        steps_check,
        steps_table,
        steps_to,
    )
    from harness.analysis.stats.crossing import Crossing, advantage, crossover, find_crossing  # noqa: F401
    from harness.analysis.stats.defaults import CONFIDENCE, N_BOOT  # noqa: F401
    from harness.analysis.stats.fit_check import (  # noqa: F401
        OK,
        Band,
        LackOfFit,
        approximately_best,
        intervals_disjoint,
        lack_of_fit,
    )
    from harness.analysis.stats.frame import ARM, METHOD, SELECT, VALUE, std_or_nan  # noqa: F401
    from harness.analysis.stats.intervals import (  # noqa: F401
        METHODS,
        ONE_SEED,
        UNEQUAL_N,
        ZERO_VARIANCE,
        crossing_interval,
        fieller,
        linear_interval,
        mean_interval,
        ratio_interval,
        satterthwaite,
        t_quantile,
        two_arm_coefs,
        welch_interval,
        welch_p_value,
        welch_quantile,
    )
    from harness.analysis.stats.optimum_fit import Fit, fitted_seeds, optimum_table  # noqa: F401
    from harness.analysis.stats.performance_profiles import TAU_MAX, arm_times, ratios, rho, score  # noqa: F401
    from harness.analysis.stats.pooled import mean_intervals, pool, pooled_by  # noqa: F401
    from harness.analysis.stats.power import detectable, power_table, seeds_needed, variance_range  # noqa: F401
    from harness.analysis.stats.power_law import (  # noqa: F401
        PowerLaw,
        budget_ratio_interval,
        fit_power_law,
        speedup,
    )
    from harness.analysis.stats.sequential import (  # noqa: F401
        DEFAULT_SPENDING,
        OBRIEN_FLEMING,
        POCOCK,
        SPENDING,
        SequentialCell,
        SequentialDesign,
        StageResult,
        sequential_cell,
        sequential_design,
        sequential_family,
    )
    from harness.analysis.stats.significance import (  # noqa: F401
        ALTERNATIVES,
        TESTS,
        SignificanceResult,
        SignificanceTest,
        compare,
        paper_test,
    )
    from harness.analysis.stats.t_table import T_QUANTILES, tabled_t_quantile  # noqa: F401
    from harness.analysis.stats.to_target import (  # noqa: F401
        CENSORED,
        MEASURES,
        TIME_TO_TARGET,
        TOKENS_TO_TARGET,
        reach,
    )
    from harness.analysis.stats.two_arm import (  # noqa: F401
        TwoArmReading,
        TwoArmResult,
        TwoArmTest,
        correct_family,
        two_arm_test,
        two_arms,
    )
    from harness.analysis.stats.welch_rejection import welch_power  # noqa: F401
