"""Submission records: which runs went into which SLURM job, array index and time.

One JSON file per sbatch call, ``results/<grid>/submissions/records/<job id>.json``, written
atomically (temporary file + rename) right after sbatch accepted the array, never before: a
failed submission leaves no record. Records are the launcher's memory: which runs are queued
(with squeue), which job ended how (with sacct), what ``harness cancel`` stops.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.core import paths
from harness.core.files import atomic_write_bytes
from harness.launch.slurm.scheduler import task_name
from harness.store.integrity import aside


@dataclass(frozen=True, slots=True)
class Submission:
    """One sbatch call: a job array (or a single job) of packed runs."""

    job_id: str
    """The array's job id (the job id when not an array)."""
    array: bool
    """Whether the job is an array (tasks are ``<job_id>_<index>``)."""
    tasks: tuple[tuple[str, ...], ...]
    """run_ids of each array task, by array index (several when runs are packed)."""
    submitted_at: str
    """ISO 8601 UTC time sbatch accepted the job."""
    launcher: str
    """Launcher profile name."""
    log_dir: str
    """Folder of the job's submitit pickles and logs."""

    def task_of(self, index: int) -> str:
        """Task name of array index ``index`` (sacct/squeue naming)."""
        return task_name(self.job_id, index if self.array else None)


@dataclass(frozen=True, slots=True)
class Assignment:
    """Where a run was last submitted."""

    submission: Submission
    """The sbatch call."""
    index: int
    """Its array index."""

    @property
    def task(self) -> str:
        """Task name (``<job id>_<index>``)."""
        return self.submission.task_of(self.index)


def now_iso() -> str:
    """The current UTC time, ISO 8601 with microseconds."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


def write_submission(root: Path, grid: str, sub: Submission) -> Path:
    """Record ``sub`` atomically; returns the record's path."""
    path = paths.submission_records_dir(root, grid) / f"{sub.job_id}.json"
    doc = {
        "job_id": sub.job_id,
        "array": sub.array,
        "submitted_at": sub.submitted_at,
        "launcher": sub.launcher,
        "log_dir": sub.log_dir,
        "tasks": [list(t) for t in sub.tasks],
    }
    atomic_write_bytes(path, json.dumps(doc).encode())
    return path


def read_submissions(root: Path, grid: str) -> list[Submission]:
    """Every recorded submission of ``grid``, oldest first; a corrupt record is moved to
    ``<grid>/quarantine/`` with a one-line warning (its runs then count as not queued)."""
    folder = paths.submission_records_dir(root, grid)
    subs = []
    for p in folder.glob("*.json") if folder.is_dir() else ():
        try:
            subs.append(_parse(p.read_text()))
        except (ValueError, KeyError, TypeError) as e:
            cause = f"not a readable submission record ({type(e).__name__}: {str(e)[:80]})"
            aside(root, grid, p, cause)
    return sorted(subs, key=lambda s: (s.submitted_at, int(s.job_id)))


_FIELD_TYPES: dict[str, type] = {
    "job_id": str,
    "array": bool,
    "submitted_at": str,
    "launcher": str,
    "log_dir": str,
    "tasks": list,
}
"""Each field of a record's JSON and its type (a record is checked before it is used)."""


def _parse(text: str) -> Submission:
    """A record's JSON as a Submission (KeyError, TypeError or ValueError when it is not one:
    a missing or extra field, a field of another type, a job id that is not a number, a time
    that is not ISO 8601)."""
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise TypeError(f"a record is a JSON object, not {type(doc).__name__}")
    if set(doc) != set(_FIELD_TYPES):
        raise KeyError(f"fields {sorted(doc)}; expected {sorted(_FIELD_TYPES)}")
    for name, want in _FIELD_TYPES.items():
        if not isinstance(doc[name], want):
            raise TypeError(f"{name}: expected {want.__name__}, got {doc[name]!r}"[:120])
    tasks = doc["tasks"]
    if not all(isinstance(t, list) and all(isinstance(r, str) for r in t) for t in tasks):
        raise TypeError("tasks: expected lists of run ids")
    doc["tasks"] = tuple(tuple(t) for t in tasks)
    sub = Submission(**doc)
    int(sub.job_id)  # a job id is a number
    dt.datetime.fromisoformat(sub.submitted_at)
    return sub


def latest_assignments(subs: Sequence[Submission]) -> dict[str, Assignment]:
    """run_id -> where it was submitted last (a retried run's newest job wins)."""
    out: dict[str, Assignment] = {}
    for sub in subs:  # oldest first: later submissions overwrite
        for index, run_ids in enumerate(sub.tasks):
            for run_id in run_ids:
                out[run_id] = Assignment(sub, index)
    return out
