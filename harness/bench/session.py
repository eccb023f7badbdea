"""One bench, from a candidate's name to its verdict: what ``harness bench`` does, as one
library function (:func:`bench`, public as ``harness.api.bench``; the command parses its flags,
calls it and prints what it returns).

The steps: derive the candidate's grid under the protocol (:func:`harness.bench.derive.
derive_bench`), plan it (:func:`harness.bench.phases.plan`); a dry run then builds and steps
every configuration (the preflight) and returns. Otherwise the phases run
(:func:`harness.bench.phases.run`: tune, extend, confirm, the sequential stages), saying on
``out`` where they stand; once no run is queued the verdict is read (:func:`harness.bench.
verdict.judge`) and, when asked, the report card written. A bench stopped by a signal raises
:class:`~harness.core.errors.Stopped` ending in the command that resumes it.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from harness import services
from harness.bench import phases
from harness.bench.derive import Derived, derive_bench, preflight
from harness.bench.phases import Plan, Progress
from harness.bench.render import FORMATS, opening_line, plan_text, verdict_json, verdict_table
from harness.bench.shipped import scale_name
from harness.bench.verdict import Verdict, judge
from harness.core import paths
from harness.core.errors import Stopped, unknown_choice


@dataclass(frozen=True, slots=True)
class BenchResult:
    """What :func:`bench` did: its plan, then the preflight (a dry run) or where the phases
    stand and the verdict."""

    derived: Derived
    """The protocol, the arms and the grid file they were written to."""
    plan: Plan
    """Runs per phase and arm as planned before the phases ran, and their compute."""
    scale: str
    """How the output names the bench's scale (``local scale``, ``protocol my.yaml``)."""
    preflight: str | None = None
    """A dry run's preflight: what was built and stepped, a line per configuration (None:
    not a dry run)."""
    progress: Progress | None = None
    """Where the phases stand (None: a dry run)."""
    verdict: Verdict | None = None
    """The verdict per cell (None: a dry run, or runs still queued: run the bench again)."""
    card: Path | None = None
    """The HTML report card written (None: none asked, or no verdict yet)."""

    @property
    def dry_run(self) -> bool:
        """Whether this was a dry run (planned and preflighted, nothing trained)."""
        return self.progress is None

    @property
    def queued(self) -> bool:
        """Runs are queued on a backend that returned without waiting (bench again later)."""
        return self.progress is not None and self.progress.queued

    @property
    def faults(self) -> int:
        """Runs that failed or were lost (``harness bench`` exits 1 when there is any)."""
        return 0 if self.progress is None else self.progress.faults

    def text(self, fmt: str = "table") -> str:
        """What ``harness bench`` prints on stdout: a dry run's plan and preflight; else the
        verdict as an aligned table or as JSON (``fmt``), its caveats with it; empty while runs
        are queued.

        Raises:
            UserError: an unknown ``fmt`` (:data:`harness.bench.render.FORMATS`).
        """
        if fmt not in FORMATS:
            raise unknown_choice("--format", fmt, FORMATS)
        if self.preflight is not None:
            return f"{plan_text(self.plan, self.derived)}\npreflight: {self.preflight}"
        if self.verdict is None:
            return ""
        caveats = self.derived.candidate.caveats
        if fmt == "json":
            return verdict_json(self.verdict, caveats)
        return verdict_table(self.verdict, caveats)


