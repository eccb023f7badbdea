"""A run in a process of its own, owned by the process that started it (its parent).

The run pool (:mod:`harness.launch.worker.pool`), which both the local launcher and packed SLURM
tasks use, starts runs this way:

- Signals are the parent's business. The run process ignores ``SIGTERM``, ``SIGINT``, ``SIGHUP``
  and ``SIGUSR2`` (blocked from before it starts until it ignores them, so that a signal during
  its start-up, torch's import takes seconds, cannot kill it): Ctrl-C in a terminal, a closed
  terminal or SLURM signal the whole process group, and a run killed by one would lose the work
  since its last checkpoint. The parent decides, through the run's stop event.
- The run stops (checkpoints, exits :attr:`ExitKind.INTERRUPTED`) when its stop event is set, or
  when its parent is gone (killed with SIGKILL: the run is re-parented), so no run outlives the
  process that owns it.
- A run stopped before its first step (while a slow constructor of the user's builds it) ends
  at once, with no checkpoint: :attr:`ExitKind.UNSTEPPED` (the pool says "not started").
- It reports its row's status on a queue as ``(run_id, status, note)`` and exits with a code that
  says what became of it; :func:`exit_kind` reads it back (the pool turns it into an
  :class:`~harness.launch.worker.pool.Outcome`; the codes are this module's business).
"""

from __future__ import annotations

import contextlib
import enum
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing import resource_tracker
from multiprocessing.context import SpawnContext
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import IO, Any

from harness.launch.contract import ExecutionSpec
from harness.launch.worker.job import RunBusy, RunFinishedElsewhere, run_job
from harness.store.spill import ResultSpilled
from harness.train.loop import StoppedBeforeFirstStep, TrainingInterrupted


class ExitKind(enum.Enum):
    """How a run process ended, as its exit code says."""

    RECORDED = 0
    """Its run's row is written (its status was reported)."""
    SPILLED = 74
    """Its result went to a spill file (:class:`ResultSpilled`; the spill line was reported)."""
    INTERRUPTED = 75
    """Stopped by its stop event or its parent's death; its checkpoint is on disk."""
    BUSY = 76
    """Left its run alone: another process holds the run lock (:class:`RunBusy`)."""
    FINISHED_ELSEWHERE = 77
    """Left its run alone: its row changed since the launch (:class:`RunFinishedElsewhere`)."""
    UNSTEPPED = 78
    """Stopped before its first step (:class:`StoppedBeforeFirstStep`): no checkpoint."""
    DIED = -1
    """Any other code, or a signal: killed (the kernel's OOM killer) or crashed."""


def exit_kind(exitcode: int) -> ExitKind:
    """What a run process's exit code says."""
    try:
        return ExitKind(exitcode) if exitcode >= 0 else ExitKind.DIED
    except ValueError:
        return ExitKind.DIED


PARENT_SIGNALS = (signal.SIGTERM, signal.SIGUSR2, signal.SIGINT, signal.SIGHUP)
"""Signals a run process leaves to its parent (see the module docstring)."""

Report = tuple[str, str, str]
"""What a run process reports: (run_id, its row's status, a note: the spill line or '')."""


@dataclass(slots=True)
class RunProcess:
    """A started run process and what its parent knows of it."""

    run_id: str
    """The run it trains."""
    process: mp.process.BaseProcess
    """The process."""
    stop: Event
    """Set to make the run checkpoint and stop."""
    started: float = field(default_factory=time.monotonic)
    """When it was started (monotonic seconds)."""
    gpu: int | None = None
    """The GPU it was given (local launcher), None without."""


