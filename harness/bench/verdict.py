"""The bench's verdict: per cell, the candidate against each baseline on the confirmation seeds.

For each cell (batch size x budget) and baseline:

- **not tuned** when either arm's selected lr still sits on an edge of the lrs it tried once
  extension stopped (a bound or the rounds reached), or its selected configuration diverged: no
  number is given for an arm that was not tuned;
- else the candidate against the baseline on the confirmation seeds by the one two-arm
  comparison of the analysis (:mod:`harness.analysis.stats.two_arm`, the same as ``harness
  analyze compare``'s default): **paired by seed** where both arms ran the same seeds (the
  bench's design: batches and initialisation follow the seed, so the seed is a blocking
  factor), Welch's test otherwise (Banerjee's where the seed counts differ);
- **no verdict** with fewer than 2 confirmation seeds on either side, or zero spread
  (identical seeds: no noise to weigh a difference against);
- a **diverged** confirmation seed (on either side) is an outcome, not a loss: the arms'
  counts of diverged seeds are compared by Fisher's exact test inside the same Holm family
  (**worse**/**better** only where it is significant after the correction, else **no
  verdict**; the losses of such a cell are not tested, and the reason says on how many seeds
  each arm diverged). One diverged seed never decides a cell;
- the final-loss difference candidate - baseline, its p-value Holm-corrected over every cell
  and baseline of the bench: **better** (lower loss, corrected p < alpha), **worse**, or **no
  evidence**. Its interval is drawn at the level of its reading, the Holm step's
  1 - alpha / (m - r + 1) for the r-th smallest p (:func:`harness.analysis.stats.
  reading_levels`), so an interval excludes 0 exactly where the reading is better or worse.
  The power line gives the difference the comparison's own variance (paired: of the per-seed
  differences) detects with the protocol's power at Holm's strictest level (alpha / number
  of tests).

With at least three token budgets, a data-efficiency speed-up per batch size and baseline
(:func:`harness.analysis.stats.speedup`: the baseline's end-of-run L(D) = E + A D^-alpha,
the tokens it needs to reach the candidate's loss at the largest budget divided by the tokens
the candidate used, with its delta-method interval), read as better (interval above 1), worse
(below 1) or no evidence only where its model is checked (at least four budgets) and the
tokens the baseline needs lie within its budgets (an interpolated ratio); otherwise it reads
**unchecked**: the number and its interval, no reading, and ``why`` says which. A ratio above 1
is always extrapolated (the baseline would need more than its largest budget): under a power
law that drifts its interval does not cover at its level (:data:`EXTRAPOLATED_WHY`), so the
direction at the largest budget is left to that cell's comparison. The speed-up is not in the
Holm family of the cells: each is read at its own level alpha.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from harness.bench.derive import Derived
from harness.bench.results import LR_EDGE, VALUE, Rows, bench_run_ids, load_rows, selection
from harness.metrics.catalogue import Goal

if TYPE_CHECKING:
    from harness.analysis.stats import StageResult, TwoArmResult, TwoArmTest
    from harness.bench.protocol import Protocol

Reading = Literal[
    "better", "worse", "no evidence", "not tuned", "no verdict", "pending", "unchecked"
]
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
    """The interval of the difference at ``confidence``, the level of the reading (paired by
    seed, else Welch's, Banerjee's where the seed counts differ)."""
    ci_high: float = math.nan
    """Its upper end."""
    confidence: float = math.nan
    """The interval's two-sided level: 1 - the Holm step's level alpha / (m - r + 1) at which
    this comparison was tested (the interval excludes 0 exactly when it reads better/worse)."""
    method: str = ""
    """How it was tested: ``paired by seed``, ``welch``, ``banerjee``, or Fisher's exact test
    of the diverged seeds."""
    p: float = math.nan
    """The comparison's own two-sided p-value."""
    p_adjusted: float = math.nan
    """Holm-corrected over every tested comparison."""
    detectable: float = math.nan
    """Difference the first stage's seeds detect with the protocol's power (the power line)."""
    stage: int = 0
    """The stage of the sequential confirmation its reading stopped at (0-based; pending: the
    stage whose seeds it waits for); its cost is ``n_candidate + n_baseline`` confirmation
    runs."""


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
    """better, worse or no evidence (the interval covers 1) where the fit's model is checked
    (>= :data:`CHECKED_BUDGETS` budgets); unchecked (no reading) with fewer; no verdict when
    the check fails."""
    note: str
    """The fit's own notes (a failed fit, an unreached loss)."""
    fit_check: str = ""
    """The fit's model check (:mod:`harness.analysis.stats.fit_check`): ``ok``, or what failed."""
    why: str = ""
    """Why an ``unchecked`` speed-up has no reading."""


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
    power_line: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    """The difference the confirmation seeds detect with probability ``power`` at Holm's
    strictest level (alpha / tests), from the variance of the difference pooled over the tested
    cells (paired: of the per-seed differences), then at the ends of that variance's 90%
    chi-square range: (estimate, low, high)."""
    stages: tuple[int, ...] = ()
    """Seeds per arm at each stage of the sequential confirmation (one stage: no stages)."""
    spent: tuple[float, ...] = ()
    """Each stage's share of alpha."""

    @property
    def summary(self) -> str:
        """One line: how many comparisons read each way."""
        counts: dict[str, int] = {}
        for c in self.comparisons:
            counts[c.reading] = counts.get(c.reading, 0) + 1
        return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no results yet"


