"""The scheduler's view of a grid for ``harness status``: each submitted run counted by the
state of its latest SLURM task (squeue for queued and running tasks, sacct for ended ones)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from harness.launch.slurm.records import latest_assignments, read_submissions
from harness.launch.slurm.scheduler import SchedulerError, active_tasks, final_states


@dataclass(frozen=True, slots=True)
class QueueView:
    """Runs of a grid by the state of their latest task."""

    counts: Counter[str]
    """SLURM state (PENDING, RUNNING, COMPLETED, OUT_OF_MEMORY, ...) -> runs."""
    jobs: tuple[str, ...]
    """Job ids of the grid's submissions, oldest first."""
    error: str | None = None
    """Why the states could not be read (then ``counts`` is empty)."""


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
        return QueueView(Counter(), jobs, str(e))
    counts: Counter[str] = Counter()
    for p in assignments.values():
        state = active.get(p.task) or ended.get(p.task, ("UNKNOWN", ""))[0]
        counts[state] += 1
    return QueueView(counts, jobs)


def format_queue_view(view: QueueView) -> str:
    """One line: ``slurm (jobs 80-81): PENDING 10, RUNNING 2, COMPLETED 30``."""
    jobs = view.jobs[0] if len(view.jobs) == 1 else f"{view.jobs[0]}..{view.jobs[-1]}"
    head = f"slurm ({len(view.jobs)} submissions, jobs {jobs})"
    if view.error:
        return f"{head}: job states unavailable: {view.error}"
    states = ", ".join(f"{k} {v}" for k, v in sorted(view.counts.items()))
    return f"{head}: {states}"
