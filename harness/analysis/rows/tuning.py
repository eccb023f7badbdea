"""The tuning protocol: each cell's best configuration by the selecting metric's mean over seeds.

A configuration is one combination of the ``over`` values inside a cell (one combination of the
``by`` values). Its seeds give mean, corrected std (ddof 1), n and the 2-sigma half-width. The
best configuration is the one with the best mean of ``select_value`` when the rows carry it
(``--select-by``: pick by loss, report the embedding metrics there), else of ``value``. A
diverged seed makes the configuration's mean the worst value (see
:mod:`harness.analysis.rows.preparation`), so a configuration that sometimes diverges never wins
over one that always trains. Ties keep the first configuration in sorted order, so results are
deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.analysis.rows.axes import hyperparameters
from harness.analysis.rows.edges import edge_note
from harness.analysis.stats import CONFIDENCE, SELECT, VALUE, groups, tabled_t_quantile
from harness.metrics.catalogue import Goal

#: Statistics columns of :func:`seed_stats`, in order.
STATS = ("mean", "std", "n", "two_sigma", "ci_low", "ci_high", "n_diverged")


def seed_stats(rows: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Statistics over seeds of ``value`` for each combination of ``keys``.

    Returns:
        One row per combination: the ``keys`` columns, then mean, std (corrected; NaN for one
        seed or a diverged seed), n, two_sigma (2 * std, the talk's spread), ci_low and ci_high
        (the Student t interval of the mean at :data:`~harness.analysis.stats.defaults.CONFIDENCE`;
        NaN for one seed) and n_diverged (non-finite values).
    """
    g = groups(rows, keys)[VALUE]
    out = pd.DataFrame(
        {
            "mean": g.mean(),
            "std": g.std(ddof=1),
            "n": g.size(),
            "n_diverged": diverged(rows, keys),
        }
    )
    # a mean of finite and infinite values is infinite; the std of it is undefined
    out.loc[out["n_diverged"] > 0, "std"] = np.nan
    out["two_sigma"] = 2 * out["std"]
    dof = (out["n"] - 1.0).to_numpy(float)
    half = tabled_t_quantile(CONFIDENCE, dof) * out["std"] / np.sqrt(out["n"])
    out["ci_low"], out["ci_high"] = out["mean"] - half, out["mean"] + half
    out = out.reset_index(drop=not keys)
    return out[[*keys, *STATS]]


