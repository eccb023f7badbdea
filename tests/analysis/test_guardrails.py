"""Guardrails of the statistics (issue 30, item 4): each test once in its correction family."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from harness.analysis.stats.baseline_gap import gap_closure
from harness.analysis.stats.corrections import holm
from harness.analysis.stats.frame import ARM, VALUE


def _seeds(values: dict[str, list[float]]) -> pd.DataFrame:
    rows = [{ARM: a, "seed": s, VALUE: v} for a, vs in values.items() for s, v in enumerate(vs)]
    return pd.DataFrame(rows)


def test_baseline_vs_reference_is_one_test_of_the_gap_family():
    """It appears on two rows (the baseline's vs_reference, the reference's vs_baseline) and
    used to be counted twice in the Holm family."""
    vals = {
        "sgd": [50.0, 52.0, 54.0],
        "adam": [20.0, 21.0, 22.0],
        "x": [26.0, 27.0, 28.0],
        "rms": [19.0, 21.5, 23.0],
    }
    out = gap_closure(_seeds(vals), [], "sgd", "adam")
    assert out.attrs["n_tests"] == 5
    out = out.set_index(ARM)
    pairs = [("adam", "sgd"), ("x", "sgd"), ("x", "adam"), ("rms", "sgd"), ("rms", "adam")]
    p = [stats.ttest_ind(vals[a], vals[b], equal_var=False).pvalue for a, b in pairs]
    adj = dict(zip(pairs, holm(np.array(p)), strict=True))
    assert out.loc["sgd", "p_reference"] == pytest.approx(adj[("adam", "sgd")])
    assert out.loc["adam", "p_baseline"] == pytest.approx(adj[("adam", "sgd")])
    assert out.loc["x", "p_baseline"] == pytest.approx(adj[("x", "sgd")])
    assert out.loc["rms", "p_reference"] == pytest.approx(adj[("rms", "adam")])


def test_identical_seeds_give_no_interval_no_test_and_a_note():
    """Identical seeds used to give a zero-width interval, p = 0 and 'significant'."""
    from harness.analysis.stats.intervals import ZERO_VARIANCE
    from harness.analysis.stats.significance import compare

    vals = {"a": [5.0, 5.0, 5.0], "b": [4.0, 4.0, 4.0], "x": [4.5, 4.5, 4.5]}
    row = compare(_seeds(vals), [], "a", "b").iloc[0]
    assert np.isnan(row["ci_low"]) and np.isnan(row["p"]) and row["significant"] == "n/a"
    assert row["note"] == ZERO_VARIANCE
    out = gap_closure(_seeds(vals), [], "a", "b").set_index(ARM)
    assert out.loc["x", "closure_pct"] == pytest.approx(50.0)
    assert np.isnan(out.loc["x", "ci_low_pct"]) and out.loc["x", "note"] == ZERO_VARIANCE
    assert (out[["vs_baseline", "vs_reference"]] == "-").all().all()
    # one noisy arm is enough for Welch: the test is made
    noisy = compare(_seeds({"a": [5.0, 5.0, 5.0], "b": [3.9, 4.0, 4.1]}), [], "a", "b").iloc[0]
    assert noisy["p"] < 0.05 and noisy["note"] == ""
