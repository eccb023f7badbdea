"""The bench's HTML report card: ``harness report`` of the bench's arms, the verdict on top."""

from __future__ import annotations

import html
import re
from pathlib import Path

from harness import services
from harness.bench.derive import Derived
from harness.bench.render import verdict_table
from harness.bench.results import of_arms
from harness.bench.verdict import Verdict

FIGURES = ("lr_sensitivity", "loss_curves")
"""The report's figures: each arm's loss over lr, and the curves."""


def report_card(verdict: Verdict, derived: Derived, root: Path, scale_name: str) -> str:
    """One self-contained HTML file: the verdict, then ``harness report`` of the bench's arms
    (figures, curves, each cell's best configuration, provenance), its scale named
    ``scale_name`` (:func:`harness.bench.scale_name`: ``local scale``)."""
    page = services.report(
        derived.protocol.name,
        results=root,
        where=of_arms([a.label for a in derived.arms]),
        scale="full",
        metric=verdict.metric,
        names=FIGURES,
        runs="best",
        scale_name=scale_name,
    )
    card = (
        f'<section id="bench-verdict"><h2>harness bench: {html.escape(verdict.candidate)}'
        f"</h2><p><b>{html.escape(verdict.summary)}</b></p>"
        f"<pre>{html.escape(verdict_table(verdict, derived.candidate.caveats))}</pre></section>"
    )
    page = without_empty_gap(page)
    head, sep, tail = page.partition("<body>")
    if not sep:  # a report without a body tag: the card goes first
        return card + page
    return head + sep + card + tail


NO_GAP = "no gap table"
"""How the report's gap section begins when it has no table (no SGD baseline arm)."""


def without_empty_gap(page: str) -> str:
    """The report without its gap-closure section when that holds no table (a bench has no SGD
    baseline to close a gap from: the section would only say that it does not apply)."""
    section = re.search(r'<section id="gap">.*?</section>', page, flags=re.S)
    if section is None or NO_GAP not in section.group(0):
        return page
    page = page[: section.start()] + page[section.end() :]
    return re.sub(r'<a href="#gap">[^<]*</a>', "", page)
