"""The in-process launcher: each run trained in the calling process, one after another, with the
caller's state put back after each (:mod:`harness.launch.inprocess.state`).

What it is: the local launcher's rows without its processes. A run goes through the same
:func:`~harness.launch.worker.job.run_job` as in a run process (run lock, ``seen`` checked
under it, row, spill, checkpoint removal), with the profile's torch threads and one BLAS thread,
so its row is the local launcher's but for the columns that record when and where it ran
(``created_at``, ``wall_s``). Its output goes to ``<results>/<grid>/submissions/inprocess/
<run_id>.log``. A test that submits only to have results pays a run's own cost (a quadratic run:
hundredths of a second), not a pool's (a fork server, a process per slot importing the harness:
seconds of CPU per submit).

What it is not: a sandbox. The user's code runs in the caller: a crash, an ``os._exit``, a hang
or an out-of-memory ends or stalls the caller; there is no time limit, no GPU given per run, no
parallelism and no signal handling (Ctrl-C interrupts the run being trained, which keeps no
checkpoint). Tests of those behaviours use the ``local`` launcher's real processes.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.core import paths
from harness.core.config import RunConfig
from harness.launch.contract import ExecutionSpec, Launched, LaunchReport, Seen
from harness.launch.inprocess.settings import InProcessSettings
from harness.launch.profile import LauncherProfile

LOGS = "inprocess"
"""The folder under ``<grid>/submissions`` that holds the runs' logs."""


class InProcessLauncher:
    """Trains the runs in this process; see the module docstring."""

    detaches = False
    """Its runs train inside ``submit``: it always waits."""

    def __init__(self, profile: LauncherProfile[Any]) -> None:
        if not isinstance(profile.settings, InProcessSettings):
            raise TypeError(f"profile {profile.name!r} is not an inprocess profile")
        self.profile = profile
        self.settings: InProcessSettings = profile.settings

    def plan(self, runs: Sequence[RunConfig]) -> str:
        """The dry-run summary."""
        threads = self.settings.threads_per_run or "the caller's"
        return (
            f"in-process launcher {self.profile.name!r}: {len(runs)} runs one after another in "
            f"this process, {threads} torch threads each"
        )

    def reconcile(self, root: Path, grid: str) -> dict[str, str]:
        """Nothing to reconcile: a run that fails gets its row from :func:`run_job`."""
        return {}

    def launch(
        self, runs: Sequence[RunConfig], spec: ExecutionSpec, seen: Seen | None = None
    ) -> Launched:
        """Note the runs; :meth:`wait` trains them."""
        threads = self.settings.threads_per_run or None
        return Launched(len(runs), ([r.run_id for r in runs], spec.with_threads(threads), seen))

    def wait(
        self, launched: Launched, spec: ExecutionSpec, *, show_progress: bool = True
    ) -> LaunchReport:
        """Train each run in turn; a run whose row changed since ``seen``, or whose lock another
        process holds, is left alone (not in the report's statuses).

        Raises:
            ResultSpilled: the results file system refused a result (kept in a spill file).
        """
        from harness.launch.inprocess.state import callers_state_kept
        from harness.launch.worker.job import RunBusy, run_job
        from harness.store.rows import row_marks, row_unchanged

        run_ids, spec, seen = launched.handle
        marks = row_marks(spec.results_root, spec.grid) if seen is None else seen
        statuses: dict[str, str] = {}
        for run_id in run_ids:
            mark = marks.get(run_id)
            if not row_unchanged(spec.results_root, spec.grid, run_id, mark):
                continue
            log = paths.submissions_dir(spec.results_root, spec.grid) / LOGS / f"{run_id}.log"
            with callers_state_kept(), _output_to(log), contextlib.suppress(RunBusy):
                needed = functools.partial(
                    row_unchanged, spec.results_root, spec.grid, run_id, mark
                )
                statuses[run_id] = run_job(spec, run_id, still_needed=needed)
        return LaunchReport(launched=launched.runs, statuses=statuses)


@contextlib.contextmanager
def _output_to(log: Path) -> Iterator[None]:
    """Python's stdout and stderr appended to ``log`` inside the block."""
    log.parent.mkdir(parents=True, exist_ok=True)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    with (
        open(log, "a", buffering=1) as fh,
        contextlib.redirect_stdout(fh),
        contextlib.redirect_stderr(fh),
    ):
        yield
