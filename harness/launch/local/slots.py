"""How many local runs at once, on which GPUs, with how many torch threads each."""

from __future__ import annotations

import os
from pathlib import Path

from harness.core.env import CUDA_VISIBLE_DEVICES
from harness.core.errors import UserError
from harness.launch.local.settings import LocalSettings


def available_cores() -> int:
    """Cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def split_cores(
    settings: LocalSettings, runs: int, gpus: int = 0, cores: int | None = None
) -> tuple[int, int]:
    """(runs at once, torch threads per run) for ``runs`` runs on ``gpus`` GPUs and ``cores``
    cores (default: :func:`available_cores`).

    The pool has ``max_parallel`` slots, else ``runs_per_device`` per GPU, else one per core;
    runs at once are its slots, at most ``runs``. A run's threads are the profile's
    ``threads_per_run``, else the cores divided between the pool's slots: never between the runs
    of this submission, so that a run computes the same numbers alone as among many."""
    cores = cores or available_cores()
    slots = settings.max_parallel or gpus * settings.runs_per_device or cores
    threads = settings.threads_per_run or max(1, cores // slots)
    return max(1, min(slots, runs or 1)), threads


GPU_DRIVER_FILES = ("/proc/driver/nvidia", "/dev/nvidia0", "/dev/nvidiactl", "/dev/kfd", "/dev/dxg")
"""Files one of which a machine whose GPUs torch can use has (NVIDIA's driver, ROCm's, WSL's);
without any, :func:`local_gpus` knows there are none without importing torch."""


def local_gpus() -> list[int]:
    """Indices of the GPUs runs may use: those ``CUDA_VISIBLE_DEVICES`` names, else all.

    Raises:
        UserError: ``CUDA_VISIBLE_DEVICES`` names GPUs by UUID (runs are given GPUs by index).
    """
    env = CUDA_VISIBLE_DEVICES.get()
    if env == "" or not any(Path(p).exists() for p in GPU_DRIVER_FILES):
        return []  # no GPU torch could see: torch (seconds of start-up) is not imported
    import torch

    n = torch.cuda.device_count()  # honours CUDA_VISIBLE_DEVICES
    if n == 0 or env is None:
        return list(range(n))
    ids = [x.strip() for x in env.split(",") if x.strip()][:n]
    if not all(x.isdigit() for x in ids):
        raise UserError(
            f"CUDA_VISIBLE_DEVICES={env!r}: the local launcher gives runs GPUs by index; "
            "name them by index (e.g. 0,1)"
        )
    return [int(x) for x in ids]
