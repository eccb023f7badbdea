"""Parsing ``K=V`` selectors and column lists, and labelling rows by the arm they belong to."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.analysis.stats import ARM
from harness.core.errors import UserError

#: Values of ``K=V`` that match SQL NULL.
NULL_WORDS = ("null", "none")


@dataclass(frozen=True, slots=True)
class Selector:
    """Rows whose columns equal given values, e.g. ``optimizer=sgd,grad_clip=null``."""

    text: str
    """The selector as typed."""
    pairs: tuple[tuple[str, str], ...]
    """(column, value as typed) pairs; all must match."""

    @property
    def keys(self) -> tuple[str, ...]:
        """The columns the selector reads."""
        return tuple(k for k, _ in self.pairs)

    @property
    def label(self) -> str:
        """Short name: the value of a one-column selector (``adamw``), else the text
        (``coupled_scale_exp=5``, ``optimizer=sgd,grad_clip=null``)."""
        if len(self.pairs) == 1 and not _is_number(self.pairs[0][1]):
            return self.pairs[0][1]
        return self.text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def parse_selector(text: str, flag: str) -> Selector:
    """Parse ``K=V[,K=V...]``.

    Raises:
        UserError: a part without ``=`` or with an empty key.
    """
    pairs = []
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{flag} {text!r}: expected K=V[,K=V...], e.g. optimizer=adamw")
        pairs.append((key.strip(), value.strip()))
    return Selector(text=text, pairs=tuple(pairs))


def as_selector(value: Selector | str | None, flag: str) -> Selector | None:
    """``value`` as a :class:`Selector`: parsed when a ``K=V[,K=V]`` string (None stays None)."""
    if value is None or isinstance(value, Selector):
        return value
    return parse_selector(value, flag)


def parse_columns(text: str | None) -> list[str]:
    """``"a,b"`` -> ``["a", "b"]``; None or empty -> ``[]``."""
    if not text:
        return []
    return [c.strip() for c in text.split(",") if c.strip()]


def _match_column(col: pd.Series, value: str, flag: str) -> pd.Series:
    if value.lower() in NULL_WORDS:
        return col.isna()
    if pd.api.types.is_bool_dtype(col) or (col.dtype == object and _all_bool(col)):
        if value.lower() not in ("true", "false"):
            raise UserError(f"{flag}: {col.name} is true/false, got {value!r}")
        return (col == (value.lower() == "true")).fillna(False).astype(bool)
    if pd.api.types.is_numeric_dtype(col):
        try:
            v = float(value)
        except ValueError:
            raise UserError(f"{flag}: {col.name} is numeric, got {value!r}") from None
        return pd.Series(np.isclose(col.astype(float), v, rtol=1e-9, atol=0.0), index=col.index)
    return (col.astype(str) == value).fillna(False).astype(bool)


def _all_bool(col: pd.Series) -> bool:
    return bool(col.dropna().map(lambda v: isinstance(v, bool)).all()) and bool(col.notna().any())


def match(df: pd.DataFrame, sel: Selector, flag: str) -> pd.Series:
    """Boolean mask of the rows ``sel`` selects.

    Raises:
        UserError: an unknown column, or no row matches (listing the values present).
    """
    mask = pd.Series(True, index=df.index)
    for key, value in sel.pairs:
        if key not in df.columns:
            raise UserError(f"{flag} {sel.text!r}: unknown column {key!r}")
        mask &= _match_column(df[key], value, flag)
    if not mask.any():
        present = {k: sorted({_show(v) for v in df[k].unique()}) for k in sel.keys}
        shown = "; ".join(f"{k}: {', '.join(vs)}" for k, vs in present.items())
        raise UserError(f"{flag} {sel.text!r} matches no rows; values present: {shown}")
    return mask


def _show(v: object) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "null"
    return str(v)


def label_arms(
    df: pd.DataFrame, named: Mapping[str, Selector], *, others: bool = False
) -> pd.DataFrame:
    """Rows of ``df`` with an ``arm`` column: the selector's label for rows it matches.

    Args:
        df: result rows.
        named: flag name (``--a``, ``--baseline``, ...) -> selector.
        others: keep rows matched by no selector, labelled by their values of the selectors'
            columns (as in :attr:`Selector.label`); else drop them.

    Raises:
        UserError: a selector matches no row, a row matches two selectors, or two arms share a
            label.
    """
    labels = pd.Series(pd.NA, index=df.index, dtype=object)
    for flag, sel in named.items():
        mask = match(df, sel, flag)
        clash = mask & labels.notna()
        if clash.any():
            raise UserError(f"{flag} {sel.text!r} selects rows another selector already selects")
        labels[mask] = sel.label
    if len({s.label for s in named.values()}) < len(named):
        raise UserError("two selectors have the same label; make them differ")
    out = df.assign(**{ARM: labels})
    if not others:
        return out[out[ARM].notna()].copy()
    keys = list(dict.fromkeys(k for s in named.values() for k in s.keys))
    rest = out[ARM].isna()
    if rest.any():
        out.loc[rest, ARM] = _other_labels(out.loc[rest, keys], keys)
    return out


def _other_labels(rows: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """The label of each row of no arm, made once per distinct combination of ``keys``
    (a label per row cost seconds at 100,000 runs)."""
    group = rows.groupby(list(keys), dropna=False, sort=False).ngroup().to_numpy()
    _, first = np.unique(group, return_index=True)  # each group's first row, by group number
    labels = [_other_label(r, keys) for _, r in rows.iloc[first].iterrows()]
    return [labels[g] for g in group]


def _other_label(row: pd.Series, keys: Sequence[str]) -> str:
    if len(keys) == 1 and not _is_number(_show(row[keys[0]])):
        return _show(row[keys[0]])
    return ",".join(f"{k}={_show(row[k])}" for k in keys)


def inapplicable(rows: pd.DataFrame, by: Sequence[str]) -> list[tuple[str, str]]:
    """(arm, column) pairs where a ``by`` column is NULL for every row of the arm but set for
    others: the column does not apply to the arm (``coupled_scale_exp`` for AdamW)."""
    out = []
    for c in by:
        if rows[c].notna().any():
            out += [(str(a), c) for a, g in rows.groupby(ARM, sort=True) if g[c].isna().all()]
    return out


def broadcast(frame: pd.DataFrame, pairs: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """``frame`` with the rows of each (arm, column) pair copied into every value of the column
    that the other arms have (see :func:`inapplicable`)."""
    for arm, col in pairs:
        values = frame[col].dropna().unique()
        mine = (frame[ARM] == arm) & frame[col].isna()
        copies = [frame[mine].assign(**{col: v}) for v in values]
        frame = pd.concat([frame[~mine], *copies], ignore_index=True)
    return frame
