"""Run processes, owned by the process that started them (their parent). Each is a warm worker:
it imports torch and the harness once, then trains the runs its parent hands it, one at a time,
so that a small run does not pay seconds of start-up (issue 28, item 7). A run process that
writes its own log is forked from a server that imported torch once for all of them
(:func:`harness.launch.worker.server.run_context`): a submit of two processes imports torch
once, not twice, and a process that submits again (a notebook) not again.

The run pool (:mod:`harness.launch.worker.pool`), which both the local launcher and packed SLURM
tasks use, starts run processes this way:

- Signals are the parent's business. A run process leads a process group of its own (the
  terminal's Ctrl-C and SIGHUP reach its parent only) and ignores ``SIGTERM``, ``SIGINT``,
  ``SIGHUP`` and ``SIGUSR2`` (blocked from before it starts until it ignores them, so that a
  signal during its start-up, torch's import takes seconds, cannot kill it): a run killed by one
  would lose the work since its last checkpoint. The parent decides, through the process's stop
  event. It ignores them with a handler that does nothing, not ``SIG_IGN``: a process the user's
  code starts (fork and exec) gets the default actions back, and a plain fork has them reset
  (``os.register_at_fork``), so ``SIGTERM`` ends it. When a run process has exited, the pool
  kills its group: nothing the user's code forked outlives it (issue 44).
- The run it trains stops (checkpoints; reported :attr:`ExitKind.INTERRUPTED`) when its stop
  event is set, or when its parent is gone (killed with SIGKILL: multiprocessing's sentinel of
  the parent closes), so
  no run outlives the process that owns it; an idle process exits then too.
- A run stopped before its first step (while a slow constructor of the user's builds it) ends
  at once, with no checkpoint: :attr:`ExitKind.UNSTEPPED` (the pool says "not started").
- It reports each run's end on a queue as a :data:`Report`; a process that dies (killed, out of
  memory, crashed) reports nothing, and its exit code says how it died (:func:`exit_kind`).
- It takes another run only after a run that ended cleanly (:func:`takes_another`): a run
  stopped, failed (a CUDA error can leave the process unusable) or whose result was refused
  ends its process. Between runs it frees what the run held and resets torch.compile's
  in-memory state (Dynamo's caches), so each run compiles as in a fresh process (from the
  grid's on-disk cache) and a sweep of many shapes never hits Dynamo's recompile limit.
"""

from __future__ import annotations

import contextlib
import enum
import gc
import importlib
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import IO, Any

from harness.core.provenance import fingerprinted_code_changed
from harness.core.result import Status
from harness.launch.contract import ExecutionSpec
from harness.launch.worker.server import (
    PARENT_SIGNALS,
    RunContext,
    callers_main_left_out,
)
from harness.store.spill import ResultSpilled


class ExitKind(enum.Enum):
    """How a run ended: what its process reported, or what the exit code of a process that died
    while training it says."""

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
    RESTART = 79
    """Left its run untouched: code this process imported (an optimizer's file) changed on disk
    since (:func:`~harness.core.provenance.fingerprinted_code_changed`): a fresh process trains
    the run."""
    DIED = -1
    """Any other code, or a signal: killed (the kernel's OOM killer) or crashed."""


def exit_kind(exitcode: int) -> ExitKind:
    """What a run process's exit code says."""
    try:
        return ExitKind(exitcode) if exitcode >= 0 else ExitKind.DIED
    except ValueError:
        return ExitKind.DIED


Report = tuple[str, int, str, str]
"""What a run process reports when a run ends: (run_id, its :class:`ExitKind` value, its row's
status or '', a note: the spill line or '')."""

CLEAN_STATUSES = (Status.COMPLETED.value, Status.DIVERGED.value)
"""Row statuses after which a run process takes another run."""

IDLE_NAME = "harness-runs"
"""The name of an idle run process (``run-<run_id>`` while it trains that run)."""
IDLE_POLL_S = 0.5
"""Seconds an idle run process waits for its next run between checks of its parent."""


def takes_another(kind: ExitKind, status: Status | None) -> bool:
    """Whether a run process takes another run after one that ended so (module docstring)."""
    if kind in (ExitKind.BUSY, ExitKind.FINISHED_ELSEWHERE):
        return True  # it did not train
    return kind is ExitKind.RECORDED and status in CLEAN_STATUSES


