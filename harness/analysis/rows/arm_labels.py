"""Methods (the lines of a figure, the arms of a profile) and conditions (panels, cells).

Methods are the optimizer, plus ``embedding_optimizer``, ``grad_clip`` or ``weight_decay_mode``
when those vary for it (``sgd (grad_clip=1)``), or the run's ``label``. Conditions are the other
experiment columns that vary (model, batch size, tokens, ...); everything else that varies is a
hyperparameter, tuned over.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.analysis.rows.axes import varying
from harness.analysis.rows.conditions import METHOD_EXTRAS, PRIORITY, conditions, minimal
from harness.analysis.stats import METHOD


def add_methods(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with a ``method`` label per row: the run's ``label`` when it has one, else the
    optimizer with the extras that vary for it (see the module docstring)."""
    extras = [c for c in METHOD_EXTRAS if c in rows.columns]
    labels = rows["optimizer"].astype(str).to_numpy(dtype=object)
    for opt, g in rows[["optimizer", *extras]].groupby("optimizer"):  # not every column
        vary = [c for c in extras if g[c].nunique(dropna=False) > 1]
        if vary:
            pos = rows.index.get_indexer(g.index)
            labels[pos] = [
                f"{opt} ({', '.join(f'{c}={short(v)}' for c, v in zip(vary, vals, strict=True))})"
                for vals in g[vary].itertuples(index=False)
            ]
    if "label" in rows.columns:
        named = rows["label"].notna().to_numpy()
        labels[named] = rows["label"].to_numpy(dtype=object)[named]
    return rows.assign(**{METHOD: labels})


def short(v: Any) -> str:
    """A value as a label shows it: ``none``, ``5B`` tokens, ``0.001``."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return "none"
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, int | float) and abs(v) >= 1e4 and float(v).is_integer():
        for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
            if abs(float(v)) >= size:
                return f"{v / size:.3g}{unit}"  # 5e9 tokens -> 5B
    return f"{v:g}" if isinstance(v, float) else str(v)


#: Conditions named first in panel titles (:data:`~harness.analysis.rows.conditions.PRIORITY`).
PANEL_PRIORITY = PRIORITY


def panel_keys(
    rows: pd.DataFrame, exclude: Sequence[str] = (), keys: Sequence[str] = ()
) -> list[str]:
    """Conditions that vary (:func:`~harness.analysis.rows.conditions.conditions`) except
    ``exclude`` and ``keys``, minus those determined by the others and ``keys`` (``n_layer``
    when ``model`` is a key)."""
    skip = {*exclude, *keys}
    return minimal(rows, varying(rows, [c for c in conditions(rows) if c not in skip]), keys)
