"""The bench's verdict: per cell, the candidate against each baseline on the confirmation seeds.

For each cell (batch size x budget) and baseline:

- **not tuned** when either arm's selected lr still sits on an edge of the lrs it tried once
  extension stopped (a bound or the rounds reached), or its selected configuration diverged: no
  number is given for an arm that was not tuned;
- **no verdict** with fewer than 2 confirmation seeds on either side (one seed has no spread),
  or diverged confirmation seeds on both sides;
- **worse** (or **better**) without a number when only the candidate's (or only the baseline's)
  selected configuration diverged on a confirmation seed: a run that fails counts as failed, as
  AlgoPerf counts a run that never reaches its target (the reason says on how many seeds);
- else the final-loss difference candidate - baseline with Welch's interval at 1 - alpha, and
  Welch's two-sided test (Banerjee's interval and test where the seed counts differ, as in
  ``analyze compare``), its p-value Holm-corrected over every cell and baseline of the bench:
  **better** (lower loss, corrected p < alpha), **worse**, or **no evidence**. The power line
  gives the difference the seeds detect with the protocol's power at Holm's strictest level
  (alpha / number of tests), from the seeds' spread.

With at least three token budgets, a data-efficiency speed-up per batch size and baseline
(:func:`harness.analysis.stats.speedup`: the baseline's end-of-run L(D) = E + A D^-alpha,
the tokens it needs to reach the candidate's loss at the largest budget divided by the tokens
the candidate used, with its delta-method interval), read as better (interval above 1), worse
(below 1) or no evidence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from harness.bench.derive import Derived
from harness.bench.results import LR_EDGE, VALUE, Rows, load_rows, selection
from harness.metrics.catalogue import Goal

Reading = Literal["better", "worse", "no evidence", "not tuned", "no verdict", "pending"]
"""What one comparison says."""


@dataclass(frozen=True, slots=True)
class Comparison:
    """The candidate against one baseline in one cell."""

    cell: Mapping[str, Any]
    """Cell axis -> value."""
    baseline: str
    """The baseline's label."""
    reading: Reading
    """The verdict (module docstring)."""
    why: str = ""
    """The reason for a reading without a number."""
    mean_candidate: float = math.nan
    """Mean final loss of the candidate over its confirmation seeds."""
    mean_baseline: float = math.nan
    """The same for the baseline."""
    n_candidate: int = 0
    """Confirmation seeds of the candidate."""
    n_baseline: int = 0
    """Confirmation seeds of the baseline."""
    difference: float = math.nan
    """mean_candidate - mean_baseline (negative: the candidate's loss is lower)."""
    ci_low: float = math.nan
    """Welch's interval of the difference at 1 - alpha (Banerjee's where the seed counts differ)."""
    ci_high: float = math.nan
    """Its upper end."""
    p: float = math.nan
    """Welch's two-sided p-value (Banerjee's where the seed counts differ)."""
    p_adjusted: float = math.nan
    """Holm-corrected over every tested comparison."""
    detectable: float = math.nan
    """Difference the seeds detect with the protocol's power (the power line)."""


@dataclass(frozen=True, slots=True)
class Speedup:
    """The data-efficiency speed-up of the candidate over one baseline at one batch size."""

    cell: Mapping[str, Any]
    """The non-budget cell axes (batch size)."""
    baseline: str
    """The baseline."""
    ratio: float
    """Tokens the baseline needs to reach the candidate's final loss / tokens the candidate
    used (> 1: the candidate is more data-efficient)."""
    ci_low: float
    """Delta-method interval of the ratio."""
    ci_high: float
    """Its upper end."""
    reading: Reading
    """better, worse or no evidence (the interval covers 1); no verdict when the fit's model
    check fails."""
    note: str
    """The fit's own notes (a failed fit, an unreached loss)."""
    fit_check: str = ""
    """The fit's model check (:mod:`harness.analysis.stats.fit_check`): ``ok``, or what failed."""


@dataclass(frozen=True, slots=True)
class ArmCell:
    """One arm's tuning in one cell."""

    label: str
    """The arm."""
    cell: Mapping[str, Any]
    """Cell axis -> value."""
    best: Mapping[str, float]
    """The selected configuration (tuned key -> value)."""
    tuning_mean: float
    """Its mean loss over the tuning seeds."""
    configs: int
    """Configurations tried (extension included)."""
    runs: int
    """Tuning runs (extension included)."""
    lr_edge: str
    """``smallest``/``largest`` when the best lr sits on that edge; empty when inside."""
    lr_curve: tuple[tuple[float, float], ...]
    """(lr, mean tuning loss) along the line through the best: the lr sensitivity."""