@dataclass(frozen=True, slots=True)
class Task:
    """One run handed to a run process."""

    run_id: str
    """The planned run."""
    log: Path | None
    """File its stdout and stderr are appended to while it trains (None: the parent's)."""
    still_needed: Callable[[], bool] | None
    """Passed to :func:`~harness.launch.worker.job.run_job` (picklable)."""


@dataclass(slots=True)
class RunProcess:
    """A started run process and what its parent knows of it."""

    process: mp.process.BaseProcess
    """The process."""
    stop: Event
    """Set to make its run checkpoint and stop, and the process exit."""
    tasks: Connection
    """Where its parent sends it runs (:class:`Task`); closed: no more."""
    gpu: int | None = None
    """The GPU it was given (local launcher), None without."""
    run_id: str | None = None
    """The run it trains now (handed over, not reported yet), None while idle."""
    started: float = field(default_factory=time.monotonic)
    """When it was handed its current run (monotonic seconds)."""
    retiring: bool = False
    """It takes no more runs (stopped, or its last run did not end cleanly)."""

    def give(self, task: Task) -> None:
        """Hand it ``task``'s run (it must be idle)."""
        assert self.run_id is None and not self.retiring, (self.run_id, self.retiring)
        self.tasks.send(task)
        self.run_id, self.started = task.run_id, time.monotonic()
        self.process.name = f"run-{task.run_id}"  # this process's name for its run's time

    def retire(self) -> None:
        """Take no more runs: an idle process exits now, a busy one after its run."""
        self.retiring = True
        with contextlib.suppress(OSError):
            self.tasks.close()


def start(
    ctx: RunContext,
    spec: ExecutionSpec,
    reports: Any,
    *,
    job_id: str | None = None,
    env: Mapping[str, str] | None = None,
    gpu: int | None = None,
) -> RunProcess:
    """Start an idle run process for runs of ``spec.grid`` (see the module docstring); hand it
    runs with :meth:`RunProcess.give`.

    Args:
        ctx: how it starts (:func:`run_context`).
        spec: how its runs execute.
        reports: a ``ctx.SimpleQueue`` the process puts a :data:`Report` on per run.
        job_id: recorded in the rows (SLURM); None locally.
        env: environment variables set in the process before its first run, over this
            process's (all of them are handed over: a forked process would otherwise have the
            fork server's, as they were when it started).
        gpu: noted in the returned record.
    """
    stop = ctx.Event()
    receive, send = ctx.Pipe(duplex=False)
    args = (spec, job_id, stop, receive, reports, {**os.environ, **(env or {})})
    proc = ctx.Process(target=_child, args=args, name=IDLE_NAME)
    before = signal.pthread_sigmask(signal.SIG_BLOCK, PARENT_SIGNALS)
    try:
        with callers_main_left_out():
            proc.start()  # the child inherits the mask (through exec, or from the fork server,
            # started with it blocked), unblocks once it ignores them
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
    receive.close()  # the child's end
    return RunProcess(proc, stop, send, gpu=gpu)


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
    job_id: str | None,
    stop: Event,
    tasks: Connection,
    reports: Any,
    env: dict[str, str],
) -> None:
    """A run process: trains the runs it is handed, reports each, until told or made to stop."""
    os.setpgid(0, 0)  # a group of its own, killed by the pool once this process has exited
    for signum in PARENT_SIGNALS:
        signal.signal(signum, _left_to_the_parent)
    os.register_at_fork(after_in_child=_default_signals)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, PARENT_SIGNALS)  # blocked by start()
    os.environ.clear()
    os.environ.update(env)
    importlib.import_module("harness.launch.worker.job")  # torch, the harness: warm, then frozen
    parent = mp.parent_process()  # its sentinel closes when the parent dies, however it dies

    def should_stop() -> bool:
        return stop.is_set() or (parent is not None and not parent.is_alive())

    gc.collect()
    gc.freeze()  # torch and the harness, imported: never traversed by a collection again
    runs = 0
    while (task := _next_task(tasks, should_stop)) is not None:
        _output_to(task.log)
        changed = fingerprinted_code_changed()
        if changed:
            print(
                f"harness: {changed[0]} changed since this process imported it: run "
                f"{task.run_id} goes to a fresh process",
                file=sys.stderr,
            )
            kind, status, note = ExitKind.RESTART, None, ""
        else:
            kind, status, note = _one_run(spec, task, job_id, should_stop, stop)
        with contextlib.suppress(OSError):  # the parent is gone: the row on disk says it all
            reports.put((task.run_id, kind.value, status or "", note))
        if not takes_another(kind, status):
            return
        _between_runs()
        runs += 1
        if runs == 1:  # what the first run imported (Dynamo, the workload) is frozen too
            gc.freeze()


