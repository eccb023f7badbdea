"""``harness analyze compare --stages``: b against a per cell read as ``harness bench`` reads its
verdict with sequential confirmation seeds (:mod:`~harness.analysis.stats.sequential`), so that
the bench's rows give the same reading, difference and interval in both.

Each cell's seeds (both arms together) are taken in ascending order: stage k tests the first
``stages[k]`` of them (the bench's confirmation seeds, then the seeds it counts on from the
largest: :meth:`harness.bench.protocol.Protocol.seeds_at`), by the one two-arm comparison
(:func:`~harness.analysis.stats.two_arm.two_arm_test`: paired by seed where both arms ran them);
the cells are one Holm family over the stages (:func:`~harness.analysis.stats.sequential.
sequential_family`), each read at its Holm step's level times its stage's share of alpha. A
cell whose next stage's seeds have not all run in both arms is ``waiting`` (the bench's
*pending*): its row is its latest stage, with no evidence so far. The bench's family is every
cell *and baseline*; this table is one pair of arms, so with several baselines give it the
rows of one baseline and the family differs (its size is in the note).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.analysis.stats.cells import iter_cells
from harness.analysis.stats.frame import ARM, VALUE, std_or_nan
from harness.analysis.stats.sequential import SequentialDesign, StageResult, sequential_family
from harness.analysis.stats.two_arm import TwoArmTest, two_arm_test

#: The columns of :func:`staged_compare` after ``by`` (``compare``'s, then the stage).
COLUMNS = (
    "mean_a",
    "std_a",
    "n_a",
    "mean_b",
    "std_b",
    "n_b",
    "diff",
    "ci_low",
    "ci_high",
    "statistic",
    "p",
    "threshold",
    "p_adj",
    "significant",
    "method",
    "note",
    "stage",
)

Arms = tuple[pd.DataFrame, pd.DataFrame]


def staged_compare(
    seeds: pd.DataFrame,
    by: Sequence[str],
    a: str,
    b: str,
    design: SequentialDesign,
    *,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """b against a per cell over the stages of ``design`` (module docstring).

    Args:
        seeds: one row per seed: ``by``, ``arm``, ``seed``, ``value``.
        by: cell columns.
        a: label of arm a (the bench's baseline).
        b: label of arm b (the bench's candidate).
        design: the stages (cumulative seeds per arm) and each one's share of alpha.
        alpha: the family-wise level over the cells and stages (two-sided tests).

    Returns:
        One row per cell: ``by`` then :data:`COLUMNS` (``stage``: 1-based, the stage the
        reading stopped at, or for a waiting cell the stage whose seeds it waits for;
        ``p_adj``: Holm's over the stage-combined p-values).
    """
    cells = list(iter_cells(seeds, by))
    arms = [(cell[cell[ARM] == a], cell[cell[ARM] == b]) for _, cell in cells]

    def test(c: int, k: int) -> TwoArmTest | None:
        got = _on_stage(arms[c], design, k)
        if got is None:
            return None
        xa, xb = got
        return two_arm_test(
            xa[VALUE].to_numpy(float),
            xb[VALUE].to_numpy(float),
            seeds_a=xa["seed"].to_numpy(),
            seeds_b=xb["seed"].to_numpy(),
        )

    judged = sequential_family(len(cells), test, design, alpha=alpha)
    keys = [key for key, _ in cells]
    rows = [dict(k) | _row(s, x, design) for k, s, x in zip(keys, judged, arms, strict=True)]
    return pd.DataFrame(rows, columns=[*by, *COLUMNS])


def _on_stage(arms: Arms, design: SequentialDesign, k: int) -> Arms | None:
    """Both arms' rows on stage ``k``'s seeds (the first ``stages[k]`` in ascending order); None
    when a later stage's seeds have not all run in both arms (the first stage tests what there
    is, as the bench does)."""
    da, db = arms
    order = sorted({int(s) for s in da["seed"]} | {int(s) for s in db["seed"]})
    chosen = order[: design.stages[k]]
    if k > 0:
        enough = len(chosen) == design.stages[k]
        if not (enough and set(chosen) <= set(da["seed"]) and set(chosen) <= set(db["seed"])):
            return None
    return da[da["seed"].isin(chosen)], db[db["seed"].isin(chosen)]


def _row(s: StageResult, arms: Arms, design: SequentialDesign) -> dict[str, object]:
    r = s.result
    got = _on_stage(arms, design, design.stages.index(s.seeds))
    va, vb = (x[VALUE].to_numpy(float) for x in got or arms)
    note = r.note
    if s.waiting:
        note = (
            f"inconclusive on {s.seeds} seeds per arm: stage {s.stage + 1} of "
            f"{len(design.stages)} needs {design.stages[s.stage]}"
        )
    significant = "n/a" if math.isnan(r.p) else "no"
    if not s.waiting and r.reading in ("lower", "higher"):
        significant = "yes"
    return {
        "mean_a": _mean(va),
        "std_a": std_or_nan(va),
        "n_a": r.n_a,
        "mean_b": _mean(vb),
        "std_b": std_or_nan(vb),
        "n_b": r.n_b,
        "diff": r.difference,
        "ci_low": r.ci_low,
        "ci_high": r.ci_high,
        "statistic": r.statistic,
        "p": r.p,
        "threshold": math.nan,
        "p_adj": r.p_adjusted,
        "significant": significant,
        "method": r.method,
        "note": note,
        "stage": s.stage + 1,
    }


def _mean(v: np.ndarray) -> float:
    return float(v.mean()) if v.size else math.nan
