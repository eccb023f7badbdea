"""What one SLURM array task executes: its packed runs, one after another, resumable.

The task is a ``submitit.helpers.Checkpointable``. Signals never interrupt a training step: the
task records them and the training loop polls the record once per step (all ranks agree through
an all-reduce), writes a checkpoint and stops. Then:

- ``USR2`` (submitit's ``--signal``: time limit ahead, or preemption): submitit's own handler is
  called, which requeues the task (counting time limits against ``max_num_timeout``); a task
  that timed out too often records its run as ``timeout``.
- ``SIGTERM``: the controller tells why. A requeue (``scontrol requeue``, preemption) restarts
  the task, which resumes from the checkpoint; the time limit records ``timeout``; anything
  else (``scancel``) records ``cancelled``. The checkpoint is kept, so a retry resumes.

Never twice: a task is handed each run's rows as ``submit`` saw them (``seen``, the highest
attempt). Just before training a run, under its run lock, it checks that they are unchanged: a
run that has a newer row from any other job (queued twice by submits that raced, or finished by
a local submit meanwhile), or whose lock another process holds, is left alone. A restarted task
skips the runs it already finished (their rows carry its job id) and resumes the one it was
training. At start it reads only its own runs' rows, never the whole grid's.

With ``per_device > 1`` (the profile's ``runs_per_device``) a one-process task trains that many of
its runs at once on its device, each in its own process (:mod:`harness.launch.worker.packing`); a
signal then stops all of them, and each interrupted run is requeued or recorded as above.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import Any

import submitit
from submitit.core.utils import UncompletedJobError

from harness.core import env
from harness.core.result import Status
from harness.launch.contract import ExecutionSpec
from harness.launch.slurm.scheduler import SchedulerError, job_fields
from harness.launch.worker import distributed
from harness.launch.worker.job import (
    RunBusy,
    RunFinishedElsewhere,
    run_job,
    write_status,
    written_by_job,
)
from harness.launch.worker.packing import PackInterrupted, run_packed
from harness.store.rows import RowMark, row_mark, row_unchanged
from harness.store.spill import ResultSpilled
from harness.train.loop import TrainingInterrupted

_Handler = Callable[[int, FrameType | None], Any] | int | None


class _Signals:
    """Records USR2 and SIGTERM instead of acting on them; keeps submitit's USR2 handler."""

    def __init__(self) -> None:
        early = os.environ.pop(env.EARLY_SIGNAL.name, None)  # arrived before submitit's handlers
        self.caught: int | None = signal.SIGUSR2 if early == "SIGUSR2" else None
        self.submitit_usr2: _Handler = signal.getsignal(signal.SIGUSR2)
        signal.signal(signal.SIGUSR2, self._record)
        signal.signal(signal.SIGTERM, self._record)

    def _record(self, signum: int, frame: FrameType | None) -> None:
        if self.caught != signal.SIGUSR2:  # USR2 (requeue through submitit) takes precedence
            self.caught = signum
        name = signal.Signals(signum).name
        print(f"harness: caught {name}; stopping at the next step", flush=True)

    def stop_requested(self) -> bool:
        """Whether any rank caught a signal (a collective call: every rank polls together)."""
        return distributed.any_rank(self.caught is not None)


def sigterm_status() -> Status | None:
    """Why SLURM sent SIGTERM: None for a requeue (the job restarts), ``timeout`` for the time
    limit, ``cancelled`` otherwise (scancel). A controller that cannot answer counts as a requeue
    (nothing is recorded; the next submit, cancel or ``--wait`` classifies the job from sacct)."""
    try:
        job_id = env.SLURM_JOB_ID.get()
        if job_id is None:
            return None
        fields = job_fields(job_id)
    except SchedulerError:
        return None
    restarts = int(fields.get("Restarts", "0") or 0)
    if restarts > int(env.SLURM_RESTART_COUNT.get() or 0):
        return None
    return Status.TIMEOUT if fields.get("Reason") == "TimeLimit" else Status.CANCELLED


