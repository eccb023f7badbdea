"""The local launcher: runs on this machine, each in a process of its own, several at once.

A crash or an OOM kills one run, not the sweep. Without a GPU, at most ``max_parallel`` run at
once (default: one per core). With GPUs (those ``CUDA_VISIBLE_DEVICES`` leaves visible), each run
is given one GPU, ``runs_per_device`` runs per GPU at once (default 1; ``max_parallel`` caps the
total when set). Each run has the profile's ``threads_per_run`` torch threads, else the cores
divided between the pool's slots (whatever the number of runs: a run computes the same numbers
alone as among many); its BLAS one (:mod:`harness.launch.worker.threads`). Each
run's output goes to ``<results>/<grid>/submissions/local/<run_id>.log``.

``submit`` owns its runs (:mod:`harness.launch.local.batch`): on Ctrl-C, SIGTERM or SIGHUP (a
closed terminal) every running run checkpoints and stops, and ``submit`` prints what became of
them and exits with 128 + the signal's number (a second Ctrl-C kills them at once); if ``submit``
dies (``kill -9``), its runs notice within a training step, checkpoint and stop. A run being
trained by another process (its run lock is held) is never started twice: the batch waits for the
lock, then trains the run unless it has a new row by then (a ``submit`` killed a moment ago
leaves runs that hold their locks until they notice; a submit that exits 0 leaves no run
missing).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

from harness.core.config import RunConfig
from harness.core.errors import Stopped, UserError
from harness.launch.contract import ExecutionSpec, Launched, LaunchReport, Seen
from harness.launch.local.settings import LocalSettings
from harness.launch.local.slots import local_gpus, split_cores
from harness.launch.profile import LauncherProfile
from harness.launch.progress import Progress

if TYPE_CHECKING:
    from harness.launch.local.batch import Batch

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Signals that make ``submit`` stop its runs in order (each checkpoints)."""
KILL_AFTER_S = 120.0
"""Seconds stopping runs get to checkpoint when ``submit`` itself fails, before being killed."""


class LocalLauncher:
    """Runs a batch on this machine; see the module docstring."""

    detaches = False
    """Local runs are this process's children: ``submit`` always waits for them."""

    def __init__(self, profile: LauncherProfile[Any], gpus: Sequence[int] | None = None) -> None:
        """``gpus``: GPU indices to give runs (default: :func:`local_gpus`; ``[]``: none)."""
        if not isinstance(profile.settings, LocalSettings):
            raise TypeError(f"profile {profile.name!r} is not a local profile")
        self.profile = profile
        self.settings: LocalSettings = profile.settings
        self._gpus = None if gpus is None else list(gpus)

    def plan(self, runs: Sequence[RunConfig]) -> str:
        """The dry-run summary: how many runs at once (no torch: GPUs are not counted)."""
        parallel, threads = split_cores(self.settings, len(runs))
        return (
            f"local launcher {self.profile.name!r}: {len(runs)} runs on this machine, "
            f"{parallel} at once with {threads} torch threads each "
            f"(with GPUs: {self.settings.runs_per_device} per GPU)"
        )

    def reconcile(self, root: Path, grid: str) -> dict[str, str]:
        """Nothing to reconcile: a local run whose process dies gets its row from ``wait``."""
        return {}

    def launch(
        self, runs: Sequence[RunConfig], spec: ExecutionSpec, seen: Seen | None = None
    ) -> Launched:
        """Plan the batch of ``runs`` (all of one grid); ``wait`` starts and runs them. A run
        whose row changed since ``seen`` is not trained (finished elsewhere meanwhile)."""
        from harness.launch.local.batch import Batch  # torch, via the worker: not for a dry run

        gpus = local_gpus() if self._gpus is None else self._gpus
        return Launched(len(runs), Batch(self.settings, runs, spec, gpus, seen))

    def wait(
        self, launched: Launched, spec: ExecutionSpec, *, show_progress: bool = True
    ) -> LaunchReport:
        """Run the batch to its end (see the module docstring for signals).

        Raises:
            Stopped: a signal stopped the batch; its lines say what became of the runs.
            UserError: the results file system refused a result (kept in a spill file); the
                other runs were stopped in order.
        """
        from harness.launch.worker.pool import Outcome  # torch, via the worker

        batch: Batch = launched.handle
        progress = Progress(launched.runs) if show_progress else None
        with _Signals() as signals:
            try:
                _run(batch, signals, progress)
            except BaseException:
                _shut_down(batch)  # a failure of submit itself: its runs stop first
                raise
            finally:
                if progress:
                    progress.close()
        elsewhere = batch.outcomes[Outcome.FINISHED_ELSEWHERE]
        if elsewhere:
            print(f"{elsewhere} runs left alone: another process finished them meanwhile")
        if signals.signum is not None:
            name = signal.Signals(signals.signum).name
            raise Stopped(signals.signum, [f"stopped by {name}:", *batch.outcome_lines()])
        if batch.spilled:
            more = f" (and {len(batch.spilled) - 1} more)" if len(batch.spilled) > 1 else ""
            lines = [ln.strip() for ln in batch.outcome_lines() if not ln.startswith("  0 ")]
            raise UserError(f"{batch.spilled[0]}{more}; {'; '.join(lines)}")
        return LaunchReport(launched=launched.runs, statuses=batch.statuses)


def _run(batch: Batch, signals: _Signals, progress: Progress | None) -> None:
    """The batch's loop: start runs, collect the ended, stop all on a signal or a spill."""
    while not batch.pool.done:
        if signals.count and not batch.stopping:
            batch.stop()
            _say(
                f"stopping: {len(batch.pool.active)} runs are checkpointing (Ctrl-C again kills "
                "them)"
            )
        if signals.count > 1:
            batch.kill()  # each process once; they get no row and resume from their checkpoint
        batch.collect(progress)
        if progress:
            progress.running = len(batch.pool.active)
            progress.draw()
        time.sleep(0.2)


def _shut_down(batch: Batch) -> None:
    """Stop every run, give them :data:`KILL_AFTER_S` to checkpoint, kill the rest."""
    batch.stop()
    deadline = time.monotonic() + KILL_AFTER_S
    while batch.pool.active and time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            batch.collect(None)
        time.sleep(0.2)
    batch.kill()


def _say(line: str) -> None:
    """A line on stderr; a terminal gone (SIGHUP) silences it."""
    with contextlib.suppress(OSError):
        print(line, file=sys.stderr, flush=True)


class _Signals:
    """While entered, :data:`STOP_SIGNALS` are counted instead of acted on (main thread only)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        """The first signal received."""
        self.count = 0
        """Signals received."""
        self._before: dict[int, object] = {}

    def _record(self, signum: int, frame: FrameType | None) -> None:
        self.signum = self.signum or signum
        self.count += 1

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for s in STOP_SIGNALS:
                self._before[s] = signal.signal(s, self._record)
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        for s, handler in self._before.items():
            signal.signal(s, handler)  # type: ignore[arg-type]  # None: a handler not set from Python
