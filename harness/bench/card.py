"""The bench's HTML report card: ``harness report`` of the bench's arms, the verdict on top."""

from __future__ import annotations

import html
from pathlib import Path

from harness.bench.derive import Derived
from harness.bench.render import verdict_table
from harness.bench.verdict import Verdict

FIGURES = ("lr_sensitivity", "loss_curves")
"""The report's figures: each arm's loss over lr, and the curves."""


def report_card(verdict: Verdict, derived: Derived, root: Path) -> str:
    """One self-contained HTML file: the verdict, then ``harness report`` of the bench's arms
    (figures, curves, each cell's best configuration, provenance)."""
    from harness.analysis.present.report import ReportRequest, build_report

    labels = ", ".join("'" + a.label.replace("'", "''") + "'" for a in derived.arms)
    page = build_report(ReportRequest(
        grids=(derived.protocol.name,), results=str(root), where=f"label IN ({labels})",
        scale="full", metric=verdict.metric, figures=FIGURES,
    ))  # fmt: skip
    card = (f'<section id="bench-verdict"><h2>harness bench: {html.escape(verdict.candidate)}'
            f"</h2><p><b>{html.escape(verdict.summary)}</b></p>"
            f"<pre>{html.escape(verdict_table(verdict))}</pre></section>")  # fmt: skip
    head, sep, tail = page.partition("<body>")
    if not sep:  # a report without a body tag: the card goes first
        return card + page
    return head + sep + card + tail
