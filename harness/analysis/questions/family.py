"""``--family NAME``: one multiple-comparison correction over every claim of a study.

A study makes claims from several commands (``compare`` per metric, ``gap`` per grid); a
correction per command lets each table look significant on its own. With ``--family NAME`` a
command records each of its tests' raw p-values as a claim in
``<results>/_families/NAME.json`` (:func:`harness.core.paths.family_path`) and corrects over
every claim recorded in the family so far (``--correction``, Holm by default), printing the
family's size. A claim is keyed by the command, its grids, metric, arms, ``--where`` and cell,
so running the same command again replaces its claims instead of adding them. The correction is
final once the study's last claim is recorded: read the family then (:func:`adjusted`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path

import numpy as np

from harness.analysis.questions.query import Query
from harness.analysis.rows.gridref import resolve_grid
from harness.analysis.stats import CORRECTIONS
from harness.core import paths
from harness.core.errors import UserError
from harness.core.files import atomic_write_text, locked


@dataclass(slots=True)
class Family:
    """The correction over a named family, as an :data:`~harness.analysis.stats.corrections.Adjust`
    (call it with the raw p-values and their claim keys)."""

    path: Path
    """The family's file."""
    prefix: str
    """What the command's claims share (command, grids, metric, arms, where)."""
    correction: str
    """A name in :data:`~harness.analysis.stats.corrections.CORRECTIONS`."""
    size: int = field(default=0)
    """Claims in the family after the last call."""

    def __call__(self, p: np.ndarray, keys: Sequence[str]) -> np.ndarray:
        mine = {f"{self.prefix} | {k}": float(v) for k, v in zip(keys, p, strict=True)}
        with locked(self.path.with_suffix(".lock")):
            claims = claims_of(self.path)
            claims.update({k: v for k, v in mine.items() if np.isfinite(v)})
            atomic_write_text(self.path, json.dumps(claims, indent=1, sort_keys=True) + "\n")
        names = list(claims)
        adjusted = CORRECTIONS[self.correction](np.array([claims[k] for k in names], float))
        by_key = dict(zip(names, adjusted, strict=True))
        self.size = len(names)
        return np.array([by_key.get(k, np.nan) for k in mine], float)

    def note(self, name: str) -> str:
        """The note of a table corrected over the family."""
        return (
            f"family {name}: {self.correction} correction over the {self.size} claim(s) recorded "
            f"in {self.path} so far (final once the study's last claim is recorded)"
        )


def claims_of(path: Path) -> dict[str, float]:
    """The claims recorded in a family file (claim key -> raw p-value; empty if none yet).

    Raises:
        UserError: the file is not a family file.
    """
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        return {str(k): float(v) for k, v in data.items()}
    except (ValueError, AttributeError, TypeError) as e:
        raise UserError(f"{path} is not a --family file ({e}); move it away to start over") from e


def adjusted(results: str | Path | None, name: str, correction: str = "holm") -> dict[str, float]:
    """Every claim of the family ``name`` with its p-value corrected over the whole family
    (claim key -> adjusted p): what a study reads once its last claim is recorded."""
    claims = claims_of(paths.family_path(paths.results_root(results), name))
    adj = CORRECTIONS[correction](np.array(list(claims.values()), float))
    return dict(zip(claims, (float(v) for v in adj), strict=True))


def family(q: Query, name: str, command: str, arms: Sequence[str], correction: str) -> Family:
    """The family ``name`` under the query's results root, for claims of ``command`` on
    ``arms``."""
    root = paths.results_root(q.results)
    path = paths.family_path(root, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    given = [q.grid] if isinstance(q.grid, str | PathLike) else list(q.grid or [])
    grids = "+".join(resolve_grid(str(g)) for g in given) or "all"
    where = f" where {q.where}" if q.where else ""
    prefix = f"{command} {grids} {q.metric} {' vs '.join(arms)}{where}"
    return Family(path=path, prefix=prefix, correction=correction)
