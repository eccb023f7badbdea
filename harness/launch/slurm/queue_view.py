"""The scheduler's view of a grid for ``harness status``: each submitted run counted by the
state of its latest SLURM task (squeue for queued and running tasks, sacct for ended ones)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from harness.launch.contract import QueueView
from harness.launch.slurm.records import latest_assignments, read_submissions
from harness.launch.slurm.scheduler import SchedulerError, active_tasks, final_states


def queue_view(root: Path, grid: str) -> QueueView | None:
    """The grid's runs by SLURM state; None when the grid was never submitted to SLURM."""
    subs = read_submissions(root, grid)
    if not subs:
        return None
    assignments = latest_assignments(subs)
    jobs = tuple(dict.fromkeys(s.job_id for s in subs))
    try:
        active = active_tasks(set(jobs))
        ended = final_states(set(jobs))
    except SchedulerError as e:
        return QueueView("slurm", {}, jobs, str(e))
    counts: Counter[str] = Counter()
    for p in assignments.values():
        state = active.get(p.task) or ended.get(p.task, ("UNKNOWN", ""))[0]
        counts[state] += 1
    return QueueView("slurm", dict(counts), jobs)
