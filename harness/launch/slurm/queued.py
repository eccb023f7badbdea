"""Which runs of a grid have a SLURM task queued or running, whichever backend asks.

A run submitted to SLURM is protected from a second launch by its run lock only once it trains;
while its task waits in the queue, only the submission records and ``squeue`` know of it. Every
``submit`` (a SLURM one, and a ``--local`` one on a machine that sees the cluster) leaves those
runs out.
"""

from __future__ import annotations

import shutil
from collections.abc import Collection
from pathlib import Path

from harness.launch.slurm.records import latest_assignments, read_submissions
from harness.launch.slurm.scheduler import active_tasks


def queued_on_slurm(
    root: Path, grid: str, run_ids: Collection[str], *, need_squeue: bool = True
) -> set[str]:
    """The ``run_ids`` whose latest submitted SLURM task is still queued or running.

    Args:
        root: the results root.
        grid: the grid name.
        run_ids: the runs to ask about.
        need_squeue: whether a machine without ``squeue`` is an error (the SLURM launcher) or
            means no task of this machine's can be queued (a laptop with results copied from a
            cluster): then nothing is reported queued.

    Raises:
        SchedulerError: squeue cannot answer (then nobody can tell what is queued).
    """
    assignments = latest_assignments(read_submissions(root, grid))
    mine = {r: assignments[r] for r in run_ids if r in assignments}
    if not mine or (not need_squeue and shutil.which("squeue") is None):
        return set()
    active = active_tasks({a.submission.job_id for a in mine.values()})
    return {r for r, a in mine.items() if a.task in active}