def judge(derived: Derived, root: Path, data_root: Path | None = None) -> Verdict:
    """The verdict of the bench of ``derived`` from the results under ``root``: on exactly its
    runs (:func:`~harness.bench.results.bench_run_ids`), whatever else its grid's folder
    holds."""
    run_ids = bench_run_ids(derived, root, data_root)
    return verdict_of(derived, load_rows(root, derived.protocol.name, run_ids))


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
        _power_line(comparisons, p),
        p.stages.stages,
        p.stages.weights,
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


def _arm_rows(rows: Rows, arm: ArmCell) -> pd.DataFrame:
    """The confirmation rows of ``arm``'s selected configuration in its cell (confirmation
    runs of a configuration selected earlier, before more extension moved the best, are not
    the arm's: they are left out)."""
    df = rows.confirm[rows.confirm["label"] == arm.label]
    for k, v in arm.cell.items():
        df = df[df[k] == v]
    for k, x in arm.best.items():
        df = df[np.isclose(df[k].astype(float), x, rtol=1e-9, atol=0.0)]
    return df


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
    """Every cell and baseline; the tested ones read as one Holm family over the protocol's
    stages of confirmation seeds (:func:`harness.analysis.stats.sequential_family`: with one
    stage, :func:`~harness.analysis.stats.correct_family` over the cells), each read at its
    Holm step's level times its stage's share of alpha."""
    from harness.analysis.stats import sequential_family

    p = derived.protocol
    by_key = {(a.label, tuple(a.cell.items())): a for a in arms}
    cells = sorted({tuple(a.cell.items()) for a in arms}, key=str)
    cand = derived.candidate.label
    raw = [
        _one(rows, dict(key), cand, b.label, by_key, derived)
        for key in cells
        for b in derived.baselines
    ]
    tested = [(i, arms_rows) for i, (_, arms_rows) in enumerate(raw) if arms_rows is not None]

    def test(j: int, k: int) -> TwoArmTest | None:
        return _stage_test(*tested[j][1], p, k)

    judged = sequential_family(len(tested), test, p.stages, alpha=p.verdict.alpha)
    level = p.verdict.alpha * p.stages.weights[0] / max(len(tested), 1)
    out = [head for head, _ in raw]
    for j, ((i, (a, b)), s) in enumerate(zip(tested, judged, strict=True)):
        r, t0 = s.result, test(j, 0)
        a, b = (_on_stage(x, p, p.stages.stages.index(s.seeds)) for x in (a, b))
        out[i] = replace(
            out[i],
            reading="pending" if s.waiting else _read(r, rows.goal),
            why=_waiting(s, p) if s.waiting else _why(r, cand, out[i].baseline),
            mean_candidate=_mean(b[VALUE].to_numpy(float)),
            mean_baseline=_mean(a[VALUE].to_numpy(float)),
            n_candidate=r.n_b,
            n_baseline=r.n_a,
            difference=r.difference if not r.diverged else math.nan,
            ci_low=r.ci_low,
            ci_high=r.ci_high,
            confidence=r.confidence,
            p=r.p,
            p_adjusted=r.p_adjusted,
            method=r.method,
            detectable=math.nan if t0 is None else _detectable(t0, level, p.verdict.power),
            stage=s.stage,
        )
    return out