def spawn_context() -> SpawnContext:
    """Run processes are spawned: CUDA cannot be forked, and each gets a fresh interpreter.

    multiprocessing's resource tracker (a helper process the parent's queues and events need)
    is started with :data:`PARENT_SIGNALS` blocked, so that a signal to the process group (a
    closed terminal's SIGHUP) does not kill it: it would be restarted with tracebacks. It is
    also told (a ``-W`` option, passed on from ``sys.warnoptions``) not to warn of "leaked
    semaphore objects" when it cleans up after a parent killed with SIGKILL: the cleanup is its
    job, and the user's terminal is not the place for the warning."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, PARENT_SIGNALS)
    options = list(sys.warnoptions)
    sys.warnoptions.append(TRACKER_QUIET)
    try:
        resource_tracker.ensure_running()
    finally:
        sys.warnoptions[:] = options
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
    return mp.get_context("spawn")


TRACKER_QUIET = "ignore:resource_tracker:UserWarning"
"""The ``-W`` filter the resource tracker is started with (its cleanup warnings)."""


def start(
    ctx: SpawnContext,
    spec: ExecutionSpec,
    run_id: str,
    reports: Any,
    *,
    job_id: str | None = None,
    log: Path | None = None,
    env: Mapping[str, str] | None = None,
    still_needed: Callable[[], bool] | None = None,
    gpu: int | None = None,
) -> RunProcess:
    """Start a process training ``run_id`` (see the module docstring).

    Args:
        ctx: the spawn context (:func:`spawn_context`).
        spec: how the run executes.
        run_id: the planned run.
        reports: a ``ctx.SimpleQueue`` the process puts its :data:`Report` on.
        job_id: recorded in the row (SLURM); None locally.
        log: file the process appends its stdout and stderr to (None: the parent's).
        env: environment variables set in the process before the run starts.
        still_needed: passed to :func:`~harness.launch.worker.job.run_job` (picklable).
        gpu: noted in the returned record.
    """
    stop = ctx.Event()
    args = (spec, run_id, job_id, os.getpid(), stop, reports, log, dict(env or {}), still_needed)
    proc = ctx.Process(target=_child, args=args, name=f"run-{run_id}")
    before = signal.pthread_sigmask(signal.SIG_BLOCK, PARENT_SIGNALS)
    try:
        proc.start()  # the child inherits the mask through exec and unblocks once it ignores them
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
    return RunProcess(run_id, proc, stop, gpu=gpu)


def drain(reports: Any) -> list[Report]:
    """The reports run processes put on ``reports`` since the last call."""
    out: list[Report] = []
    while not reports.empty():
        out.append(reports.get())
    return out


def died_how(exitcode: int) -> str:
    """``by SIGKILL`` or ``with exit code 3``: how a run process ended."""
    if exitcode < 0:
        return f"by {signal.Signals(-exitcode).name}"
    return f"with exit code {exitcode}"


def _child(
    spec: ExecutionSpec,
    run_id: str,
    job_id: str | None,
    parent: int,
    stop: Event,
    reports: Any,
    log: Path | None,
    env: dict[str, str],
    still_needed: Callable[[], bool] | None,
) -> None:
    """One run in its own process; reports its status, or exits with a code saying why not."""
    for signum in PARENT_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, PARENT_SIGNALS)  # blocked by start()
    os.environ.update(env)
    _output_to(log)

    begun = threading.Event()  # set by the loop's first poll: the run is built

    def should_stop() -> bool:
        begun.set()
        return stop.is_set() or os.getppid() != parent  # a dead parent re-parents us

    threading.Thread(target=_end_if_stopped_unbuilt, args=(stop, begun), daemon=True).start()

    try:
        status = run_job(
            spec, run_id, job_id=job_id, should_stop=should_stop, still_needed=still_needed
        )
    except StoppedBeforeFirstStep:
        sys.exit(ExitKind.UNSTEPPED.value)
    except TrainingInterrupted:
        sys.exit(ExitKind.INTERRUPTED.value)
    except RunFinishedElsewhere as e:
        print(f"harness: {e}", file=sys.stderr)
        sys.exit(ExitKind.FINISHED_ELSEWHERE.value)
    except RunBusy as e:
        print(f"harness: {e}", file=sys.stderr)
        sys.exit(ExitKind.BUSY.value)
    except ResultSpilled as e:
        print(f"harness: {e.line}", file=sys.stderr)
        _report(reports, (run_id, e.status, e.line))
        sys.exit(ExitKind.SPILLED.value)
    _report(reports, (run_id, status, ""))


def _end_if_stopped_unbuilt(stop: Event, begun: threading.Event) -> None:
    """A run stopped while it is still being built (a slow constructor of the user's) has
    nothing to keep: its process ends at once, with no checkpoint, instead of when the
    constructor returns."""
    while not begun.is_set():
        if stop.wait(0.1) and not begun.is_set():
            os._exit(ExitKind.UNSTEPPED.value)


def _report(reports: Any, report: Report) -> None:
    with contextlib.suppress(OSError):  # the parent is gone: the row on disk says it all
        reports.put(report)


def _output_to(log: Path | None) -> None:
    """Send this process's stdout and stderr to ``log`` (appended; Python's writes never raise,
    so a full disk costs log lines, not the run), line by line; else keep them, line-buffered."""
    if log is None:
        for stream in (sys.stdout, sys.stderr):  # lines reach the task's log as they come
            if hasattr(stream, "reconfigure"):
                stream.reconfigure(line_buffering=True)
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)  # C-level writes (torch's warnings) too
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = sys.stderr = _Quiet(open(1, "w", buffering=1, closefd=False))  # noqa: SIM115


class _Quiet:
    """A text stream whose writes never raise (a full disk must not fail a run)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        with contextlib.suppress(OSError, ValueError):
            return self._stream.write(text)
        return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
