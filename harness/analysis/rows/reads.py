"""Which columns of ``runs`` a question reads, where it names them: a question over 100,000
runs that reads about 70 of the 123 columns sorts and converts those only
(:meth:`harness.analysis.rows.load.Selection.frame`).

What no analysis of a tuned table reads: the provenance columns (where, when and from which
inputs a row was made; ``source`` is read: rows written before ``iso`` changed meaning are told
by it, :mod:`harness.analysis.rows.preparation`), and the catalogued metrics other than those
the question analyses or selects by. Every config column, outcome column and metric an import
declared stays.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.analysis.rows.direction import DEFAULT_METRIC, default_select
from harness.analysis.rows.preparation import FALLBACK_METRIC, RENAMED
from harness.core.provenance import INPUTS, PROVENANCE, THREADS
from harness.metrics.catalogue import METRICS

KEPT_PROVENANCE = frozenset({"source"})
"""The provenance columns an analysis reads (module docstring)."""

UNREAD_PROVENANCE = frozenset({*PROVENANCE, *INPUTS, *THREADS}) - KEPT_PROVENANCE
"""The provenance columns no tuned table reads."""


def metrics_read(metric: str, select_by: str | None) -> frozenset[str]:
    """The catalogued metrics a question of ``--metric`` and ``--select-by`` may read: those,
    the metric the default falls back to (:func:`~harness.analysis.rows.preparation.
    resolve_metric`), each one's default selecting metric, and the renamed metrics' old names."""
    named = {metric, DEFAULT_METRIC, FALLBACK_METRIC, *([select_by] if select_by else [])}
    named |= {default_select(m) for m in list(named)}
    named |= {n for pair in RENAMED.items() for n in pair}
    return frozenset(named)


def columns_read(
    columns: Iterable[str], metric: str, select_by: str | None, named: Iterable[str] = ()
) -> list[str]:
    """Of ``columns`` (the ``runs`` view's), those a tuned question reads: all but the unread
    provenance and the catalogued metrics outside :func:`metrics_read`; a column ``named`` (a
    ``--by`` or ``--over``) always."""
    metrics = metrics_read(metric, select_by) | set(named)
    unread = UNREAD_PROVENANCE | (frozenset(METRICS) - metrics)
    return [c for c in columns if c not in unread or c in named]
