"""The local launcher: runs on this machine through submitit's local executor, several at once.

Each run is its own process (a crash or an OOM kills one run, not the sweep). At most
``max_parallel`` run at once (default: one per core), and the cores are split between them as
torch threads. Blocks until every run has finished, with a live progress display.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import submitit

from harness import paths
from harness.config import RunConfig
from harness.launch.profile import LauncherProfile
from harness.launch.progress import Progress
from harness.launch.registry import LaunchReport


def available_cores() -> int:
    """Cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def split_cores(max_parallel: int, runs: int, cores: int | None = None) -> tuple[int, int]:
    """(runs at once, torch threads per run) for ``runs`` runs on ``cores`` cores."""
    cores = cores or available_cores()
    parallel = max(1, min(max_parallel or cores, runs or 1))
    return parallel, max(1, cores // parallel)


class LocalLauncher:
    """Runs a batch on this machine; see the module docstring."""

    def __init__(self, profile: LauncherProfile) -> None:
        self.profile = profile

    def launch(
        self,
        runs: Sequence[RunConfig],
        root: Path,
        grid: str,
        data_root: Path,
        *,
        wait: bool = True,
        show_progress: bool = True,
    ) -> LaunchReport:
        """Run ``runs`` (all of one grid) and wait for them; returns their statuses."""
        from harness.launch.job import run_job  # torch: not for a dry run, which only plans

        parallel, threads = split_cores(self.profile.max_parallel, len(runs))
        folder = paths.submissions_dir(root, grid) / "local"
        executor = submitit.LocalExecutor(folder=folder)
        executor.update_parameters(timeout_min=self.profile.timeout_min)
        progress = Progress(len(runs)) if show_progress else None
        pending = list(runs)
        active: dict[str, submitit.Job] = {}
        statuses: dict[str, str] = {}
        try:
            while pending or active:
                while pending and len(active) < parallel:
                    run = pending.pop(0)
                    active[run.run_id] = executor.submit(
                        run_job, str(root.resolve()), grid, run.run_id, str(data_root.resolve()),
                        threads, None, self.profile.keep_checkpoints,
                        self.profile.checkpoint_every_s,
                    )  # fmt: skip
                for run_id, job in list(active.items()):
                    if job.done():
                        statuses[run_id] = _outcome(job, root, grid, run_id)
                        del active[run_id]
                        if progress:
                            progress.finished(statuses[run_id])
                if progress:
                    progress.running = len(active)
                    progress.draw()
                time.sleep(0.2)
        except KeyboardInterrupt:
            for job in active.values():
                job.cancel(check=False)
            raise
        finally:
            if progress:
                progress.close()
        return LaunchReport(launched=len(runs), statuses=statuses)


def _outcome(job: submitit.Job, root: Path, grid: str, run_id: str) -> str:
    """The status a finished local job reported; if its process died before writing a row
    (killed, segfault), a ``failed`` row with the job's error is written so nothing is lost."""
    from harness.db import newest_values
    from harness.manifest import load_run
    from harness.outcome import RunResult
    from harness.provenance import provenance
    from harness.results import write_result

    try:
        return str(job.result())
    except Exception as exc:
        if not newest_values(root, grid, ["status"], run_id=run_id):  # per-run or compacted
            run = load_run(root, grid, run_id)
            error = "process died: " + "\n".join(str(exc).strip().splitlines()[-12:])
            write_result(root, run, RunResult(status="failed", error=error), provenance(job.job_id))
        return "failed"