@dataclass(frozen=True, slots=True)
class ArmTotal:
    """What one arm spent."""

    label: str
    """The arm."""
    candidate: bool
    """Whether it is the candidate."""
    budget: int
    """Configurations per cell before extension (the protocol's budget, the same for all)."""
    runs: int
    """Runs trained (tuning, extension and confirmation)."""
    tokens: float
    """Training tokens of those runs."""
    extension_runs: int
    """Of the runs, those extension added."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The bench's answer."""

    protocol: str
    """The protocol file."""
    grid: str
    """The grid its runs are in."""
    candidate: str
    """The candidate's label."""
    baselines: tuple[str, ...]
    """The baselines' labels."""
    metric: str
    """The metric compared (at the end of a completed decay)."""
    alpha: float
    """The test's level."""
    power: float
    """The power line's probability."""
    comparisons: tuple[Comparison, ...]
    """Per cell and baseline."""
    speedups: tuple[Speedup, ...]
    """Per batch size and baseline (with >= 3 token budgets)."""
    arms: tuple[ArmCell, ...]
    """Per arm and cell: the selection and the lr sensitivity."""
    totals: tuple[ArmTotal, ...]
    """Per arm: the compute spent."""
    tune_seeds: tuple[int, ...]
    """Seeds configurations were selected on."""
    confirm_seeds: tuple[int, ...]
    """Seeds the verdict is read on."""
    untested: tuple[str, ...] = field(default=())
    """What the bench did not test."""

    @property
    def summary(self) -> str:
        """One line: how many comparisons read each way."""
        counts: dict[str, int] = {}
        for c in self.comparisons:
            counts[c.reading] = counts.get(c.reading, 0) + 1
        return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no results yet"


def judge(derived: Derived, root: Path) -> Verdict:
    """The verdict of the bench of ``derived`` from the results under ``root``."""
    return verdict_of(
        derived, load_rows(root, derived.protocol.name, [a.label for a in derived.arms])
    )


def verdict_of(derived: Derived, rows: Rows | None) -> Verdict:
    """The verdict of the bench of ``derived`` from its prepared rows (None: no result yet)."""
    p = derived.protocol
    axes = [a for a, _ in p.cells]
    arms: list[ArmCell] = []
    comparisons: list[Comparison] = []
    speedups: list[Speedup] = []
    totals: list[ArmTotal] = []
    metric = "val_loss"
    if rows is not None:
        metric = rows.metric
        arms = _arm_cells(rows, axes)
        comparisons = _compare(rows, derived, arms, axes)
        speedups = _speedups(rows, derived, axes)
        totals = _totals(rows, derived)
    return Verdict(
        str(p.path),
        p.name,
        derived.candidate.label,
        tuple(b.label for b in derived.baselines),
        metric,
        p.verdict.alpha,
        p.verdict.power,
        tuple(comparisons),
        tuple(speedups),
        tuple(arms),
        tuple(totals),
        p.tune_seeds,
        p.confirm_seeds,
        _untested(derived),
    )


def _cell_of(row: pd.Series, axes: Sequence[str]) -> dict[str, Any]:
    return {a: _plain(row[a]) for a in axes}


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _arm_cells(rows: Rows, axes: Sequence[str]) -> list[ArmCell]:
    tuned = selection(rows)
    out = []
    for _, best in tuned.best.iterrows():
        curve = tuned.line(best, "lr")
        out.append(
            ArmCell(
                str(best["label"]),
                _cell_of(best, axes),
                {k: float(best[k]) for k in rows.over if pd.notna(best[k])},
                float(best["mean"]),
                int(best["configs"]),
                int(best["runs"]),
                str(best.get(LR_EDGE, "")),
                tuple(
                    (float(a), float(b)) for a, b in zip(curve["lr"], curve["mean"], strict=True)
                ),
            )
        )
    return out


def _arm_values(rows: Rows, arm: ArmCell) -> np.ndarray:
    """The confirmation values of ``arm``'s selected configuration in its cell (confirmation
    runs of a configuration selected earlier, before more extension moved the best, are not
    the arm's: they are left out)."""
    df = rows.confirm[rows.confirm["label"] == arm.label]
    for k, v in arm.cell.items():
        df = df[df[k] == v]
    for k, x in arm.best.items():
        df = df[np.isclose(df[k].astype(float), x, rtol=1e-9, atol=0.0)]
    return df[VALUE].to_numpy(dtype=float)


