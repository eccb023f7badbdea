"""The defaults and choices of the analysis options, in one place and cheap to import (no
scipy): ``harness analyze --help`` is built from them without loading a statistic.

Each choice is a ``Literal`` (what mypy checks) and the tuple of its values (what the CLI
offers); the modules implementing them check that they offer exactly these
(``tests/analysis/test_layout.py``).
"""

from __future__ import annotations

from typing import Literal, get_args

CONFIDENCE = 0.95
"""Two-sided confidence level of intervals."""
N_BOOT = 2000
"""Bootstrap resamples."""
ALPHA = 0.05
"""Significance level of tests."""
POWER = 0.8
"""Wanted probability of detecting a difference (``analyze power``)."""
TAU_MAX = 4.0
"""Largest ratio to the best arm a performance profile's score integrates over."""

Alternative = Literal["less", "greater", "two-sided"]
"""H1 about arm b against arm a."""
ALTERNATIVES: tuple[Alternative, ...] = get_args(Alternative)

TestName = Literal["auto", "paper", "welch", "student", "paired", "mannwhitney"]
"""A significance test (:data:`harness.analysis.stats.significance.TESTS`)."""
TEST_NAMES: tuple[TestName, ...] = get_args(TestName)

PowerTest = Literal["welch", "paper"]
"""A test with a power formula (:mod:`harness.analysis.stats.power`)."""
POWER_TESTS: tuple[PowerTest, ...] = get_args(PowerTest)

Correction = Literal["none", "holm", "bh"]
"""A multiple-comparison correction (:data:`harness.analysis.stats.corrections.CORRECTIONS`)."""
CORRECTION_NAMES: tuple[Correction, ...] = get_args(Correction)

TunedMode = Literal["grid", "fit"]
"""Each arm's value: at its best grid point, or at its fitted optimum (``--tuned``)."""
TUNED_MODES: tuple[TunedMode, ...] = get_args(TunedMode)

Measure = Literal["tokens", "time"]
"""Tokens- or (wall-clock) time-to-target (:data:`harness.analysis.stats.to_target.MEASURES`)."""
MEASURE_NAMES: tuple[Measure, ...] = get_args(Measure)

SPENDING_NAMES = ("obrien-fleming", "pocock")
"""How sequential confirmation stages spend alpha
(:data:`harness.analysis.stats.sequential.SPENDING`)."""
DEFAULT_SPENDING = "obrien-fleming"
"""The spending of a protocol (or ``compare --stages``) that names none."""
