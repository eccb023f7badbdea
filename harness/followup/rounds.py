"""``submit`` with its follow-up rounds: the grid's runs, then (``--extend``/``--confirm``) the
runs planned from their results, round after round until nothing is added.

The loop that ``harness submit`` runs, as a library function
(:func:`harness.api.submit` calls it); what it prints goes to the streams it is handed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from harness.core.config import RunConfig
from harness.grid.load import Grid
from harness.launch.submit import SubmitReport, submit


@dataclass(frozen=True, slots=True)
class Submitted:
    """What a submit and its follow-up rounds did."""

    reports: tuple[SubmitReport, ...]
    """One per round (the grid's runs first)."""
    faults: int
    """Runs that failed or were lost, over every round (``harness submit`` exits 1 then)."""
    queued: bool = False
    """Follow-up rounds wait for runs the backend queued: submit again once they finish."""

    @property
    def last(self) -> SubmitReport:
        """The last round's report."""
        return self.reports[-1]


@dataclass(slots=True)
class _Planner:
    """The runs ``--extend``/``--confirm`` add to a grid (:mod:`harness.followup.planning`),
    said on ``err`` as they are planned; a dry run also describes their compute on ``out``."""

    root: Path
    extend: bool
    confirm: bool
    dry_run: bool
    out: TextIO
    err: TextIO
    describe: bool = field(default=True)
    per_arm: bool = False
    more: tuple[RunConfig, ...] = ()
    """Runs added to every round's (``harness bench``'s sequential confirmation seeds)."""

    def __call__(self, g: Grid) -> tuple[RunConfig, ...]:
        from harness.followup.planning import follow_up

        found = follow_up(
            g, self.root, extend=self.extend, confirm=self.confirm, per_arm=self.per_arm
        )
        for line in found.lines:
            print(f"{g.name}: {line}", file=self.err)
        print(f"{g.name}: {len(found.new)} new run(s) planned", file=self.err)
        if self.dry_run and found.new and self.describe:
            from harness.grid.preview import describe
            from harness.launch.sizes import count_params

            print(describe(found.new, g.axes, count_params), file=self.out)
        return (*found.runs, *self.more)


def submit_rounds(
    grid: str | Path | Grid,
    *,
    root: Path,
    data_root: Path,
    local: bool = False,
    launcher: str | None = None,
    dry_run: bool = False,
    retry: Collection[str] = (),
    wait: bool | None = None,
    stale: str = "refuse",
    plan_format: str = "table",
    check: bool = False,
    extend: bool = False,
    confirm: bool = False,
    per_arm: bool = False,
    more: Sequence[RunConfig] = (),
    out: TextIO,
    err: TextIO,
) -> Submitted:
    """Submit ``grid`` (a file, or a grid expanded in memory: :func:`harness.launch.submit.
    submit`, same arguments), then, with
    ``extend`` or ``confirm``, plan again once the runs have finished and submit what is added,
    until nothing is (``per_arm``: each arm planned on its own rows,
    :func:`harness.followup.planning.follow_up`; ``more``: runs added to the planned ones).
    Each round's outcome (``finished: ...``,
    ``lost: ...``) is printed on ``out``; follow-up lines go to ``err`` when the plan is printed
    as csv or json, else ``out``.
    """
    from harness.analysis.present.figures import FIGURES

    said = err if plan_format != "table" else out
    planner = (
        _Planner(
            root, extend, confirm, dry_run, out, said, plan_format == "table", per_arm, tuple(more)
        )
        if extend or confirm
        else None
    )

    def once() -> SubmitReport:
        report = submit(
            grid,
            root=root,
            data_root=data_root,
            local=local,
            launcher=launcher,
            dry_run=dry_run,
            retry=retry,
            wait=wait,
            stale=stale,
            plan_format=plan_format,
            check=check,
            figure_names=FIGURES.names(),
            more=planner,
            out=out,
        )
        _say_finished(report, out)
        return report

    reports = [once()]
    # plan again once the runs have finished, until nothing is added (runs another process
    # trained meanwhile have ended too: this submit joins its rounds; a round whose runs all
    # ended without a row ends the loop)
    while planner is not None and not dry_run and _again(reports[-1]):
        if not reports[-1].statuses:
            print(
                f"{reports[-1].grid}: another process trained this round's runs; planning the "
                "next round",
                file=out,
            )
        reports.append(once())
    last = reports[-1]
    queued = planner is not None and not dry_run and bool(last.launched) and not last.waited
    if queued:
        print("queued: run the same command again once they finish (or add --wait)", file=out)
    return Submitted(tuple(reports), sum(r.faults for r in reports), queued)


def _again(report: SubmitReport) -> bool:
    """Whether a round's runs all ended (waited for), so that the next round can be planned."""
    return bool(report.launched) and report.waited and bool(report.statuses or not report.lost)


def _say_finished(report: SubmitReport, out: TextIO) -> None:
    """What became of the runs a round waited for."""
    if report.statuses:
        counts: dict[str, int] = {}
        for s in report.statuses.values():
            counts[s] = counts.get(s, 0) + 1
        print("finished: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), file=out)
    if report.lost:
        print(
            f"lost: {len(report.lost)} runs ended without a row: {', '.join(report.lost)}", file=out
        )
