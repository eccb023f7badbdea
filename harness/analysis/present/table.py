"""Printing answers: an aligned table for people, CSV or JSON for programs."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from harness.analysis.questions.answer import Answer

#: Values of ``--format``.
FORMATS = ("table", "csv", "json")


def cell_text(v: object) -> str:
    """A value as tables print it: NaN as ``-``, floats with 4 significant digits."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, bool | np.bool_):
        return str(bool(v)).lower()
    if isinstance(v, float | np.floating):
        f = float(v)
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f"{f:.6g}" if abs(f) >= 1e5 or f.is_integer() else f"{f:.4g}"
    return str(v)


def as_table(df: pd.DataFrame) -> str:
    """Aligned text columns; NaN prints as ``-``, floats with 4 significant digits."""
    cols = list(df.columns)
    cells = [[cell_text(v) for v in row] for row in df.itertuples(index=False)]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


def as_csv(df: pd.DataFrame) -> str:
    """CSV with a header; NaN as an empty field."""
    return df.to_csv(index=False).rstrip("\n")


def _jsonable(v: object) -> object:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def as_json(df: pd.DataFrame) -> str:
    """A JSON list of row objects; NaN as null, infinities as the strings ``inf``/``-inf``."""
    rows = [{k: _jsonable(v) for k, v in r.items()} for r in df.to_dict(orient="records")]
    return json.dumps(rows, indent=1)


#: ``--format`` name -> renderer.
RENDERERS: dict[str, Callable[[pd.DataFrame], str]] = {
    "table": as_table,
    "csv": as_csv,
    "json": as_json,
}


def render(answer: Answer, fmt: str) -> tuple[str, Sequence[str]]:
    """(text for stdout, note lines). The CLI prints notes after a table, or on stderr."""
    return RENDERERS[fmt](answer.table), [f"note: {n}" for n in answer.notes]
