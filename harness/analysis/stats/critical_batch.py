"""Steps to a target loss at each batch size, and the critical batch size.

For each optimizer (and cell of ``--by``) and each batch size B, the tuned configuration's runs
(best by the final metric, as everywhere) are read along their loss curves: S(B) is the first
step at which the training loss reaches ``target`` (interpolated linearly between logged points;
a run that never reaches it makes S infinite). Tokens are S(B) times the tokens per step.

Perfect data parallelism halves the steps when B doubles: S(B) = S(B_0) B_0 / B, with B_0 the
smallest batch. The overhead over that linear scaling is r(B) = B S(B) / (B_0 S(B_0)). The
critical batch size follows Zhang et al. 2024 ("How does critical batch size scale in
pre-training?"): the B at which the steps exceed linear scaling by :data:`OVERHEAD` (20 %),
r(B) = 1.2, interpolated in log2 B. Its interval inverts the t test of
B S(B) - 1.2 B_0 S(B_0) = 0 along B (:func:`harness.analysis.stats.intervals.crossing_interval`,
Welch-Satterthwaite df). Without a crossing in the range, the answer says whether linear scaling
holds throughout (no critical batch below the largest B) or fails already at the second.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.analysis.stats.bootstrap import CONFIDENCE
from harness.analysis.stats.cells import iter_cells
from harness.analysis.stats.crossing import find_crossing
from harness.analysis.stats.intervals import crossing_interval, mean_interval
from harness.analysis.stats.to_target import crossing

#: Steps over linear scaling that define the critical batch size (Zhang et al. 2024: 20 %).
OVERHEAD = 0.2
#: The curve column read.
LOSS = "train_loss"
#: Output columns of the per-batch table after the cell columns.
COLUMNS = (
    "batch_size", "steps", "steps_ci_low", "steps_ci_high", "tokens", "n", "overhead",
    "critical_batch", "ci_low", "ci_high", "note",
)  # fmt: skip


def steps_to(curve: pd.DataFrame, target: float) -> tuple[float, float]:
    """(step, tokens) at which ``curve`` first reaches ``target`` (training loss; linear between
    logged points, :func:`harness.analysis.stats.to_target.crossing`); inf if never."""
    step, tokens = crossing(curve, LOSS, target, ("step", "tokens"))
    return step, tokens


def overhead_coefs(b: np.ndarray) -> np.ndarray:
    """(k, k): B_j S(B_j) - 1.2 B_0 S(B_0) as a linear map of the mean steps at each B."""
    coefs = np.diag(np.asarray(b, float))
    coefs[:, 0] -= (1 + OVERHEAD) * b[0]
    return coefs


def critical_batch(
    b: np.ndarray, steps: list[np.ndarray], confidence: float = CONFIDENCE
) -> dict[str, object]:
    """The critical batch size from each batch size's per-seed steps (``b`` increasing)."""
    means = np.array([s.mean() for s in steps])
    g = b * means - (1 + OVERHEAD) * b[0] * means[0]  # > 0: beyond the 20 % overhead
    out: dict[str, object] = {"critical_batch": np.nan, "ci_low": np.nan, "ci_high": np.nan}
    note = ""
    if not np.isfinite(means).all():
        return out | {"note": "some batch size never reaches the target: no critical batch"}
    cross = find_crossing(np.asarray(b, float), g)
    if np.isnan(cross.x):
        beyond = bool(g[-1] > 0)
        note = ("overhead above 20 % already at the second batch size" if beyond
                else f"linear scaling holds (within 20 %) up to B = {b[-1]:g}")  # fmt: skip
    else:
        out["critical_batch"] = cross.x
        note = "not monotone: the last crossing" if cross.sign_changes > 1 else ""
    if min(s.size for s in steps) < 2:
        return out | {"note": "; ".join(n for n in (note, "n = 1: no interval") if n)}
    coefs = overhead_coefs(b)
    var = np.array([s.var(ddof=1) / s.size for s in steps])
    df = np.array([s.size - 1.0 for s in steps])
    lo, hi, open_lo, open_hi = crossing_interval(np.log2(b), g, coefs, var, df, confidence)
    notes = [note] if note else []
    if not np.isnan(lo):
        out |= {"ci_low": float(2**lo), "ci_high": float(2**hi)}
        if open_lo or open_hi:
            notes.append("interval reaches the end of the batch sizes: not bounded there")
    return out | {"note": "; ".join(notes)}


def curves_by_run(curves: pd.DataFrame, run_ids: pd.Series) -> dict[str, pd.DataFrame]:
    """The curves of ``run_ids``, each sorted by step."""
    curves = curves[curves["run_id"].isin(run_ids)].sort_values(["run_id", "step"])
    return {str(rid): c for rid, c in curves.groupby("run_id")}


def default_target(curves: dict[str, pd.DataFrame]) -> float:
    """The highest loss every run reaches: the largest of the curves' minima."""
    return max(float(c[LOSS].min()) for c in curves.values())


def steps_table(
    seeds: pd.DataFrame,
    curves: dict[str, pd.DataFrame],
    cells: Sequence[str],
    x: str,
    target: float,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """One row per (cell, batch size): steps and tokens to ``target``, overhead, and the cell's
    critical batch size (repeated on its rows)."""
    out = []
    for key, cell in iter_cells(seeds, cells):
        b = np.array(sorted(cell[x].unique()), float)
        per_b = []
        for bv in b:
            runs = cell.loc[cell[x] == bv, "run_id"]
            pairs = [steps_to(curves[r], target) for r in runs if r in curves]
            per_b.append(np.array(pairs, float).reshape(-1, 2))
        steps = [p[:, 0] for p in per_b]
        crit = critical_batch(b, steps, confidence) if all(s.size for s in steps) else {}
        s0 = steps[0].mean() if steps[0].size else np.nan
        for bv, p in zip(b, per_b, strict=True):
            lo, hi = mean_interval(p[:, 0], confidence)
            with np.errstate(invalid="ignore", divide="ignore"):
                overhead = bv * p[:, 0].mean() / (b[0] * s0) if p.size else np.nan
            out.append(key | {
                "batch_size": bv, "steps": p[:, 0].mean() if p.size else np.nan,
                "steps_ci_low": lo, "steps_ci_high": hi,
                "tokens": p[:, 1].mean() if p.size else np.nan, "n": len(p),
                "overhead": overhead,
                "critical_batch": crit.get("critical_batch", np.nan),
                "ci_low": crit.get("ci_low", np.nan), "ci_high": crit.get("ci_high", np.nan),
                "note": crit.get("note", "a batch size without curves"),
            })  # fmt: skip
    return pd.DataFrame(out)[[*cells, *COLUMNS]]
