"""Which columns are cells by default: the conditions, the fields that follow them, the pooled.

A *condition* is an experiment column that is neither a tuned hyperparameter nor one that tells
methods apart (the optimizer and its variants): the model and its sizes, the dataset, the
sequence length, the batch size, the token (or step) budget, a workload's parameters. Two runs
at different conditions are different experiments, so every condition that varies inside a cell
is a cell column by default (:func:`open_conditions`): no analysis pools batch sizes into one
configuration, or picks the best batch size, unless the user asks for it with ``--pool AXIS``
(:data:`POOL_FLAG`). A pooled axis is no cell: each cell spans its values, and it is tuned over
like a hyperparameter (the table reports each cell's best value of it).

A hyperparameter *follows* when its values are derived from other fields
(:func:`followers`): a grid expression (``warmup_steps: "0.1 * steps"``, ``lr_min: "0.1 * lr"``,
read from the grid YAML when GRID is one), one value per combination of the conditions (an
expression over ``steps``, or an axis zipped with the batch size), or a constant multiple of a
tuned column. It moves with its sources and is never tuned over: never a tuned axis, an edge or
a value to extend.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from harness.analysis.rows.axes import experiment_columns, hyperparameters, varying_within
from harness.core.errors import UserError

POOL_FLAG = "--pool"
"""The option pooling conditions (``analyze``, ``figures`` and ``report`` share it)."""
POOL_HELP = (
    "Conditions pooled, comma separated, e.g. batch_size: not cells, tuned over instead (each "
    "cell reports its best value). Default: every condition that varies is a cell."
)
"""The help of :data:`POOL_FLAG`."""

#: Config columns that distinguish variants of one optimizer.
METHOD_EXTRAS = ("embedding_optimizer", "grad_clip", "weight_decay_mode")
#: Columns telling methods (arms) apart: never conditions.
METHOD_COLUMNS = ("optimizer", *METHOD_EXTRAS, "label")
#: Conditions listed first (panel titles, table columns); the rest keep the catalogue's order.
PRIORITY = ("model", "dataset", "tokens", "batch_size", "seq_len")
#: Relative tolerance of a constant ratio between two tuned columns (``lr_min: "0.1 * lr"``).
RATIO_RTOL = 1e-9


def conditions(df: pd.DataFrame) -> list[str]:
    """The condition columns of ``df`` (module docstring), :data:`PRIORITY` first."""
    skip = {*hyperparameters(df), *METHOD_COLUMNS}
    found = [c for c in experiment_columns(df) if c not in skip]
    return sorted(found, key=lambda k: PRIORITY.index(k) if k in PRIORITY else len(PRIORITY))


def check_pool(df: pd.DataFrame, pool: Sequence[str]) -> None:
    """Every pooled name is a condition of ``df``.

    Raises:
        UserError: naming the bad axis and the conditions that may be pooled.
    """
    valid = conditions(df)
    for axis in pool:
        if axis not in valid:
            vary = [c for c in valid if df[c].nunique(dropna=False) > 1]
            raise UserError(
                f"{POOL_FLAG}: {axis!r} is not a condition of these runs; valid choices: "
                f"{', '.join(vary) or 'none'} (the conditions that vary here; one that does "
                "not vary may be named too)"
            )


def open_conditions(df: pd.DataFrame, keys: Sequence[str], pool: Sequence[str] = ()) -> list[str]:
    """The conditions that vary inside some cell of ``keys`` and are not pooled: the cell
    columns every analysis adds by default, minus those the others determine (``n_layer``
    when ``model`` is one)."""
    found = varying_within(df, list(keys), [c for c in conditions(df) if c not in pool])
    return minimal(df, found, keys)


def minimal(df: pd.DataFrame, found: Sequence[str], keys: Sequence[str] = ()) -> list[str]:
    """``found`` without the columns that the rest (with ``keys``) determine: the same cells
    with fewer columns."""
    out = list(found)
    n = _n_groups(df, [*keys, *out])
    for c in reversed(list(found)):
        rest = [k for k in out if k != c]
        if rest and _n_groups(df, [*keys, *rest]) == n:
            out = rest
    return out


def _n_groups(df: pd.DataFrame, keys: Sequence[str]) -> int:
    return int(df.groupby(list(keys), dropna=False).ngroups) if keys else 1


def followers(df: pd.DataFrame, declared: Sequence[str] = ()) -> list[str]:
    """The hyperparameters of ``df`` that follow other fields (module docstring): those in
    ``declared`` (expressions of the grid YAML), those with one value per combination of the
    varying conditions and methods, and those a constant multiple of another tuned column
    (the first in catalogue order is the source)."""
    tuned = [h for h in hyperparameters(df) if df[h].nunique(dropna=False) > 1]
    out = [h for h in tuned if h in declared]
    conds = [c for c in conditions(df) if df[c].nunique(dropna=False) > 1]
    if conds:
        groups = df.groupby([*conds, *(c for c in METHOD_COLUMNS if c in df.columns)], dropna=False)
        per = groups[tuned].nunique(dropna=False)
        out += [h for h in tuned if h not in out and bool((per[h] <= 1).all())]
    sources = [h for h in tuned if h not in out]
    for k, h in enumerate(sources):
        if any(_multiple(df[h], df[s]) for s in sources[:k]):
            out.append(h)
    return [h for h in tuned if h in out]


def _multiple(col: pd.Series, source: pd.Series) -> bool:
    """Whether ``col`` is a constant multiple of ``source`` wherever either is set."""
    if not (pd.api.types.is_numeric_dtype(col) and pd.api.types.is_numeric_dtype(source)):
        return False
    if (col.isna() != source.isna()).any():
        return False
    a, b = col.dropna().to_numpy(float), source.dropna().to_numpy(float)
    if a.size == 0 or not (np.isfinite(a).all() and np.isfinite(b).all()) or (b == 0).any():
        return False
    ratio = a / b
    return bool(ratio[0] != 0 and np.allclose(ratio, ratio[0], rtol=RATIO_RTOL, atol=0.0))


def declared_expressions(args: str | Sequence[str] | None) -> list[str]:
    """The fields the grid YAMLs among ``args`` compute by an expression (a string value of a
    numeric field anywhere in the file: ``warmup_steps: "0.1 * steps"``); names give none."""
    from harness.core.catalogue import FIELDS

    numeric = {k for k, f in FIELDS.items() if f.type in (int, float)}
    out: set[str] = set()
    for arg in [args] if isinstance(args, str) else list(args or []):
        p = Path(arg)
        if p.suffix in (".yaml", ".yml") and p.is_file():
            import yaml  # a grid file's: names (the usual GRID) need none

            doc = yaml.safe_load(p.read_text())
            for section in _value_sections(doc):
                out |= _string_keys(section, numeric)
    return sorted(out)


#: The sections of a grid YAML that hold run values (others hold names: ``derived_axes``).
VALUE_SECTIONS = ("base", "grid", "zip")


def _value_sections(doc: object) -> list[object]:
    if not isinstance(doc, dict):
        return []
    local = doc.get("local")
    inner = [local.get(k) for k in VALUE_SECTIONS] if isinstance(local, dict) else []
    return [*(doc.get(k) for k in VALUE_SECTIONS), *inner]


def _string_keys(node: object, numeric: set[str]) -> set[str]:
    out: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            values = v if isinstance(v, list) else [v]
            if k in numeric and any(isinstance(x, str) for x in values):
                out.add(str(k))
            out |= _string_keys(v, numeric)
    elif isinstance(node, list):
        for v in node:
            out |= _string_keys(v, numeric)
    return out


def auto_over(df: pd.DataFrame, keys: Sequence[str], declared: Sequence[str] = ()) -> list[str]:
    """The hyperparameters tuned over by default: those that vary inside at least one cell of
    ``keys``, except the :func:`followers` (``declared``: the grid's expressions)."""
    follow = set(followers(df, declared))
    return varying_within(df, keys, [h for h in hyperparameters(df) if h not in follow])
