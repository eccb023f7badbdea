"""The local launcher: runs on this machine through submitit's local executor, several at once.

Each run is its own process (a crash or an OOM kills one run, not the sweep). Without a GPU, at
most ``max_parallel`` run at once (default: one per core). With GPUs (those ``CUDA_VISIBLE_DEVICES``
leaves visible), each run is given one GPU, ``runs_per_device`` runs per GPU at once (default 1;
``max_parallel`` caps the total when set). Either way the cores are split between the running
runs as torch threads. The runs are this process's children: ``launch`` starts the first of
them and ``wait`` (which ``submit`` always calls for this backend) runs the rest, with a live
progress display.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import submitit

from harness.core import paths
from harness.core.config import RunConfig
from harness.core.result import RunResult, Status
from harness.launch.contract import ExecutionSpec, Launched, LaunchReport
from harness.launch.local.slots import gpu_for_next_run, local_gpus, split_cores
from harness.launch.profile import LauncherProfile
from harness.launch.progress import Progress


class _Batch:
    """The runs of one launch: those waiting, those running, and the statuses of those done."""

    def __init__(self, profile: LauncherProfile, runs: Sequence[RunConfig], spec: ExecutionSpec,
                 gpus: list[int]) -> None:  # fmt: skip
        self.per_gpu = profile.runs_per_device
        slots = profile.max_parallel or (len(gpus) * self.per_gpu if gpus else 0)
        self.parallel, threads = split_cores(slots, len(runs))
        self.spec = spec.with_threads(threads)
        self.executor = submitit.LocalExecutor(
            folder=paths.submissions_dir(spec.results_root, spec.grid) / "local"
        )
        self.executor.update_parameters(timeout_min=profile.timeout_min)
        self.pending = list(runs)
        self.active: dict[str, tuple[submitit.Job, int | None]] = {}
        self.on_gpu = dict.fromkeys(gpus, 0)  # GPU index -> runs on it now
        self.statuses: dict[str, str] = {}

    def start_more(self) -> None:
        """Start waiting runs while there are free slots (and free GPUs, with GPUs)."""
        from harness.launch.worker.job import run_job  # torch: not for a dry run

        while self.pending and len(self.active) < self.parallel:
            gpu = gpu_for_next_run(self.on_gpu, self.per_gpu)  # None without GPUs
            if self.on_gpu and gpu is None:
                break  # every GPU is full
            if gpu is not None:  # submitit sets CUDA_VISIBLE_DEVICES to this one
                self.executor.update_parameters(gpus_per_node=1, visible_gpus=[gpu])
                self.on_gpu[gpu] += 1
            run = self.pending.pop(0)
            self.active[run.run_id] = (self.executor.submit(run_job, self.spec, run.run_id), gpu)

    def collect(self, progress: Progress | None) -> None:
        """Record the runs whose process ended."""
        for run_id, (job, gpu) in list(self.active.items()):
            if job.done():
                self.statuses[run_id] = _outcome(job, self.spec, run_id)
                del self.active[run_id]
                if gpu is not None:
                    self.on_gpu[gpu] -= 1
                if progress:
                    progress.finished(self.statuses[run_id])

    def cancel(self) -> None:
        """Stop every running run."""
        for job, _ in self.active.values():
            job.cancel(check=False)


class LocalLauncher:
    """Runs a batch on this machine; see the module docstring."""

    detaches = False
    """Local runs are this process's children: ``submit`` always waits for them."""

    def __init__(self, profile: LauncherProfile, gpus: Sequence[int] | None = None) -> None:
        """``gpus``: GPU indices to give runs (default: :func:`local_gpus`; ``[]``: none)."""
        self.profile = profile
        self._gpus = None if gpus is None else list(gpus)

    def plan(self, runs: Sequence[RunConfig]) -> str:
        """The dry-run summary: how many runs at once (no torch: GPUs are not counted)."""
        parallel, threads = split_cores(self.profile.max_parallel, len(runs))
        return (
            f"local launcher {self.profile.name!r}: {len(runs)} runs on this machine, "
            f"{parallel} at once with {threads} torch threads each "
            f"(with GPUs: {self.profile.runs_per_device} per GPU)"
        )

    def reconcile(self, root: Path, grid: str) -> dict[str, str]:
        """Nothing to reconcile: a local run whose process dies gets its row from ``wait``."""
        return {}

    def exclude_queued(self, root: Path, grid: str, runs: Sequence[RunConfig]) -> list[RunConfig]:
        """Nothing is queued locally between submissions: every run without a result runs."""
        return list(runs)

    def launch(self, runs: Sequence[RunConfig], spec: ExecutionSpec) -> Launched:
        """Start the first of ``runs`` (all of one grid); ``wait`` runs the rest."""
        gpus = local_gpus() if self._gpus is None else self._gpus
        batch = _Batch(self.profile, runs, spec, gpus)
        batch.start_more()
        return Launched(len(runs), batch)

    def wait(
        self, launched: Launched, spec: ExecutionSpec, *, show_progress: bool = True
    ) -> LaunchReport:
        """Run the batch to its end; Ctrl-C stops its runs."""
        batch: _Batch = launched.handle
        progress = Progress(launched.runs) if show_progress else None
        try:
            while batch.pending or batch.active:
                batch.collect(progress)
                batch.start_more()
                if progress:
                    progress.running = len(batch.active)
                    progress.draw()
                time.sleep(0.2)
        except KeyboardInterrupt:
            batch.cancel()
            raise
        finally:
            if progress:
                progress.close()
        return LaunchReport(launched=launched.runs, statuses=batch.statuses)


def _outcome(job: submitit.Job, spec: ExecutionSpec, run_id: str) -> str:
    """The status a finished local job reported; if its process died before writing a row
    (killed, segfault), a ``failed`` row with the job's error is written so nothing is lost."""
    from harness.core.provenance import provenance
    from harness.store.db import newest_values
    from harness.store.manifest import load_run
    from harness.store.rows import write_result

    try:
        return str(job.result())
    except Exception as exc:
        root, grid = spec.results_root, spec.grid
        if not newest_values(root, grid, ["status"], run_id=run_id):  # per-run or compacted
            run = load_run(root, grid, run_id)
            error = "process died: " + "\n".join(str(exc).strip().splitlines()[-12:])
            result = RunResult(status=Status.FAILED, error=error)
            write_result(root, run, result, provenance(job.job_id))
        return Status.FAILED.value