def _left_to_the_parent(signum: int, frame: object) -> None:
    """What a run process does on one of :data:`PARENT_SIGNALS`: nothing (the module
    docstring); unlike ``SIG_IGN``, an exec resets it to the default action."""


def _default_signals() -> None:
    """In a process forked from a run process (the user's code): the default actions."""
    for signum in PARENT_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)


def kill_group(pid: int | None) -> None:
    """SIGKILL what is left of the process group a run process ``pid`` led (its own forks and
    the user's: a sleeper forked by a constructor), once it has exited (None: never started)."""
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _next_task(tasks: Connection, should_stop: Callable[[], bool]) -> Task | None:
    """The next run, None when the parent closed the pipe, or stopped this process (or is gone)
    with no run handed over: a run handed over is taken even then, and checkpoints at once."""
    while True:
        stopping = should_stop()
        try:
            if tasks.poll(0 if stopping else IDLE_POLL_S):
                task: Task = tasks.recv()
                return task
        except (EOFError, OSError):
            return None
        if stopping:
            return None


def _one_run(
    spec: ExecutionSpec, task: Task, job_id: str | None, stopped: Callable[[], bool], stop: Event
) -> tuple[ExitKind, Status | None, str]:
    """Train ``task``'s run: (how it ended, its row's status if it has one, the spill line or
    '')."""
    from harness.launch.worker.job import RunBusy, RunFinishedElsewhere, run_job
    from harness.train.loop import StoppedBeforeFirstStep, TrainingInterrupted

    begun = threading.Event()  # set by the loop's first poll: the run is built

    def should_stop() -> bool:
        begun.set()
        return stopped()

    threading.Thread(target=_end_if_stopped_unbuilt, args=(stop, begun), daemon=True).start()
    try:
        status = run_job(
            spec,
            task.run_id,
            job_id=job_id,
            should_stop=should_stop,
            still_needed=task.still_needed,
        )
    except StoppedBeforeFirstStep:
        return ExitKind.UNSTEPPED, None, ""
    except TrainingInterrupted:
        return ExitKind.INTERRUPTED, None, ""
    except RunFinishedElsewhere as e:
        print(f"harness: {e}", file=sys.stderr)
        return ExitKind.FINISHED_ELSEWHERE, None, ""
    except RunBusy as e:
        print(f"harness: {e}", file=sys.stderr)
        return ExitKind.BUSY, None, ""
    except ResultSpilled as e:
        print(f"harness: {e.line}", file=sys.stderr)
        return ExitKind.SPILLED, e.status, e.line
    finally:
        begun.set()  # ends the watch: the next run has a watch of its own
    return ExitKind.RECORDED, status, ""


def _end_if_stopped_unbuilt(stop: Event, begun: threading.Event) -> None:
    """A run stopped while it is still being built (a slow constructor of the user's) has
    nothing to keep: its process ends at once (:attr:`ExitKind.UNSTEPPED`, no report), with no
    checkpoint, instead of when the constructor returns."""
    while not begun.is_set():
        if stop.wait(0.1) and not begun.is_set():
            os._exit(ExitKind.UNSTEPPED.value)


def _between_runs() -> None:
    """Free what the last run held; reset torch.compile's in-memory caches where a run compiled
    (module docstring). The modules imported before the first run and what it imported are
    frozen (``gc.freeze``: the cyclic collector never traverses them again), so the collection
    traverses what the last run made, not torch (0.16 s of CPU a run before, none after)."""
    import torch

    if "torch._dynamo" in sys.modules:  # imported by torch.compile: a run compiled
        torch._dynamo.reset()
    gc.collect()
    torch.cuda.empty_cache()  # a no-op where CUDA was never initialised


def _output_to(log: Path | None) -> None:
    """Send this process's stdout and stderr to ``log`` (appended; Python's writes never raise,
    so a full disk costs log lines, not the run), line by line; else keep them, line-buffered."""
    for stream in (sys.stdout, sys.stderr):  # the last run's lines, before its log changes
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
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
