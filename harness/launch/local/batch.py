"""The runs of one local launch: waiting, running (each in a process of its own), done.

The batch owns its run processes (:mod:`harness.launch.worker.process`): it starts them, stops
them in order (each checkpoints), records what became of each, and writes the rows a run process
could not write itself (it died; it ran past the profile's ``timeout_min``).
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from harness.core import paths
from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.core.result import Status
from harness.launch.contract import ExecutionSpec
from harness.launch.local.slots import gpu_for_next_run, split_cores
from harness.launch.profile import LauncherProfile
from harness.launch.progress import Progress
from harness.launch.worker import process
from harness.launch.worker.job import row_stamp, row_unchanged, write_status
from harness.launch.worker.process import BUSY_EXIT, INTERRUPTED_EXIT, SPILLED_EXIT, RunProcess
from harness.store.rows import read_row
from harness.store.spill import ResultSpilled

LOG_TAIL_LINES = 12
"""Lines of a dead run process's log quoted in its ``failed`` row."""
_OUTCOME_TEXT = {
    "killed": "killed before checkpointing (they resume from their last checkpoint)",
    "not started": "not started",
    "busy": "left to another process that trains them",
    "unrecorded": "not recorded: not in a readable manifest",
}
"""How :meth:`Batch.outcome_lines` says each outcome besides checkpointed and finished."""