def _diverged(label: str, v: np.ndarray) -> str:
    return f"{label} diverged on {int((~np.isfinite(v)).sum())} of {v.size} confirmation seeds"


def _not_tuned(arm: ArmCell | None, budget: int) -> str:
    if arm is None:
        return "pending"
    if arm.configs < budget:
        return f"only {arm.configs} of {arm.label}'s {budget} configurations have a result"
    if not math.isfinite(arm.tuning_mean):
        return f"{arm.label}'s selected configuration diverged"
    if arm.lr_edge:
        lr = arm.best.get("lr", math.nan)
        return f"{arm.label}'s best lr {lr:g} is the {arm.lr_edge} tried (extension stopped)"
    return ""


def _compare(
    rows: Rows, derived: Derived, arms: list[ArmCell], axes: Sequence[str]
) -> list[Comparison]:
    p = derived.protocol
    by_key = {(a.label, tuple(a.cell.items())): a for a in arms}
    cells = sorted({tuple(a.cell.items()) for a in arms}, key=str)
    raw: list[dict[str, Any]] = []
    cand = derived.candidate.label
    for key in cells:
        cell = dict(key)
        for b in derived.baselines:
            raw.append(
                _one(rows, cell, cand, b.label, by_key, p.verdict.alpha, derived.candidate.configs)
            )
    tested = [i for i, r in enumerate(raw) if "p" in r]
    m = len(tested)
    adjusted = _holm(np.array([raw[i]["p"] for i in tested])) if m else np.array([])
    out = []
    for i, r in enumerate(raw):
        if i in tested:
            r["p_adjusted"] = float(adjusted[tested.index(i)])
            r["reading"] = _read(r["difference"], r["p_adjusted"], p.verdict.alpha, rows.goal)
            r["detectable"] = _detectable(r["_a"], r["_b"], p.verdict.alpha / m, p.verdict.power)
        r.pop("_a", None)
        r.pop("_b", None)
        out.append(Comparison(**r))
    return out


def _one(
    rows: Rows,
    cell: dict[str, Any],
    cand: str,
    base: str,
    by_key: Mapping[Any, ArmCell],
    alpha: float,
    budget: int,
) -> dict[str, Any]:
    """One comparison's numbers (without the corrected reading)."""
    key = tuple(cell.items())
    head: dict[str, Any] = {"cell": cell, "baseline": base}
    for label in (cand, base):
        why = _not_tuned(by_key.get((label, key)), budget)
        if why == "pending":
            return {**head, "reading": "pending", "why": f"{label} has no tuning result yet"}
        if why:
            return {**head, "reading": "not tuned", "why": why}
    a, b = _arm_values(rows, by_key[(base, key)]), _arm_values(rows, by_key[(cand, key)])
    nums = {
        "mean_candidate": _mean(b),
        "mean_baseline": _mean(a),
        "n_candidate": int(b.size),
        "n_baseline": int(a.size),
    }
    if a.size == 0 or b.size == 0:
        return {**head, **nums, "reading": "pending", "why": "confirmation runs not done"}
    if min(a.size, b.size) < 2:
        return {**head, **nums, "reading": "no verdict", "why": "one confirmation seed"}
    fine_a, fine_b = bool(np.isfinite(a).all()), bool(np.isfinite(b).all())
    if not (fine_a or fine_b):
        why = f"{_diverged(cand, b)}, {_diverged(base, a)}"
        return {**head, **nums, "reading": "no verdict", "why": why}
    if not fine_b:  # a run that fails at its own selected configuration fails (AlgoPerf)
        return {**head, **nums, "reading": "worse", "why": _diverged(cand, b)}
    if not fine_a:
        return {**head, **nums, "reading": "better", "why": _diverged(base, a)}
    from harness.analysis.stats import TESTS, welch_interval

    lo, hi = welch_interval(a, b, 1 - alpha)
    diff = float(b.mean() - a.mean())
    if np.ptp(a) == 0 and np.ptp(b) == 0:  # no spread: a test has nothing to weigh
        pval = 1.0 if diff == 0 else 0.0
    else:
        pval = TESTS["welch"].run(a, b, "two-sided", alpha).p  # Banerjee's at unequal n
    return {
        **head,
        **nums,
        "reading": "no evidence",
        "difference": diff,
        "ci_low": lo,
        "ci_high": hi,
        "p": pval,
        "_a": a,
        "_b": b,
    }


