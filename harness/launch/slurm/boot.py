"""Entry point of every SLURM task: ``python -m harness.launch.slurm.boot ... submitit DIR``.

SLURM may signal a task (``USR2``: time limit ahead or preemption) within a second of its start,
before submitit has loaded the task and installed its handlers; USR2's default action would kill
the task unrecorded. This module records such an early signal from the first instant (in
``$HARNESS_EARLY_SIGNAL``, read by :mod:`harness.launch.slurm.task`) and then runs submitit as
usual.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

from harness.core.env import EARLY_SIGNAL

"""Set to the signal's name when USR2 arrived before the task's own handlers were installed."""


def _record_early(signum: int, frame: FrameType | None) -> None:
    os.environ[EARLY_SIGNAL.name] = signal.Signals(signum).name


def main() -> None:
    """Record early USR2s, then hand over to submitit's job runner (last argument: its folder)."""
    signal.signal(signal.SIGUSR2, _record_early)
    from submitit.core.submission import process_job

    process_job(sys.argv[-1])


if __name__ == "__main__":
    main()
