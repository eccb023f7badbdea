"""The one pool of run processes: starts, watches, stops and drains them; each run ends in an
:class:`Outcome`.

Both the local launcher (:mod:`harness.launch.local.batch`) and packed SLURM tasks
(:mod:`harness.launch.worker.packing`) run their runs through a :class:`RunPool`. Runs train in
run processes (:mod:`harness.launch.worker.process`), one run at a time each, so a crash or an
OOM ends one run, not its neighbours; a process that ended a run cleanly takes the next one, so
torch and the harness are imported once per slot, not once per run. The pool handles, once for
every backend:

- **slots**: ``parallel`` run processes at once; with GPUs, each is given one, ``per_gpu`` per
  GPU; an idle process takes the next run, a slot without one starts a new process.
- **run locks**: a run whose lock another process holds is not started. With ``wait_for_locks``
  (a launcher that waits for its runs) it waits until the lock is free, then starts unless a row
  was written meanwhile, so that a run is never left missing because a dying process (an orphan
  of a killed ``submit``) held its lock for a moment; without, it is left to that process.
- **finished elsewhere**: a run whose row changed since the launch decided to train it (``seen``)
  is not trained again; the run process checks this again under the run lock.
- **stopping**: :meth:`RunPool.stop` makes every running run checkpoint and stop;
  :meth:`RunPool.kill` kills each running process once (no row: it resumes from its checkpoint).
  Processes left idle when no run waits are told to exit, and :attr:`RunPool.done` waits for them.
- **time limits**: a run past ``timeout_s`` checkpoints and gets a ``timeout`` row.
- **deaths**: a process killed from outside (the kernel's OOM killer) or crashed gets a
  ``failed`` row with the steps and loss curve it reached (its progress file) and its log's tail.
- **spills**: a result the results file system refused is in a spill file (:attr:`Ended.note`).
"""

from __future__ import annotations

import enum
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core import paths
from harness.core.errors import UserError
from harness.core.files import is_locked
from harness.core.result import Status
from harness.launch.contract import ExecutionSpec
from harness.launch.worker import process, server
from harness.launch.worker.process import ExitKind, RunProcess
from harness.store.rows import newest_row_file, read_row, row_marks, row_unchanged
from harness.store.spill import ResultSpilled

LOG_TAIL_LINES = 12
"""Lines of a dead run process's log quoted in its ``failed`` row."""


class Outcome(enum.Enum):
    """What became of a run the pool was given."""

    FINISHED = "finished"
    """It has its row (:attr:`Ended.status`): written by its process (or, for ``timeout`` and
    ``failed`` after a death, by the pool)."""
    SPILLED = "spilled"
    """Its result is in a spill file: the results file system refused it (:attr:`Ended.note`)."""
    CHECKPOINTED = "checkpointed"
    """Stopped by :meth:`RunPool.stop`: its checkpoint is on disk, it has no new row."""
    KILLED = "killed"
    """Killed by :meth:`RunPool.kill`: no new row; it resumes from its last checkpoint."""
    NOT_STARTED = "not started"
    """Never started, or stopped before its first step (the pool was stopped first): no
    checkpoint."""
    FINISHED_ELSEWHERE = "finished elsewhere"
    """Another process wrote its row since the launch decided to train it: left alone."""
    BUSY = "busy"
    """Another process trains it now (its run lock is held), and the pool does not wait."""
    UNRECORDED = "unrecorded"
    """Its process died and no row could be written: the run is not in a readable manifest."""


@dataclass(frozen=True, slots=True)
class Ended:
    """One run the pool is done with."""

    run_id: str
    """The run."""
    outcome: Outcome
    """What became of it."""
    status: Status | None = None
    """Its row's status (``FINISHED``, ``SPILLED``), else None."""
    note: str = ""
    """The spill line of a ``SPILLED`` run (path, cause, where the result is)."""