class RunTask(submitit.helpers.Checkpointable):
    """One array task: train ``run_ids`` of ``spec.grid`` in order, ``per_device`` at once on a
    one-process task (see the module docstring). ``seen``: each run's rows as ``submit`` saw
    them (:func:`~harness.store.rows.row_mark`; a run missing from it: as the task finds them
    when it starts)."""

    def __init__(
        self,
        spec: ExecutionSpec,
        run_ids: Sequence[str],
        per_device: int = 1,
        seen: Mapping[str, RowMark | None] | None = None,
    ) -> None:
        self.spec, self.run_ids, self.per_device = spec, tuple(run_ids), per_device
        self.seen = dict(seen or {})

    def __call__(self) -> dict[str, str]:
        """Train the task's runs; returns run_id -> status of the runs finished by this task."""
        signals = _Signals()
        several_ranks = distributed.init_from_job()
        job_id = submitit.JobEnvironment().job_id
        try:
            if self.per_device > 1:  # decided by the launcher (SlurmSettings.per_device)
                assert not several_ranks, "a run of several ranks is never packed"
                return self._packed(signals, job_id)
            return self._in_order(signals, job_id)
        finally:
            distributed.shutdown()

    def _start(self, job_id: str) -> tuple[dict[str, str], dict[str, RowMark | None]]:
        """From this task's own runs' rows only: the statuses of the runs this job finished in
        an earlier start (skipped), and the rows of each other run to find unchanged before
        training it (:func:`~harness.store.rows.row_mark`): as ``submit`` saw them, but as they
        are now for a run this very job wrote a row of since (a ``cancelled`` row of a requeue
        that looked like a cancellation: resumed)."""
        root, grid = self.spec.results_root, self.spec.grid
        mine = written_by_job(root, grid, self.run_ids, job_id)
        statuses = {r: status for r, status in mine.items() if status != Status.CANCELLED}
        seen = {
            r: row_mark(root, grid, r) if r in mine or r not in self.seen else self.seen[r]
            for r in self.run_ids
            if r not in statuses
        }
        return statuses, seen

    def _in_order(self, signals: _Signals, job_id: str) -> dict[str, str]:
        """The runs one after another in this process (every rank of a DDP task together)."""
        statuses, seen = self._start(job_id)
        for run_id in self.run_ids:
            if run_id in statuses:
                continue
            if signals.stop_requested():
                return self._stop(signals, [run_id], job_id, statuses)
            unchanged = functools.partial(
                row_unchanged, self.spec.results_root, self.spec.grid, run_id, seen[run_id]
            )
            try:
                statuses[run_id] = run_job(
                    self.spec,
                    run_id,
                    job_id=job_id,
                    should_stop=signals.stop_requested,
                    still_needed=unchanged,
                )
            except TrainingInterrupted:
                return self._stop(signals, [run_id], job_id, statuses)
            except RunFinishedElsewhere as e:  # a row from another job since submit: not again
                print(f"harness: {e}; left alone", flush=True)
            except RunBusy as e:  # trained by another process now: left to it
                print(f"harness: {e}", flush=True)
            except ResultSpilled as e:  # the next submit writes it
                print(f"harness: {e.line}", flush=True)
                statuses[run_id] = e.status
        return statuses

    def _packed(self, signals: _Signals, job_id: str) -> dict[str, str]:
        """``per_device`` runs at once, each in its own process, splitting the CPU threads."""
        threads = max(1, (self.spec.threads or 1) // self.per_device)
        statuses, seen = self._start(job_id)
        try:
            statuses |= run_packed(
                self.spec.with_threads(threads),
                list(seen),
                per_device=self.per_device,
                job_id=job_id,
                should_stop=signals.stop_requested,
                seen=seen,
            )
        except PackInterrupted as e:
            return self._stop(signals, e.interrupted, job_id, statuses | dict(e.statuses))
        return statuses

    def _stop(
        self, signals: _Signals, run_ids: Sequence[str], job_id: str, statuses: dict[str, str]
    ) -> dict[str, str]:
        """Act on the signal that stopped ``run_ids`` (their checkpoints are on disk): requeue the
        task, or record them as ``timeout`` or ``cancelled``. Runs of the task that never started
        get no row (see :mod:`harness.launch.slurm.reconcile`)."""
        if signals.caught == signal.SIGUSR2 and callable(signals.submitit_usr2):
            if distributed.rank() != 0:
                sys.exit(-1)  # rank 0 requeues the whole job
            try:
                signals.submitit_usr2(signal.SIGUSR2, None)  # requeues and exits
            except UncompletedJobError as e:  # timed out more than max_num_timeout times
                error = f"time limit reached too often, not requeued ({e}); checkpoint kept"
                return self._record(run_ids, Status.TIMEOUT, error, job_id, statuses)
        status = sigterm_status()
        if status is None:
            names = ", ".join(run_ids)
            print(f"harness: job {job_id} is being requeued; {names} resume", flush=True)
            sys.exit(-1)
        reason = {
            Status.TIMEOUT: "job hit its time limit",
            Status.CANCELLED: "job was cancelled (scancel)",
        }
        return self._record(run_ids, status, f"{reason[status]} at {job_id}", job_id, statuses)

    def _record(
        self,
        run_ids: Sequence[str],
        status: Status,
        error: str,
        job_id: str,
        statuses: dict[str, str],
    ) -> dict[str, str]:
        for run_id in run_ids:
            if distributed.rank() == 0:
                try:
                    write_status(
                        self.spec.results_root, self.spec.grid, run_id, status, error, job_id
                    )
                except ResultSpilled as e:
                    print(f"harness: {e.line}", flush=True)
            statuses[run_id] = status
        return statuses
