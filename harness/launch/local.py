"""The local launcher: runs on this machine through submitit's local executor, several at once.

Each run is its own process (a crash or an OOM kills one run, not the sweep). Without a GPU, at
most ``max_parallel`` run at once (default: one per core). With GPUs (those ``CUDA_VISIBLE_DEVICES``
leaves visible), each run is given one GPU, ``runs_per_device`` runs per GPU at once (default 1;
``max_parallel`` caps the total when set). Either way the cores are split between the running
runs as torch threads. Blocks until every run has finished, with a live progress display.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import submitit

from harness import paths
from harness.config import RunConfig
from harness.errors import UserError
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


def local_gpus() -> list[int]:
    """Indices of the GPUs runs may use: those ``CUDA_VISIBLE_DEVICES`` names, else all.

    Raises:
        UserError: ``CUDA_VISIBLE_DEVICES`` names GPUs by UUID (runs are given GPUs by index).
    """
    import torch

    n = torch.cuda.device_count()  # honours CUDA_VISIBLE_DEVICES
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if n == 0 or env is None:
        return list(range(n))
    ids = [x.strip() for x in env.split(",") if x.strip()][:n]
    if not all(x.isdigit() for x in ids):
        raise UserError(
            f"CUDA_VISIBLE_DEVICES={env!r}: the local launcher gives runs GPUs by index; "
            "name them by index (e.g. 0,1)"
        )
    return [int(x) for x in ids]


def gpu_for_next_run(running: dict[int, int], per_gpu: int) -> int | None:
    """The GPU with the fewest running runs (the lowest index on ties), None when every GPU
    already runs ``per_gpu``; ``running`` maps GPU index -> its running runs."""
    gpu = min(running, key=lambda g: (running[g], g), default=None)
    return gpu if gpu is not None and running[gpu] < per_gpu else None


class LocalLauncher:
    """Runs a batch on this machine; see the module docstring."""

    def __init__(self, profile: LauncherProfile, gpus: Sequence[int] | None = None) -> None:
        """``gpus``: GPU indices to give runs (default: :func:`local_gpus`; ``[]``: none)."""
        self.profile = profile
        self._gpus = None if gpus is None else list(gpus)

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

        gpus = local_gpus() if self._gpus is None else self._gpus
        per_gpu = self.profile.runs_per_device
        slots = self.profile.max_parallel or (len(gpus) * per_gpu if gpus else 0)
        parallel, threads = split_cores(slots, len(runs))
        folder = paths.submissions_dir(root, grid) / "local"
        executor = submitit.LocalExecutor(folder=folder)
        executor.update_parameters(timeout_min=self.profile.timeout_min)
        progress = Progress(len(runs)) if show_progress else None
        pending = list(runs)
        active: dict[str, tuple[submitit.Job, int | None]] = {}
        on_gpu = dict.fromkeys(gpus, 0)  # GPU index -> runs on it now
        statuses: dict[str, str] = {}
        try:
            while pending or active:
                while pending and len(active) < parallel:
                    gpu = gpu_for_next_run(on_gpu, per_gpu)  # None without GPUs
                    if on_gpu and gpu is None:
                        break  # every GPU is full
                    if gpu is not None:  # submitit sets CUDA_VISIBLE_DEVICES to this one
                        executor.update_parameters(gpus_per_node=1, visible_gpus=[gpu])
                        on_gpu[gpu] += 1
                    run = pending.pop(0)
                    job = executor.submit(
                        run_job, str(root.resolve()), grid, run.run_id, str(data_root.resolve()),
                        threads, None, self.profile.keep_checkpoints,
                        self.profile.checkpoint_every_s,
                    )  # fmt: skip
                    active[run.run_id] = (job, gpu)
                for run_id, (job, gpu) in list(active.items()):
                    if job.done():
                        statuses[run_id] = _outcome(job, root, grid, run_id)
                        del active[run_id]
                        if gpu is not None:
                            on_gpu[gpu] -= 1
                        if progress:
                            progress.finished(statuses[run_id])
                if progress:
                    progress.running = len(active)
                    progress.draw()
                time.sleep(0.2)
        except KeyboardInterrupt:
            for job, _ in active.values():
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