class RunPool:
    """Run processes of one grid's runs; see the module docstring."""

    def __init__(
        self,
        spec: ExecutionSpec,
        run_ids: Sequence[str],
        *,
        parallel: int,
        gpus: Sequence[int] | None = None,
        per_gpu: int = 1,
        timeout_s: float | None = None,
        job_id: str | None = None,
        logs: Path | None = None,
        seen: Mapping[str, int | None] | None = None,
        wait_for_locks: bool = False,
    ) -> None:
        """Args:
        spec: how the runs execute.
        run_ids: the runs, started in this order.
        parallel: runs at once (>= 1).
        gpus: GPU indices to give runs, one each (``CUDA_VISIBLE_DEVICES`` of its process;
            empty: none); None: the processes keep this process's devices (a SLURM task's).
        per_gpu: runs at once on one GPU (with ``gpus``).
        timeout_s: seconds a run may train before it is stopped and recorded as ``timeout``.
        job_id: recorded in the rows (SLURM).
        logs: folder of one log per run (``<run_id>.log``); None: this process's output.
        seen: each run's rows as the launch saw them when it decided to train it
            (:func:`~harness.store.rows.row_mark`); default: as they are now.
        wait_for_locks: wait for a run whose lock is held rather than leave it (see above).
        """
        assert parallel >= 1 and per_gpu >= 1, (parallel, per_gpu)
        self.spec, self.job_id, self.logs = spec, job_id, logs
        self.parallel, self.per_gpu, self.timeout_s = parallel, per_gpu, timeout_s
        self.wait_for_locks = wait_for_locks
        self.pending: list[str] = list(run_ids)
        """Runs not started yet, in order."""
        self.active: dict[str, RunProcess] = {}
        """Runs being trained, by run_id: the process training each."""
        self.processes: list[RunProcess] = []
        """Every run process not yet exited (training, idle or retiring)."""
        now = row_marks(spec.results_root, spec.grid) if seen is None else {}
        self.seen = {r: seen[r] if seen is not None and r in seen else now.get(r) for r in run_ids}
        self.gpus_given = gpus is not None
        self.on_gpu = dict.fromkeys(gpus or (), 0)
        self.stopping = False
        # forked from the server where each writes its own log and no GPU is given: a GPU run
        # process is spawned, as checked on GPUs (a process torch initialised CUDA in cannot fork)
        self._ctx = server.run_context(preloaded=logs is not None and not gpus)
        self._reports: Any = self._ctx.SimpleQueue()
        self._timed_out: set[str] = set()
        self._killed: set[str] = set()

    # --- what the caller sees -----------------------------------------------------------------
    @property
    def done(self) -> bool:
        """Whether every run has ended (or will never start) and every run process exited."""
        return not self.pending and not self.active and not self.processes

    def log(self, run_id: str) -> Path | None:
        """The run's log (its process's stdout and stderr), None without a logs folder."""
        return None if self.logs is None else self.logs / f"{run_id}.log"

    def poll(self) -> list[Ended]:
        """Start waiting runs while there is room; return the runs that ended since the last
        call (in the order they were noticed)."""
        ended = self._start_more()
        ended += self._reported_ends()
        for p in list(self.processes):
            code = p.process.exitcode
            if code is None:
                if p.run_id is not None:
                    self._check_time(p.run_id, p)
                continue
            self.processes.remove(p)
            process.kill_group(p.process.pid)  # what the user's code forked goes with it
            if p.gpu is not None:
                self.on_gpu[p.gpu] -= 1
            ended += self._reported_ends()  # put before it exited: read it before its death
            if p.run_id is not None:  # it died training its run
                run_id, p.run_id = p.run_id, None
                del self.active[run_id]
                end = self._ended(run_id, process.exit_kind(code), code=code)
                if end is not None:
                    ended.append(end)
        if not self.pending or self.stopping:
            for p in self.processes:
                if p.run_id is None and not p.retiring:
                    p.retire()  # no run waits for it: it exits
        return ended

    def _reported_ends(self) -> list[Ended]:
        """The runs whose processes reported their end since the last call."""
        ended = []
        for run_id, kind_value, reported, note in process.drain(self._reports):
            status = Status(reported) if reported else None  # '' on the wire: no row
            p = self.active.pop(run_id)
            p.run_id, p.process.name = None, process.IDLE_NAME
            kind = process.ExitKind(kind_value)
            if not process.takes_another(kind, status):
                p.retiring = True  # it exits by itself
            end = self._ended(run_id, kind, status, note)
            if end is not None:
                ended.append(end)
        return ended

    def stop(self) -> list[Ended]:
        """Stop every running run (each checkpoints) and start no more; returns the runs that
        will never start."""
        self.stopping = True
        never = [Ended(r, Outcome.NOT_STARTED) for r in self.pending]
        self.pending.clear()
        for p in self.processes:
            p.stop.set()
            p.retiring = True
        return never

    def kill(self) -> None:
        """Kill every running process now, once each (their runs lose the work since their last
        checkpoint and get no row: the next submit resumes them)."""
        for run_id, p in self.active.items():
            if run_id not in self._killed:
                self._killed.add(run_id)
                p.process.kill()
        for p in self.processes:
            if p.run_id is None:  # idle or retiring: nothing to lose
                p.retiring = True
                p.process.kill()

    # --- starting -----------------------------------------------------------------------------
    def _unchanged(self, run_id: str) -> bool:
        return row_unchanged(self.spec.results_root, self.spec.grid, run_id, self.seen[run_id])

    def _start_more(self) -> list[Ended]:
        """Start waiting runs while there are free slots; returns the runs left alone."""
        ended: list[Ended] = []
        for run_id in list(self.pending):
            idle = next((p for p in self.processes if p.run_id is None and not p.retiring), None)
            if self.stopping or (idle is None and len(self.processes) >= self.parallel):
                break
            gpu = gpu_for_next_run(self.on_gpu, self.per_gpu) if idle is None else idle.gpu
            if idle is None and self.on_gpu and gpu is None:
                break  # every GPU is full
            if not self._unchanged(run_id):
                self.pending.remove(run_id)
                ended.append(Ended(run_id, Outcome.FINISHED_ELSEWHERE))
                continue
            lock = paths.run_lock_path(self.spec.results_root, self.spec.grid, run_id)
            if is_locked(lock):
                if not self.wait_for_locks:
                    self.pending.remove(run_id)
                    ended.append(Ended(run_id, Outcome.BUSY))
                continue  # waits its turn: the lock is freed when its holder stops or dies
            self.pending.remove(run_id)
            self._start(run_id, idle or self._new_process(gpu))
        return ended

    def _new_process(self, gpu: int | None) -> RunProcess:
        """A new idle run process (on ``gpu`` when the pool gives GPUs)."""
        if gpu is not None:
            self.on_gpu[gpu] += 1
        env = {"CUDA_VISIBLE_DEVICES": "" if gpu is None else str(gpu)} if self.gpus_given else {}
        p = process.start(self._ctx, self.spec, self._reports, job_id=self.job_id, env=env, gpu=gpu)
        self.processes.append(p)
        return p

    def _start(self, run_id: str, p: RunProcess) -> None:
        """Hand ``run_id`` to the idle run process ``p``."""
        needed = functools.partial(
            row_unchanged, self.spec.results_root, self.spec.grid, run_id, self.seen[run_id]
        )
        p.give(process.Task(run_id, self.log(run_id), needed))
        self.active[run_id] = p

    def _check_time(self, run_id: str, p: RunProcess) -> None:
        """Stop a run past the time limit (it checkpoints; :meth:`_ended` records it)."""
        late = self.timeout_s is not None and time.monotonic() - p.started > self.timeout_s
        if late and not p.stop.is_set():
            self._timed_out.add(run_id)
            p.stop.set()
            p.retiring = True  # its stop event stays set: it takes no other run

    # --- ending -------------------------------------------------------------------------------
    def _ended(
        self,
        run_id: str,
        kind: ExitKind,
        status: Status | None = None,
        note: str = "",
        code: int = 0,
    ) -> Ended | None:
        """What became of a run that ended so (its process's report, or the exit ``code`` of a
        process that died training it); None: it waits again."""
        if kind is ExitKind.RECORDED and status is not None:
            return Ended(run_id, Outcome.FINISHED, status)
        if kind is ExitKind.SPILLED:
            return Ended(run_id, Outcome.SPILLED, status, note)
        if kind is ExitKind.FINISHED_ELSEWHERE:
            return Ended(run_id, Outcome.FINISHED_ELSEWHERE)
        if kind is ExitKind.RESTART and not self.stopping:
            self.pending.insert(0, run_id)  # untouched: a fresh process trains it
            return None
        if kind is ExitKind.RESTART:
            return Ended(run_id, Outcome.NOT_STARTED)
        if kind is ExitKind.BUSY:
            if self.wait_for_locks and not self.stopping:
                self.pending.insert(0, run_id)  # its lock was taken meanwhile: wait for it
                return None
            return Ended(run_id, Outcome.BUSY)
        if kind is ExitKind.UNSTEPPED and run_id not in self._timed_out:
            return Ended(run_id, Outcome.NOT_STARTED)  # stopped while being built: no checkpoint
        if kind in (ExitKind.INTERRUPTED, ExitKind.UNSTEPPED) and run_id in self._timed_out:
            limit = f"{self.timeout_s / 60:g} min" if self.timeout_s else "its limit"
            error = (
                f"ran past timeout_min ({limit}) of the launcher profile on this machine; "
                "checkpoint kept"
            )
            return self._record(run_id, Status.TIMEOUT, error)
        if kind is ExitKind.INTERRUPTED:
            return Ended(run_id, Outcome.CHECKPOINTED)
        if not self._unchanged(run_id):
            return Ended(run_id, Outcome.FINISHED, _row_status(self.spec, run_id))  # then died
        if run_id in self._killed:
            return Ended(run_id, Outcome.KILLED)
        return self._record(run_id, Status.FAILED, self._death(run_id, code))

    def _death(self, run_id: str, code: int) -> str:
        """The error of a run whose process died: how, and the tail of its log."""
        error = f"run process died {process.died_how(code)} (killed, out of memory, or crashed)"
        log = self.log(run_id)
        if log is None:
            return error
        tail = _tail(log, LOG_TAIL_LINES)
        return f"{error}; log {log}" + ("\n" + tail if tail else "")

    def _record(self, run_id: str, status: Status, error: str) -> Ended:
        """Write the row of a run its process could not record (with what it reached)."""
        from harness.launch.worker.job import write_status  # torch: only once a process died

        try:
            write_status(self.spec.results_root, self.spec.grid, run_id, status, error, self.job_id)
        except ResultSpilled as e:
            return Ended(run_id, Outcome.SPILLED, status, e.line)
        except (KeyError, UserError):  # no longer in the manifest, or the manifest is corrupt
            return Ended(run_id, Outcome.UNRECORDED)
        return Ended(run_id, Outcome.FINISHED, status)