def diverged(rows: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    """Rows with a non-finite ``value`` in each combination of ``keys`` (indexed as
    ``groups(rows, keys)``), counted in one pass rather than a Python call per combination."""
    bad = pd.Series(~np.isfinite(rows[VALUE].to_numpy()), index=rows.index, name=VALUE)
    return groups(rows[list(keys)].assign(**{VALUE: bad}), keys)[VALUE].sum().astype(int)


def tune(
    rows: pd.DataFrame,
    by: Sequence[str],
    over: Sequence[str],
    goal: Goal,
    select_goal: Goal | None = None,
) -> pd.DataFrame:
    """Each cell's best configuration over ``over`` by the mean over seeds.

    Args:
        rows: prepared rows (with ``value``, and ``select_value`` when another metric selects),
            one per run.
        by: columns defining a cell.
        over: tuned columns (may be empty: one configuration per cell).
        goal: ``min`` or ``max`` for ``value``.
        select_goal: ``min`` or ``max`` for ``select_value`` (default: ``goal``).

    Returns:
        One row per cell: ``by`` columns, the best ``over`` values, mean, std, n, two_sigma,
        n_diverged (of the best configuration's ``value``), select_mean (its mean
        ``select_value``, only when the rows carry one), configs (tried in the cell), runs and
        diverged (in the cell) and edge (notes for best values on the edge of the searched
        range, ``;`` separated, empty when none).
    """
    by, over = list(by), list(over)
    stats = seed_stats(rows, by + over)
    key, ascending = "mean", goal == "min"
    if SELECT in rows.columns:
        stats["select_mean"] = groups(rows, by + over)[SELECT].mean().to_numpy()
        key, ascending = "select_mean", (select_goal or goal) == "min"
    ordered = stats.sort_values(key, ascending=ascending, kind="stable")
    best = ordered.groupby(by, dropna=False, sort=True).head(1) if by else ordered.head(1)
    cells = groups(rows, by)
    extra = pd.DataFrame(
        {
            "configs": groups(stats, by).size(),
            "runs": cells.size(),
            "diverged": diverged(rows, by),
        }
    ).reset_index(drop=not by)
    best = (
        best.merge(extra, on=by, how="left")
        if by
        else best.assign(**{str(k): v for k, v in extra.iloc[0].items()})
    )
    best["edge"] = _edge_notes(rows, by, over, best)
    return best.sort_values(by, kind="stable").reset_index(drop=True) if by else best


def _edge_notes(
    rows: pd.DataFrame, by: list[str], over: list[str], best: pd.DataFrame
) -> list[str]:
    """The ``edge`` column of ``best`` (one row per cell of ``by``), in one pass over the
    distinct configurations of every cell for each tuned axis: the values of the axis on the
    line through each cell's best (:func:`line_values`, which gives the same values a cell at
    a time), where a pandas frame per cell cost 1 to 2 ms each (0.3 to 0.5 s of CPU for 300
    cells of 100,000 runs)."""
    if not over:  # nothing tuned: no edge
        return [""] * len(best)
    configs = rows[[*by, *over]].drop_duplicates(ignore_index=True)  # a line needs no seeds
    cell = _cell_ids(configs, by)  # configs: cell number, the order of groups(best, by)
    order = _cell_ids(best, by).to_numpy()
    assert len(order) == len(set(order)) and (cell.max() if len(cell) else -1) < len(order)
    at_best = best.iloc[np.argsort(order)][over].reset_index(drop=True)  # row k: cell k's best
    found: list[list[str]] = [[] for _ in range(len(best))]
    for axis in over:
        on_line = pd.Series(True, index=configs.index)
        for c in over:
            if c == axis:
                continue
            held = at_best[c].to_numpy(dtype=object)[cell.to_numpy()]
            same = configs[c].isna().to_numpy() & pd.isna(held)
            same |= (configs[c].to_numpy(dtype=object) == held) & ~pd.isna(held)
            follows = _follows_in_cells(configs, cell, c, axis)[cell.to_numpy()]
            on_line &= same | follows
        line = configs.loc[on_line.to_numpy(), [axis]].assign(_cell=cell[on_line.to_numpy()])
        line = line[line[axis].notna()]
        unique = line.groupby("_cell", sort=False)[axis].unique()  # cell -> its values
        cells = unique.index.to_numpy(dtype=int).tolist()
        values = dict(zip(cells, (list(v) for v in unique), strict=True))
        for k in range(len(best)):
            found[k].append(edge_note(axis, values.get(k, []), at_best.at[k, axis]))
    by_cell = ["; ".join(n for n in notes if n) for notes in found]
    return [by_cell[k] for k in order]


def _cell_ids(df: pd.DataFrame, by: list[str]) -> pd.Series:
    """The number of each row's cell of ``by`` (NULL a value of its own), in the sorted order of
    :func:`~harness.analysis.stats.groups`; 0 for every row without ``by``."""
    if not by:
        return pd.Series(0, index=df.index)
    return df.groupby(by, dropna=False, sort=True).ngroup()


def _follows_in_cells(configs: pd.DataFrame, cell: pd.Series, column: str, axis: str) -> np.ndarray:
    """Per cell number: whether ``column`` takes one value per value of ``axis`` there
    (:func:`_follows` of each cell at once)."""
    keyed = configs[[axis, column]].assign(_cell=cell)
    counts = keyed.groupby(["_cell", axis], dropna=False)[column].nunique(dropna=False)
    one = (counts <= 1).groupby(level="_cell").all()
    return one.reindex(range(int(cell.max()) + 1 if len(cell) else 0), fill_value=True).to_numpy()


def _same_key(a: object, b: object) -> bool:
    """Whether two group keys (a value, or a tuple of them) are equal, NULL matching NULL."""
    pairs = zip(a, b, strict=True) if isinstance(a, tuple) and isinstance(b, tuple) else [(a, b)]
    return all(_null(x) and _null(y) if _null(x) or _null(y) else bool(x == y) for x, y in pairs)


def _null(v: object) -> bool:
    return bool(pd.isna(v))  # type: ignore[call-overload]  # a scalar: pandas says if NULL


def line_values(
    cell: pd.DataFrame, best: pd.Series, over: Sequence[str], axis: str
) -> list[object]:
    """The values of ``axis`` tried on the line through ``best``: the rows of ``cell`` (diverged
    ones included) whose other tuned columns ``over`` equal the best's (NULL matches NULL).

    An edge is judged along this line: an lr tried only at another weight decay says nothing
    about the lrs beyond the best at the best's weight decay. A column that moves with ``axis``
    (one value per value of ``axis`` in the cell: ``lr_min: "0.1 * lr"``, a zip) is part of the
    line, not held."""
    mask = pd.Series(True, index=cell.index)
    for c in over:
        if c == axis or _follows(cell, c, axis):
            continue
        mask &= cell[c].isna() if pd.isna(best[c]) else cell[c] == best[c]
    return list(cell.loc[mask, axis].dropna().unique())


def _follows(cell: pd.DataFrame, column: str, axis: str) -> bool:
    """Whether ``column`` takes one value per value of ``axis`` in ``cell``."""
    return bool((cell.groupby(axis, dropna=False)[column].nunique(dropna=False) <= 1).all())


def best_runs(rows: pd.DataFrame, tuned: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """The rows (one per seed) of the configurations in ``tuned``, matched on ``keys``.

    NULL keys match NULL keys (an optimizer without ``beta1`` keeps its runs).
    """
    if not keys:  # one cell, one configuration: every row
        return rows.copy()
    return rows.merge(tuned[list(keys)].drop_duplicates(), on=list(keys), how="inner")


CONFIRM = "confirm"
"""The row column marking confirmation runs (``harness.core.config.RunConfig.confirm``)."""
SAME_SEEDS = "selected and tested on the same seeds (declare seeds: {tune: N, confirm: M} and "
"""The note of a table whose values come from the seeds that selected them."""
SAME_SEEDS += "run harness submit --confirm to test on fresh ones)"


@dataclass(frozen=True, slots=True)
class Tested:
    """Each cell's selected configuration and the values it is reported with."""

    table: pd.DataFrame
    """:func:`tune`'s table; where confirmation runs exist, mean, std, n, two_sigma and
    n_diverged are over them, and ``tune_mean`` is the mean over the tuning seeds."""
    seeds: pd.DataFrame
    """The runs each cell is reported with: its confirmation runs, else its tuning runs."""
    note: str
    """Which seeds selected and which tested (for the output's notes)."""


def confirmed(
    rows: pd.DataFrame,
    by: Sequence[str],
    over: Sequence[str],
    goal: Goal,
    select_goal: Goal | None = None,
) -> Tested:
    """Tune on the tuning runs and report on the confirmation runs when there are some.

    Confirmation runs (column ``confirm`` true) never select: each cell's best configuration is
    chosen on the other runs (:func:`tune`); its confirmation runs, when present, are the values
    every statistic is then computed from, so that no value is tested on the seeds that picked
    it (the winner's curse). A cell without them keeps its tuning runs, and the note says so.
    Cells that are points of a sweep (``by`` holds a tuned axis: an lr-sensitivity curve) all
    keep their tuning runs, so that one point is not measured on other seeds than the rest.
    """
    keys = [*by, *over]
    fresh_mask = is_confirmation(rows)
    tuning, fresh = rows[~fresh_mask], rows[fresh_mask]
    table = tune(tuning, by, over, goal, select_goal)
    chosen = best_runs(tuning, table, keys)
    swept = [k for k in by if k in hyperparameters(rows)]
    if swept and not fresh.empty:  # one point per value of a tuned axis: a sweep, not a verdict
        note = f"a sweep over {', '.join(swept)}: every point on the tuning seeds"
        return Tested(table, chosen, note)
    tested = best_runs(fresh, table, keys) if not fresh.empty else fresh
    if tested.empty:
        return Tested(table, chosen, SAME_SEEDS if over else "")
    stats = seed_stats(tested, keys)
    table = table.assign(tune_mean=table["mean"])
    merged = table.drop(columns=list(STATS)).merge(stats, on=keys, how="left", indicator=True)
    has = merged["_merge"] == "both"
    for c in STATS:
        merged[c] = merged[c].where(has, table[c].to_numpy())
    table = merged.drop(columns="_merge")[[*table.columns]]
    untested = table.loc[~has.to_numpy(), keys]
    seeds = pd.concat([tested, best_runs(chosen, untested, keys)], ignore_index=True)
    n = int(has.sum())
    note = (
        f"selected on the tuning seeds, confirmed on fresh seeds: {n} of {len(table)} cell(s) "
        "report their confirmation runs (column tune_mean: the tuning mean)"
    )
    if n < len(table):
        note += f"; the other {len(table) - n} are {SAME_SEEDS}"
    return Tested(table, seeds, note)


def is_confirmation(rows: pd.DataFrame) -> pd.Series:
    """Which of ``rows`` are confirmation runs (column ``confirm`` true; NULL or absent: not)."""
    if CONFIRM not in rows.columns:
        return pd.Series(False, rows.index)
    return rows[CONFIRM].astype("boolean").fillna(False).astype(bool)
