"""The local one-node SLURM test cluster (started by ``.ci/slurm/start.sh``) as tests see it.

Tests that need the cluster call :func:`require_cluster` first: in CI (``CI=true``) a missing
cluster fails the test loudly; elsewhere the test is skipped with the command that starts it.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

START_SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "slurm" / "start.sh"
"""The script that installs and starts the cluster (as root)."""

_USABLE_NODE_STATES = {"idle", "mixed", "allocated", "completing"}
"""sinfo node states in which the node accepts jobs."""


def _run(args: list[str], timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
    """Runs a SLURM client command and returns its completed process (never raises on failure)."""
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return subprocess.CompletedProcess(args, returncode=-1, stdout="", stderr=str(err))


@functools.cache
def cluster_available() -> bool:
    """Whether a SLURM cluster with a usable node and working accounting (sacct) answers.

    Checked once per test session: an absent cluster costs up to 10 s (sinfo's connect retries).

    Returns:
        True when ``sinfo`` shows a node that accepts jobs and ``sacct`` answers.
    """
    conf = Path(os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf"))
    if shutil.which("sbatch") is None or not conf.is_file():  # sinfo retries a missing conf 60 s
        return False
    sinfo = _run(["sinfo", "-h", "-N", "-o", "%T"])
    if sinfo.returncode != 0 or not set(sinfo.stdout.split()) & _USABLE_NODE_STATES:
        return False
    return _run(["sacct", "-n", "-X", "-S", "now-1minutes", "-o", "JobID"]).returncode == 0


def require_cluster() -> None:
    """Fails (in CI) or skips (elsewhere) the calling test when the cluster is not up."""
    if cluster_available():
        return
    reason = f"no usable local SLURM cluster with accounting; start it with: sudo {START_SCRIPT}"
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"{reason} (CI=true: SLURM tests must run, never skip)", pytrace=False)
    pytest.skip(f"{reason} (skipped outside CI only)")


def sbatch(*options: str) -> str:
    """Submits a batch job and returns its id.

    Args:
        *options: sbatch arguments, e.g. ``"--wrap", "hostname"``.

    Returns:
        The job id (for an array, the array's id).

    Raises:
        AssertionError: sbatch failed; the message holds the scheduler's reason.
    """
    proc = _run(["sbatch", "--parsable", *options])
    assert proc.returncode == 0, f"sbatch {' '.join(options)} failed: {proc.stderr.strip()}"
    return proc.stdout.strip().split(";")[0]


def sacct_states(job_id: str) -> dict[str, str]:
    """Reads the accounting state of a job from ``sacct``.

    Args:
        job_id: a job id (``"12"``) or an array task (``"12_3"``). A whole array (``"12"``) gives
            the tasks sacct knows so far, but sacct shows arrays incompletely: the task that
            carries the array's own job id is absent while it runs and until about 3 s after.

    Returns:
        sacct's JobID -> first word of its State (``"CANCELLED by 0"`` reads ``"CANCELLED"``), one
        entry per job or array task; pending array tasks appear as one entry like ``"12_[4-9%2]"``.
        Empty while sacct does not know the job yet (it lags a submission by up to about a second).
    """
    proc = _run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "JobID,State"])
    states = {}
    for line in proc.stdout.splitlines():
        jid, _, state = line.partition("|")
        if jid:
            states[jid] = state.split(" ")[0]
    return states


def wait_for_state(job_id: str, states: Iterable[str], timeout: float = 60.0) -> dict[str, str]:
    """Polls ``sacct`` until a job (every row sacct shows for it) is in one of ``states``.

    Args:
        job_id: a job id or an array task id (``"12_3"``); wait for each task of an array, never
            for the array's id (see :func:`sacct_states`).
        states: accepted sacct states, e.g. ``{"COMPLETED"}`` or ``{"CANCELLED"}``.
        timeout: seconds to wait.

    Returns:
        The final :func:`sacct_states` of the job.

    Raises:
        AssertionError: the job did not reach ``states`` in time; names the states last seen.
    """
    wanted = set(states)
    deadline = time.monotonic() + timeout
    seen: dict[str, str] = {}
    while time.monotonic() < deadline:
        seen = sacct_states(job_id)
        if seen and set(seen.values()) <= wanted:
            return seen
        time.sleep(0.25)
    waited = f"after {timeout:.0f} s: sacct {seen}"
    raise AssertionError(f"job {job_id} not in {sorted(wanted)} {waited}")