def _stage_test(
    a: pd.DataFrame, b: pd.DataFrame, protocol: Protocol, stage: int
) -> TwoArmTest | None:
    """The comparison of the baseline's rows ``a`` and the candidate's ``b`` on the seeds of
    ``stage`` (None: a seed the stage adds has no result yet in an arm); the first stage
    tests what there is of its seeds."""
    from harness.analysis.stats import two_arm_test

    seeds = protocol.seeds_at(stage)
    a, b = _on_stage(a, protocol, stage), _on_stage(b, protocol, stage)
    if stage > 0:
        added = set(seeds[protocol.stages.stages[stage - 1] :])
        if not (added <= set(a["seed"]) and added <= set(b["seed"])):
            return None
    va, vb = a[VALUE].to_numpy(float), b[VALUE].to_numpy(float)
    return two_arm_test(va, vb, seeds_a=a["seed"].to_numpy(), seeds_b=b["seed"].to_numpy())


def _on_stage(df: pd.DataFrame, protocol: Protocol, stage: int) -> pd.DataFrame:
    """The confirmation rows of ``stage``'s seeds; with one stage every row given (the bench's
    rows are its protocol's seeds: :func:`~harness.bench.results.bench_run_ids`), as
    ``harness analyze compare`` reads them."""
    if len(protocol.stages.stages) == 1:
        return df
    return df[df["seed"].isin(protocol.seeds_at(stage))]


def _waiting(s: StageResult, protocol: Protocol) -> str:
    """Why an open comparison has no reading yet: the stage whose seeds it waits for."""
    seeds = protocol.seeds_at(s.stage)[protocol.stages.stages[s.stage - 1] :]
    return (
        f"inconclusive on {s.seeds} seeds per arm: stage {s.stage + 1} of "
        f"{len(protocol.stages.stages)} adds seeds {', '.join(map(str, seeds))}"
    )


def _one(
    rows: Rows,
    cell: dict[str, Any],
    cand: str,
    base: str,
    by_key: Mapping[Any, ArmCell],
    derived: Derived,
) -> tuple[Comparison, tuple[pd.DataFrame, pd.DataFrame] | None]:
    """One comparison before the correction: its head, and the baseline's and the candidate's
    confirmation rows (None: read already)."""
    key = tuple(cell.items())
    head = Comparison(cell, base, "pending")
    for label in (cand, base):
        why = _not_tuned(by_key.get((label, key)), derived.candidate.configs)
        if why == "pending":
            return replace(head, why=f"{label} has no tuning result yet"), None
        if why:
            return replace(head, reading="not tuned", why=why), None
    a, b = _arm_rows(rows, by_key[(base, key)]), _arm_rows(rows, by_key[(cand, key)])
    first = [_on_stage(x, derived.protocol, 0)[VALUE].to_numpy(float) for x in (a, b)]
    va, vb = first
    head = replace(
        head,
        mean_candidate=_mean(vb),
        mean_baseline=_mean(va),
        n_candidate=int(vb.size),
        n_baseline=int(va.size),
    )
    if va.size == 0 or vb.size == 0:
        return replace(head, why="confirmation runs not done"), None
    t = _stage_test(a, b, derived.protocol, 0)
    if t is None or math.isnan(t.p):  # one seed, or no spread: nothing to test
        note, method = ("", "") if t is None else (t.note, t.method)
        return replace(head, reading="no verdict", why=note, method=method), None
    return head, (a, b)


def _read(r: TwoArmResult, goal: Goal) -> Reading:
    """better/worse from a corrected comparison: lower loss for a ``min`` metric; for
    diverged seeds, fewer divergences; a diverged comparison without evidence has no
    verdict (its losses are not tested)."""
    if r.reading in ("no evidence", "no verdict"):
        return "no verdict" if r.diverged else r.reading
    lower = r.reading == "lower"
    if r.diverged:
        return "better" if lower else "worse"
    return "better" if lower == (goal == "min") else "worse"


def _why(r: TwoArmResult, cand: str, base: str) -> str:
    if not r.diverged:
        return ""
    note = r.note.replace("(b)", f"({cand})").replace("(a)", f"({base})")
    return f"{note}; Fisher's exact test p = {r.p:.2g}, Holm {r.p_adjusted:.2g}"


def _mean(v: np.ndarray) -> float:
    return float(v.mean()) if v.size else math.nan


