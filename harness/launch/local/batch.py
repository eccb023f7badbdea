"""The runs of one local launch: a :class:`~harness.launch.worker.pool.RunPool` on this machine,
and what became of each run, for ``submit``'s summary.

The pool starts, watches and stops the run processes and writes the rows a run process could not
write itself (it died; it ran past the profile's ``timeout_min``). The batch counts the outcomes,
and stops every run in order when the results file system refuses a result (a spill).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from harness.core import paths
from harness.core.config import RunConfig
from harness.launch.contract import ExecutionSpec
from harness.launch.local.settings import LocalSettings
from harness.launch.local.slots import split_cores
from harness.launch.progress import Progress, val_loss_of
from harness.launch.worker.pool import Ended, Outcome, RunPool

_OUTCOME_TEXT = {
    Outcome.KILLED: "killed before checkpointing (they resume from their last checkpoint)",
    Outcome.NOT_STARTED: "not started",
    Outcome.BUSY: "left to another process that trains them",
    Outcome.FINISHED_ELSEWHERE: "finished by another process meanwhile",
    Outcome.UNRECORDED: "not recorded: not in a readable manifest",
}
"""How :meth:`Batch.outcome_lines` says each outcome besides checkpointed and finished."""


class Batch:
    """The runs of one launch (module docstring)."""

    def __init__(
        self,
        settings: LocalSettings,
        runs: Sequence[RunConfig],
        spec: ExecutionSpec,
        gpus: list[int],
        seen: Mapping[str, int | None] | None = None,
    ) -> None:
        """``seen``: each run's row as ``submit`` saw it when it decided to train it."""
        per_gpu = settings.runs_per_device
        parallel, threads = split_cores(settings, len(runs), len(gpus))
        self.timeout_s = settings.timeout_min * 60.0
        self.pool = RunPool(
            spec.with_threads(threads),
            [r.run_id for r in runs],
            parallel=parallel,
            gpus=gpus,
            per_gpu=per_gpu,
            timeout_s=self.timeout_s,
            logs=paths.local_logs_dir(spec.results_root, spec.grid),
            seen=seen,
            wait_for_locks=True,
        )
        self.statuses: dict[str, str] = {}
        """run_id -> status of the runs that finished (their rows are written)."""
        self.outcomes: Counter[Outcome] = Counter()
        """Runs by what became of them."""
        self.spilled: list[str] = []
        """One line per result the results folder refused (kept in a spill file)."""

    @property
    def stopping(self) -> bool:
        """Whether the batch was stopped (a signal, a spill)."""
        return self.pool.stopping

    def collect(self, progress: Progress | None) -> None:
        """Start runs while there is room; record the runs that ended."""
        for end in self.pool.poll():
            self._note(end, progress)

    def _note(self, end: Ended, progress: Progress | None) -> None:
        self.outcomes[end.outcome] += 1
        if end.outcome is Outcome.SPILLED:
            self.spilled.append(end.note)
            self.stop()  # the results file system refuses: the other runs stop in order
        if end.status is not None:
            self.statuses[end.run_id] = end.status
            if progress:
                spec = self.pool.spec
                progress.finished(end.status, val_loss_of(spec.results_root, spec.grid, end.run_id))

    def stop(self) -> None:
        """Stop every running run (each checkpoints); start no more."""
        for end in self.pool.stop():
            self._note(end, None)

    def kill(self) -> None:
        """Kill every running run now (each loses the work since its last checkpoint)."""
        self.pool.kill()

    def outcome_lines(self) -> list[str]:
        """One line per outcome of a stopped batch."""
        done = Counter(self.statuses.values())
        lines = [
            f"  {self.outcomes[Outcome.CHECKPOINTED]} runs checkpointed (the same command run "
            "again, submit or bench, resumes them from there)"
        ]
        if done:
            counts = ", ".join(f"{k} {v}" for k, v in sorted(done.items()))
            lines.append(f"  {sum(done.values())} runs finished ({counts})")
        for what, text in _OUTCOME_TEXT.items():
            if self.outcomes[what]:
                lines.append(f"  {self.outcomes[what]} runs {text}")
        return lines