class Batch:
    """The runs of one launch (module docstring)."""

    def __init__(self, profile: LauncherProfile, runs: Sequence[RunConfig], spec: ExecutionSpec,
                 gpus: list[int]) -> None:  # fmt: skip
        self.per_gpu = profile.runs_per_device
        slots = profile.max_parallel or (len(gpus) * self.per_gpu if gpus else 0)
        self.parallel, threads = split_cores(slots, len(runs))
        self.spec = spec.with_threads(threads)
        self.timeout_s = profile.timeout_min * 60.0
        self.root, self.grid = spec.results_root, spec.grid
        self.ctx = process.spawn_context()
        self.reports = self.ctx.SimpleQueue()
        self.pending = list(runs)
        self.seen = {r.run_id: row_stamp(self._row(r.run_id)) for r in runs}  # rows as decided
        self.active: dict[str, RunProcess] = {}
        self.on_gpu = dict.fromkeys(gpus, 0)  # GPU index -> runs on it now
        self.statuses: dict[str, str] = {}
        """run_id -> status of the runs that finished."""
        self.outcomes: Counter[str] = Counter()
        """Runs that did not finish, by what became of them (``checkpointed``, ``busy``, ...)."""
        self.spilled: list[str] = []
        """One line per result the results folder refused (kept in a spill file)."""
        self.stopping = False
        self._reported: dict[str, tuple[str, str]] = {}
        self._timed_out: set[str] = set()

    def _row(self, run_id: str) -> Path:
        return paths.run_path(self.root, self.grid, run_id)

    def log(self, run_id: str) -> Path:
        """The run's log (stdout and stderr of its process)."""
        return paths.submissions_dir(self.root, self.grid) / "local" / f"{run_id}.log"

    def start_more(self) -> None:
        """Start waiting runs while there are free slots (and free GPUs, with GPUs)."""
        while self.pending and len(self.active) < self.parallel and not self.stopping:
            gpu = gpu_for_next_run(self.on_gpu, self.per_gpu)  # None without GPUs
            if self.on_gpu and gpu is None:
                break  # every GPU is full
            if gpu is not None:
                self.on_gpu[gpu] += 1
            run_id = self.pending.pop(0).run_id
            needed = functools.partial(row_unchanged, self._row(run_id), self.seen[run_id])
            self.active[run_id] = process.start(
                self.ctx, self.spec, run_id, self.reports, log=self.log(run_id), gpu=gpu,
                env={"CUDA_VISIBLE_DEVICES": "" if gpu is None else str(gpu)},
                still_needed=needed,
            )  # fmt: skip

    def collect(self, progress: Progress | None) -> None:
        """Record the runs whose process ended; stop those past the profile's time limit."""
        for run_id, p in list(self.active.items()):
            code = p.process.exitcode
            if code is None:
                if not p.stop.is_set() and time.monotonic() - p.started > self.timeout_s:
                    self._timed_out.add(run_id)
                    p.stop.set()
                continue
            for reported, said, note in process.drain(self.reports):  # put before its exit
                self._reported[reported] = (said, note)
            del self.active[run_id]
            if p.gpu is not None:
                self.on_gpu[p.gpu] -= 1
            status = self._ended(run_id, code)
            if status is not None:
                self.statuses[run_id] = status
                if progress:
                    progress.finished(status)

    def _ended(self, run_id: str, code: int) -> str | None:
        """What became of a run whose process exited with ``code``: its status, or None (an
        outcome counted in :attr:`outcomes`)."""
        status, note = self._reported.get(run_id, ("", ""))
        if code == 0 and status:
            return status
        if code == BUSY_EXIT:
            self.outcomes["busy"] += 1
            return None
        if code == SPILLED_EXIT:
            self.spilled.append(note)
            self.stop()  # the results file system refuses: the other runs stop in order
            return status
        if code == INTERRUPTED_EXIT and run_id not in self._timed_out:
            self.outcomes["checkpointed"] += 1
            return None
        if code == INTERRUPTED_EXIT:
            limit = f"{self.timeout_s / 60:g} min"
            return self._record(run_id, Status.TIMEOUT, f"ran past timeout_min ({limit}) of the "
                                "launcher profile on this machine; checkpoint kept")  # fmt: skip
        if not row_unchanged(self._row(run_id), self.seen[run_id]):
            return _row_status(self._row(run_id))  # it wrote its row, then died or went quiet
        how = process.died_how(code)
        tail = _tail(self.log(run_id), LOG_TAIL_LINES)
        error = f"process died {how} (killed, out of memory, or crashed); log {self.log(run_id)}"
        return self._record(run_id, Status.FAILED, error + ("\n" + tail if tail else ""))

    def _record(self, run_id: str, status: str, error: str) -> str | None:
        """Write a row for a run its process could not record; returns its status (None when
        the run is not in the manifest to record it by)."""
        try:
            write_status(self.root, self.grid, run_id, status, error, None)
        except ResultSpilled as e:
            self.spilled.append(e.line)
            self.stop()
        except (KeyError, UserError):  # no longer in the manifest, or the manifest is corrupt
            self.outcomes["unrecorded"] += 1
            return None
        return str(status)

    def stop(self) -> None:
        """Stop every running run (each checkpoints); start no more."""
        if not self.stopping:
            self.outcomes["not started"] += len(self.pending)
        self.stopping = True
        self.pending.clear()
        for p in self.active.values():
            p.stop.set()

    def kill(self) -> None:
        """Kill every running run now (each loses the work since its last checkpoint)."""
        for p in self.active.values():
            p.process.kill()
            self.outcomes["killed"] += 1

    def outcome_lines(self) -> list[str]:
        """One line per outcome of a stopped batch."""
        done = Counter(self.statuses.values())
        lines = [f"  {self.outcomes['checkpointed']} runs checkpointed (the next submit resumes "
                 "them from there)"]  # fmt: skip
        if done:
            counts = ", ".join(f"{k} {v}" for k, v in sorted(done.items()))
            lines.append(f"  {sum(done.values())} runs finished ({counts})")
        for what, text in _OUTCOME_TEXT.items():
            if self.outcomes[what]:
                lines.append(f"  {self.outcomes[what]} runs {text}")
        return lines


def _row_status(path: Path) -> str:
    """The status in a run's row file (``failed`` when it cannot be read)."""
    try:
        return str(read_row(path)["status"])
    except (OSError, ValueError, KeyError, IndexError):
        return Status.FAILED.value


def _tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of a text file ('' when unreadable)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - 16_384))
            text = fh.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])
