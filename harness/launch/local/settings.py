"""The local backend's profile section (``kind: local``) and its registry declaration."""

from __future__ import annotations

from dataclasses import dataclass

from harness.launch.profile import Backend


@dataclass(frozen=True, kw_only=True, slots=True)
class LocalSettings:
    """The keys a ``kind: local`` profile reads besides ``checkpoint_every_s`` and
    ``keep_checkpoints``."""

    max_parallel: int = 0
    """Runs at once (the pool's slots); 0 = one per core without GPUs, ``runs_per_device`` per
    GPU with them."""
    threads_per_run: int = 0
    """torch threads of each run process; 0 = the cores divided between the pool's slots (one
    per run without GPUs by default). Recorded in each row (``torch_threads``): a run's numbers
    depend on it, never on how many runs a submission holds."""
    runs_per_device: int = 1
    """Runs training at once on one visible GPU, each in its own process: small runs that cannot
    fill a GPU alone. 1: one run per GPU at a time."""
    timeout_min: int = 60
    """Minutes a run may train; a run past it checkpoints and gets a ``timeout`` row."""

    def __post_init__(self) -> None:
        if self.threads_per_run < 0:
            got = self.threads_per_run
            raise ValueError(f"threads_per_run: must be >= 0 (0: derived), got {got}")
        if self.runs_per_device < 1:
            raise ValueError(f"runs_per_device: must be >= 1, got {self.runs_per_device}")
        if self.timeout_min < 1:
            raise ValueError(f"timeout_min: must be >= 1 (minutes), got {self.timeout_min}")


BACKEND = Backend(
    settings=LocalSettings,
    launcher="harness.launch.local.launcher:LocalLauncher",
    evaluator="harness.launch.local.evals:run_evals",
    queue="harness.launch.local.queue:QUEUE",
)
"""The registry's ``local`` entry."""