def _mean(v: np.ndarray) -> float:
    return float(v.mean()) if v.size else math.nan


def _holm(p: np.ndarray) -> np.ndarray:
    from harness.analysis.stats import holm

    return holm(p)


def _read(diff: float, p_adj: float, alpha: float, goal: Goal) -> Reading:
    if not p_adj < alpha:
        return "no evidence"
    lower = diff < 0
    return "better" if lower == (goal == "min") else "worse"


def _detectable(a: np.ndarray, b: np.ndarray, alpha: float, power: float) -> float:
    from harness.analysis.stats import detectable

    va, vb = float(a.var(ddof=1)), float(b.var(ddof=1))
    if va + vb == 0:
        return 0.0
    return detectable(va, a.size, vb, b.size, alpha=alpha, two_sided=True, target=power)


def _speedups(rows: Rows, derived: Derived, axes: Sequence[str]) -> list[Speedup]:
    p = derived.protocol
    budgets = dict(p.cells).get("tokens", ())
    if len(budgets) < 3:
        return []
    from harness.analysis.stats import speedup

    by = [a for a in axes if a != "tokens"]
    cand = derived.candidate.label
    out = []
    for b in derived.baselines:
        seeds = rows.confirm[rows.confirm["label"].isin([cand, b.label])]
        seeds = seeds.assign(arm=seeds["label"])[[*by, "tokens", "arm", VALUE]]
        if seeds.empty:
            continue
        try:
            table = speedup(
                seeds, by, "tokens", cand, b.label, rows.goal, confidence=1 - p.verdict.alpha
            )
        except ValueError as e:  # too few budgets with results: said, not raised
            out.append(Speedup({}, b.label, math.nan, math.nan, math.nan, "no verdict", str(e)))
            continue
        for _, r in table.iterrows():
            lo, hi = float(r["ci_low"]), float(r["ci_high"])
            check = str(r.get("fit_check") or "")
            reading: Reading = "better" if lo > 1 else "worse" if hi < 1 else "no evidence"
            if _failed(check):
                reading = "no verdict"
            out.append(
                Speedup(
                    {k: _plain(r[k]) for k in by},
                    b.label,
                    float(r["ratio"]),
                    lo,
                    hi,
                    reading,
                    str(r["note"] or ""),
                    check,
                )
            )
    return out


CAVEATS = ("unchecked",)
"""Speed-up checks that are caveats, not failures: a check that could not be made (too few
budgets). An extrapolated baseline budget, which a speed-up above 1 at the largest budget always
is, is a note of the speed-up, never part of its ``fit_check``."""


def _failed(check: str) -> bool:
    """Whether a speed-up's model check failed (lack of fit, window-sensitive); a caveat
    (:data:`CAVEATS`, said in ``fit_check``) leaves the reading to the interval."""
    from harness.analysis.stats import OK

    parts = [c.strip() for c in check.split(";") if c.strip()]
    return any(c != OK and not c.startswith(CAVEATS) for c in parts)


def _totals(rows: Rows, derived: Derived) -> list[ArmTotal]:
    everything = pd.concat([rows.tuning, rows.confirm])
    out = []
    for arm in derived.arms:
        mine = everything[everything["label"] == arm.label]
        ext = (
            (mine["extend_round"].fillna(0).astype(float) > 0).to_numpy(bool)
            if "extend_round" in mine
            else np.zeros(0, bool)
        )
        out.append(
            ArmTotal(
                arm.label,
                arm.candidate,
                arm.configs,
                len(mine),
                float(mine["tokens"].sum()),
                int(np.sum(ext)),
            )
        )
    return out


def _untested(derived: Derived) -> tuple[str, ...]:
    p = derived.protocol
    cells = dict(p.cells)
    out = []
    for axis, values in cells.items():
        nums = [v for v in values if isinstance(v, int | float)]
        span = f"{min(nums):g}..{max(nums):g}" if nums else ", ".join(map(str, values))
        out.append(f"{axis} outside {span}")
    if "model" not in cells:
        out.append(f"models other than {p.base.get('model', 'the default')}")
    out.append(f"data other than {p.base.get('dataset', 'the default dataset')}")
    fixed = sorted({"schedule", "warmup_steps", "grad_clip"} & set(p.base))
    if fixed:
        out.append("other " + ", ".join(fixed) + " (held as the protocol sets them)")
    return tuple(out)