def bench(
    candidate: str,
    *,
    protocol: str | Path | None = None,
    scale: str | None = None,
    launcher: str | None = None,
    dry_run: bool = False,
    wait: bool | None = None,
    html: str | Path | None = None,
    results: str | Path | None = None,
    data: str | Path | None = None,
    out: TextIO | None = None,
) -> BenchResult:
    """Bench ``candidate`` (an optimizer: ``torch.optim:SGD``, ``pytorch_optimizer:Lion``,
    ``./my_opt.py:MyOpt``) against a protocol's tuned baselines (``harness bench``).

    Args:
        candidate: the optimizer as a grid names it.
        protocol: a protocol file (None: the shipped one of ``scale``).
        scale: a shipped protocol: ``local``, ``paper`` or ``ci`` (None: ``local``).
        launcher: a launcher profile (None: the protocol's).
        dry_run: plan and build and step every configuration on the CPU; train nothing.
        wait: block until every phase has run (None: local runs block; SLURM returns once a
            phase is queued: bench again).
        html: also write the report card (the verdict, then ``harness report``) to this file.
        results: the results root (None: ``$HARNESS_RESULTS``, then ``./results``).
        data: where datasets are prepared (None: ``$HARNESS_DATA``, then the data home).
        out: where the plan's opening line, the phases' progress and what backends print while
            launching go (None: stdout).

    Returns:
        The plan, then the preflight (a dry run) or the phases' progress, the verdict (None
        while runs are queued) and the card written.

    Raises:
        UserError: bad input (an unknown candidate or scale, an invalid protocol, a
            configuration that cannot be built or stepped), before anything trains.
        Stopped: stopped by a signal; its last line is the command that resumes the bench.
    """
    root, droot = paths.results_root(results), services.data_dir(data)
    derived = derive_bench(candidate, root=root, scale=scale, protocol=protocol, launcher=launcher)
    planned = phases.plan(derived, root, droot)
    where = scale_name(scale, protocol)
    if dry_run:
        return BenchResult(derived, planned, where, preflight=preflight(derived, root, droot))
    stream = sys.stdout if out is None else out
    again = resume_command(candidate, protocol, scale, launcher, results, data, wait)
    how = phases.Launching(launcher, wait, stream)
    progress = _run_phases(derived, planned, where, root, droot, how, again)
    if progress.queued:  # submit said so ("queued: run the same command again ...")
        print(f"follow with 'harness status {planned.grid}'", file=stream, flush=True)
        return BenchResult(derived, planned, where, progress=progress)
    verdict = judge(derived, root, droot)
    card = None if html is None else _write_card(Path(html), verdict, derived, root, where)
    return BenchResult(derived, planned, where, progress=progress, verdict=verdict, card=card)


def _run_phases(
    derived: Derived,
    planned: Plan,
    where: str,
    root: Path,
    data_root: Path,
    how: phases.Launching,
    again: list[str],
) -> Progress:
    """The phases, after the plan's opening line and the tuning runs an earlier bench left;
    whatever a backend prints while launching goes to ``how.out`` too."""
    out = how.out
    print(opening_line(planned, where), file=out)
    for a in planned.arms:
        if a.tuning_done:
            print(
                f"{planned.grid}: {a.label}: {a.tuning_done} of {a.tuning} tuning runs have a "
                "result from an earlier bench (reused, not trained again)",
                file=out,
            )
    out.flush()
    to_out = contextlib.redirect_stdout(out) if out is not sys.stdout else contextlib.nullcontext()
    try:
        with to_out:
            most = planned.to_train_max
            return phases.run(derived, how, root=root, data_root=data_root, most=most)
    except Stopped as e:
        raise Stopped(e.signum, [*e.lines, f"resume with: {shlex.join(again)}"]) from None


def resume_command(
    candidate: str,
    protocol: str | Path | None,
    scale: str | None,
    launcher: str | None,
    results: str | Path | None,
    data: str | Path | None,
    wait: bool | None,
) -> list[str]:
    """The ``harness bench`` command, as arguments, that goes on with this bench where it
    stopped (the same candidate, protocol, launcher, folders and waiting)."""
    given = {"--protocol": protocol, "--scale": scale, "--launcher": launcher}
    given |= {"--results": results, "--data": data}
    again = ["harness", "bench", candidate]
    for flag, value in given.items():
        again += [flag, str(value)] if value else []
    return again + ([] if wait is None else ["--wait" if wait else "--no-wait"])


def _write_card(html: Path, verdict: Verdict, derived: Derived, root: Path, where: str) -> Path:
    """Write the report card (:func:`harness.bench.card.report_card`) to ``html``."""
    from harness.bench.card import report_card
    from harness.core.files import atomic_write_text

    atomic_write_text(html, report_card(verdict, derived, root, where))
    return html