def _detectable(t: TwoArmTest, alpha: float, power: float) -> float:
    """The difference the comparison's own variance terms detect with ``power`` at
    ``alpha`` (two-sided)."""
    from harness.analysis.stats import detectable

    if t.diverged or not t.weights:
        return math.nan
    if len(t.weights) == 1:  # paired: the per-seed differences' variance
        var = t.weights[0] * t.n_a
        return detectable(var, t.n_a, 0.0, t.n_a, alpha=alpha, two_sided=True, target=power)
    va, vb = t.weights[0] * t.n_a, t.weights[1] * t.n_b
    return detectable(va, t.n_a, vb, t.n_b, alpha=alpha, two_sided=True, target=power)


def _power_line(
    comparisons: Sequence[Comparison], protocol: Protocol
) -> tuple[float, float, float]:
    """:attr:`Verdict.power_line`: the per-cell variances behind each comparison's
    ``detectable`` pooled (weighted by their df), the seeds the first stage's tests had (at most
    ``seeds``), Holm's strictest level of ``alpha`` (the first stage's share)."""
    from harness.analysis.stats import detectable, variance_range

    alpha = protocol.verdict.alpha * protocol.stages.weights[0]
    power, seeds = protocol.verdict.power, len(protocol.confirm_seeds)
    tested = [c for c in comparisons if math.isfinite(c.detectable) and c.detectable > 0]
    if not tested:
        return math.nan, math.nan, math.nan
    n = min([min(c.n_candidate, c.n_baseline) for c in tested if c.stage == 0] or [seeds])
    level = alpha / sum(1 for c in comparisons if math.isfinite(c.p))
    # each cell's variance of one seed's difference, recovered from its own detectable
    # difference (detectable scales with the standard deviation at fixed seeds and level)
    unit = detectable(1.0, n, 0.0, n, alpha=level, two_sided=True, target=power)
    var = [(c.detectable / unit) ** 2 for c in tested]
    df = len(tested) * (n - 1)
    pooled = float(np.mean(var))
    lo, hi = variance_range(pooled, df + 1)
    return unit * math.sqrt(pooled), unit * math.sqrt(lo), unit * math.sqrt(hi)


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
            why = ""
            if _failed(check):
                reading = "no verdict"
            elif len(budgets) < CHECKED_BUDGETS or check.startswith(CAVEATS):
                reading, why = "unchecked", UNCHECKED_WHY  # the model is not checked
            elif not min(budgets) <= float(r["budget_b"]) <= max(budgets):
                reading, why = "unchecked", EXTRAPOLATED_WHY.format(baseline=b.label)
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
                    why,
                )
            )
    return out


CHECKED_BUDGETS = 4
"""Fewest token budgets at which the speed-up's model is checked (the fit without the smallest
budget still has 3 points): with fewer, the speed-up reads ``unchecked``, no better or worse
(at 3 budgets its extrapolated interval covered 68-80% at 3 seeds under the drifting curve of
``docs/statistics.md``)."""
UNCHECKED_WHY = (
    f"fewer than {CHECKED_BUDGETS} token budgets: the power law the ratio reads is not checked"
)
"""Why a speed-up with too few budgets has no reading."""
EXTRAPOLATED_WHY = (
    "extrapolated: {baseline}'s power law read beyond its budgets, where a curve that drifts "
    "from it is not seen (a true 1.5x: the interval covered 70-78% at 3-5 seeds, fit checks "
    "counted; docs/statistics.md); the largest budget's cell reads the direction"
)
"""Why an extrapolated speed-up has no reading (``{baseline}``: its label)."""
CAVEATS = ("unchecked",)
"""Speed-up checks that are caveats, not failures: a check that could not be made (too few
budgets). An extrapolated baseline budget, which a speed-up above 1 at the largest budget always
is, is a note of the speed-up and its ``why`` (unchecked), never part of its ``fit_check``."""


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
    workload = p.base.get("workload")
    if workload is not None:  # a workload is its own model and data (no model: or dataset:)
        out.append(f"workloads other than {workload}")
    else:
        if "model" not in cells:
            out.append(f"models other than {p.base.get('model', 'the default')}")
        out.append(f"data other than {p.base.get('dataset', 'the default dataset')}")
    fixed = sorted({"schedule", "warmup_steps", "grad_clip"} & set(p.base))
    if fixed:
        out.append("other " + ", ".join(fixed) + " (held as the protocol sets them)")
    return tuple(out)
