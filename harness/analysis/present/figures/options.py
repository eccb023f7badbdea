"""What a user may ask of the figures beyond the rows (cheap to import: no matplotlib)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.analysis.rows.selectors import Selector
from harness.core.targets import Target


@dataclass(frozen=True, slots=True)
class FigureOptions:
    """What a user may ask of the figures beyond the rows (``harness figures`` flags)."""

    runs: str = "best"
    """``loss_curves``: ``best`` (each arm's tuned configuration, mean over seeds) or ``all``
    (every run of the cell, thin, the tuned one on top)."""
    x: str | None = None
    """``metric_vs``: the column along the x axis (None: an optimizer's own hyperparameter, else
    the first tuned one that varies)."""
    baseline: Selector | None = None
    """Rows of the baseline arm (``gap_closure``, ``batch_size``; None: SGD)."""
    reference: Selector | None = None
    """Rows of the reference arm (None: AdamW, else Adam)."""
    target: Target | None = None
    """``performance_profile``: the loss runs are timed to (``--target``, else the grid's
    ``target:``; None: none)."""
    pool: tuple[str, ...] = ()
    """Conditions pooled (``--pool``): not panels, tuned over instead
    (:mod:`harness.analysis.rows.conditions`)."""
    scale_name: str | None = None
    """How the rows' scale is named in titles and the report (a bench's ``local scale``, whose
    runs' scale field says ``full``); None: ``<scale> scale`` from the rows."""


#: ``--runs`` choices of ``loss_curves``.
CURVE_RUNS = ("best", "all")
