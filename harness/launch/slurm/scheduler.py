"""Thin wrappers around the SLURM client commands the launcher needs: squeue, sacct, scancel,
scontrol. Each returns parsed data; a command that cannot answer raises :class:`SchedulerError`
with the command's own message (never a silent empty answer that could duplicate runs).

Array tasks are named like sacct names them: ``"<array job id>_<index>"``; a job that is not an
array is named by its id alone.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Collection, Iterator

ACTIVE_STATES = frozenset(
    {
        "PENDING",
        "RUNNING",
        "REQUEUED",
        "REQUEUE_HOLD",
        "REQUEUE_FED",
        "CONFIGURING",
        "COMPLETING",
        "SUSPENDED",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
        "RESV_DEL_HOLD",
    }
)
"""Job states in which a job is still queued or running (its runs must not be submitted again)."""

_IDS_PER_CALL = 200
"""Job ids passed to one sacct call."""


class SchedulerError(RuntimeError):
    """A SLURM client command failed; the message holds the command and its error."""


def run(args: list[str], timeout_s: float = 60.0) -> str:
    """Run a SLURM client command and return its stdout.

    Raises:
        SchedulerError: the command is missing, timed out or exited non-zero (with its stderr).
    """
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s, check=False)
    except FileNotFoundError:
        raise SchedulerError(f"{args[0]}: command not found (is this a SLURM cluster?)") from None
    except subprocess.TimeoutExpired:
        raise SchedulerError(f"{' '.join(args[:3])}: no answer within {timeout_s:g} s") from None
    if proc.returncode != 0:
        reason = proc.stderr.strip() or proc.stdout.strip() or f"exit code {proc.returncode}"
        raise SchedulerError(f"{' '.join(args[:3])} failed: {reason}")
    return proc.stdout


def task_name(job_id: str, index: int | None) -> str:
    """sacct's name of array task ``index`` of ``job_id`` (the job id alone when not an array)."""
    return job_id if index is None else f"{job_id}_{index}"


def expand_ids(jobid: str) -> Iterator[str]:
    """Task names in one sacct JobID: ``12``, ``12_3`` or a pending range ``12_[4-9,11%2]``."""
    m = re.fullmatch(r"(\d+)_\[([\d,\-]+)(?:%\d+)?\]", jobid)
    if m is None:
        yield jobid
        return
    for part in m.group(2).split(","):
        lo, _, hi = part.partition("-")
        for i in range(int(lo), int(hi or lo) + 1):
            yield f"{m.group(1)}_{i}"


def active_tasks(job_ids: Collection[str]) -> dict[str, str]:
    """Task name -> state of every queued or running task of ``job_ids`` (this user's jobs).

    Raises:
        SchedulerError: squeue cannot answer (then nobody can tell what is queued).
    """
    if not job_ids:
        return {}
    wanted = set(job_ids)
    out = run(["squeue", "--noheader", "--array", "--me", "--format=%F|%K|%T|%i"])
    states: dict[str, str] = {}
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 4:
            continue
        array_id, index, state, jobid = parts
        if array_id in wanted:
            states[jobid if not index.isdigit() else f"{array_id}_{index}"] = state
    return states


def final_states(job_ids: Collection[str]) -> dict[str, tuple[str, str]]:
    """Task name -> (sacct state, exit code) of the tasks of ``job_ids`` sacct knows.

    The state is its first word (``CANCELLED by 0`` reads ``CANCELLED``). sacct lags a job's end by
    a few seconds; combine with :func:`active_tasks` to tell what is over.

    Raises:
        SchedulerError: sacct cannot answer (no accounting on this cluster, controller down).
    """
    ids = sorted(set(job_ids))
    states: dict[str, tuple[str, str]] = {}
    for start in range(0, len(ids), _IDS_PER_CALL):
        chunk = ",".join(ids[start : start + _IDS_PER_CALL])
        out = run(["sacct", "-X", "-n", "-P", "-j", chunk, "-o", "JobID,State,ExitCode"])
        for line in out.splitlines():
            jobid, _, rest = line.partition("|")
            state, _, code = rest.partition("|")
            for name in expand_ids(jobid.strip()):
                states[name] = (state.split(" ")[0], code.strip())
    return states


def cancel(job_ids: Collection[str]) -> None:
    """``scancel`` the jobs (whole arrays) ``job_ids``."""
    if job_ids:
        run(["scancel", *sorted(job_ids)])


def jobs_in_controller() -> int:
    """Jobs the controller holds now (all users, finished ones it still remembers): what counts
    against ``MaxJobCount``."""
    out = run(["squeue", "--noheader", "--array", "--states=all", "--format=%i"])
    return sum(1 for line in out.splitlines() if line.strip())


def job_fields(job_id: str) -> dict[str, str]:
    """``scontrol show job`` of one job as a dict (``JobState``, ``Reason``, ``Restarts``, ...)."""
    out = run(["scontrol", "show", "job", "--oneliner", job_id], timeout_s=10.0)
    fields: dict[str, str] = {}
    for token in out.split():
        key, sep, value = token.partition("=")
        if sep and key not in fields:
            fields[key] = value
    return fields
