"""The SLURM backend's profile section (``kind: slurm``), mapped onto submitit's parameters, and
its registry declaration. Importing it imports neither submitit nor torch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.launch.profile import Backend


@dataclass(frozen=True, kw_only=True, slots=True)
class SlurmSettings:
    """The keys a ``kind: slurm`` profile reads besides ``checkpoint_every_s`` and
    ``keep_checkpoints``."""

    partition: str | None = None
    """Partition (``--partition``)."""
    account: str | None = None
    """Account to charge (``--account``)."""
    qos: str | None = None
    """Quality of service (``--qos``)."""
    constraint: str | None = None
    """Node feature constraint (``--constraint``, e.g. ``a100``)."""
    gpus_per_node: int = 0
    """GPUs an array task may take (``--gpus-per-node``); a run uses ``gpus_per_run`` of them."""
    cpus_per_task: int = 1
    """CPU cores per process (``--cpus-per-task``); also its torch threads."""
    mem_gb: float | None = None
    """Memory per node in GB (``--mem``); None: the cluster default."""
    timeout_min: int = 60
    """Time limit per task in minutes; a run past it checkpoints and is requeued."""
    array_parallelism: int = 256
    """Array tasks running at once (``--array=...%N``)."""
    runs_per_task: int = 1
    """Runs packed into one array task, executed one after another."""
    runs_per_device: int = 1
    """Runs of a one-process task training at once on its GPU (or its CPUs), each in its own
    process: small runs that cannot fill a GPU alone. Must not exceed ``runs_per_task``."""
    max_num_timeout: int = 20
    """Requeues after a time limit or preemption before the run is recorded as ``timeout``."""
    setup: tuple[str, ...] = ()
    """Shell lines run before each task (module load, environment activation)."""
    sbatch: dict[str, Any] = field(default_factory=dict)
    """Extra sbatch options passed through submitit's ``slurm_additional_parameters``."""

    def __post_init__(self) -> None:
        if self.runs_per_device < 1:
            raise ValueError(f"runs_per_device: must be >= 1, got {self.runs_per_device}")
        if self.runs_per_device > max(1, self.runs_per_task):
            raise ValueError(
                f"runs_per_device: {self.runs_per_device} exceeds runs_per_task: "
                f"{self.runs_per_task}; a task packs only its own runs (set runs_per_task to a "
                f"multiple of {self.runs_per_device})"
            )
        if self.timeout_min < 1:
            raise ValueError(f"timeout_min: must be >= 1 (minutes), got {self.timeout_min}")

    def per_device(self, processes: int) -> int:
        """Runs a task of ``processes`` ranks trains at once: ``runs_per_device`` on a
        one-process task, else 1 (the ranks of one run share the task's GPUs). Decided here
        once; the task does what it is told."""
        return self.runs_per_device if processes == 1 else 1


BACKEND = Backend(
    settings=SlurmSettings,
    launcher="harness.launch.slurm.launcher:SlurmLauncher",
    evaluator="harness.launch.slurm.evals:run_evals",
    queue="harness.launch.slurm.queue:QUEUE",
)
"""The registry's ``slurm`` entry."""
