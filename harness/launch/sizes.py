"""Parameter counts for the dry run's summary: the model's (:func:`harness.model.build.
count_params`), and 0 for a workload's run (:mod:`harness.workloads`), whose toy problems cost
seconds on a CPU and are not in the compute estimate."""

from __future__ import annotations

from harness.core.config import Architecture
from harness.model.build import count_params as model_params


def count_params(arch: Architecture, seq_len: int) -> int:
    """Trainable parameters of the run's model; 0 for a workload (not counted)."""
    return 0 if arch.workload is not None else model_params(arch, seq_len)