def drain(
    pool: RunPool, *, poll_s: float = 0.2, on_end: Callable[[Ended], None] | None = None
) -> list[Ended]:
    """Poll ``pool`` every ``poll_s`` until it is done; returns every run's end."""
    out: list[Ended] = []
    while not pool.done:
        for end in pool.poll():
            out.append(end)
            if on_end is not None:
                on_end(end)
        if not pool.done:
            time.sleep(poll_s)
    return out


def gpu_for_next_run(running: dict[int, int], per_gpu: int) -> int | None:
    """The GPU with the fewest running runs (the lowest index on ties), None when every GPU
    already runs ``per_gpu`` (or there are none); ``running`` maps GPU index -> its runs."""
    gpu = min(running, key=lambda g: (running[g], g), default=None)
    return gpu if gpu is not None and running[gpu] < per_gpu else None


def _row_status(spec: ExecutionSpec, run_id: str) -> Status:
    """The status in a run's newest row file (``failed`` when it cannot be read)."""
    path = newest_row_file(spec.results_root, spec.grid, run_id)
    try:
        return Status(str(read_row(path)["status"])) if path is not None else Status.FAILED
    except (OSError, ValueError, KeyError, IndexError):
        return Status.FAILED


def _tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of a text file ('' when unreadable)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - 16_384))
            text = fh.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])
