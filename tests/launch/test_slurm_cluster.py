"""The local SLURM test cluster works: sbatch + sacct, arrays, fake GPUs, submitit round trips.

Needs the cluster of ``.ci/slurm/start.sh``; fails in CI when it is absent.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
import submitit

from tests.slurm_cluster import require_cluster, sacct_states, sbatch, wait_for_state

pytestmark = pytest.mark.slurm

HERE = Path(__file__).resolve().parent
WAIT_S = 600
"""How long a job may take to reach a state: a hang guard, not a timing (the cluster is shared,
so a job may wait in the queue behind others' jobs)."""


@pytest.fixture(autouse=True)
def _cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requires the cluster; lets jobs import this module (sbatch passes the environment on)."""
    require_cluster()
    path = [str(HERE), str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")]  # it, the repo
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in path if p))


def _executor(folder: Path, **params: object) -> submitit.AutoExecutor:
    """A submitit executor on the cluster's default partition."""
    executor = submitit.AutoExecutor(folder=folder / "%j", cluster="slurm")
    executor.update_parameters(timeout_min=30, cpus_per_task=1, mem_gb=1, **params)
    return executor


def _square_in_job(x: int) -> tuple[int, str | None]:
    """Runs inside a SLURM job: the square of x and the array task id that computed it."""
    return x * x, os.environ.get("SLURM_ARRAY_TASK_ID")


class _Counter(submitit.helpers.Checkpointable):
    """Counts to ``n`` in steps of ``dt`` s, writing progress to ``log``; resumable in memory."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.count = 0
        self.starts: list[tuple[str | None, int]] = []
        """(SLURM_RESTART_COUNT, count) at each start."""

    def __call__(self, n: int, dt: float) -> dict[str, object]:
        self.starts.append((os.environ.get("SLURM_RESTART_COUNT"), self.count))
        while self.count < n:
            time.sleep(dt)
            self.count += 1
            self.log.write_text(str(self.count))
        return {"count": self.count, "starts": self.starts}


def test_sbatch_job_completes_and_sacct_reports_it(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    job_id = sbatch("--output", str(out), "--wrap", "echo ran on $SLURM_JOB_NODELIST")
    assert wait_for_state(job_id, {"COMPLETED"}, timeout=WAIT_S) == {job_id: "COMPLETED"}
    assert out.read_text().startswith("ran on ")


def test_array_runs_every_task(tmp_path: Path) -> None:
    array_id = sbatch(
        "--array=0-3%2", "--output", str(tmp_path / "%a.txt"), "--wrap", "echo $SLURM_ARRAY_TASK_ID"
    )
    for i in range(4):
        assert wait_for_state(f"{array_id}_{i}", {"COMPLETED"}, timeout=WAIT_S)
    assert [(tmp_path / f"{i}.txt").read_text().strip() for i in range(4)] == ["0", "1", "2", "3"]


def test_gpu_request_gets_a_fake_a100(tmp_path: Path) -> None:
    out = tmp_path / "gpu.txt"
    script = "echo $CUDA_VISIBLE_DEVICES $SLURM_GPUS_ON_NODE"
    options = ["--partition=a100", "--gpus-per-node=1", "--constraint=a100"]
    job_id = sbatch(*options, "--output", str(out), "--wrap", script)
    wait_for_state(job_id, {"COMPLETED"}, timeout=WAIT_S)
    visible, on_node = out.read_text().split()
    assert visible in {"0", "1"} and on_node == "1"


def test_impossible_gpu_request_fails_at_submit() -> None:
    with pytest.raises(AssertionError, match="Requested node configuration is not available"):
        sbatch("--gpus-per-node=3", "--wrap", "hostname")


def test_submitit_map_array_round_trip(tmp_path: Path) -> None:
    executor = _executor(tmp_path, slurm_array_parallelism=2)
    jobs = executor.map_array(_square_in_job, [2, 3, 4])
    assert [job.result() for job in jobs] == [(4, "0"), (9, "1"), (16, "2")]
    array_id = jobs[0].job_id.split("_")[0]
    assert [job.job_id for job in jobs] == [f"{array_id}_{i}" for i in range(3)]
    for job in jobs:
        assert wait_for_state(job.job_id, {"COMPLETED"}, timeout=WAIT_S) == {
            job.job_id: "COMPLETED"
        }


def test_submitit_cancel_ends_cancelled(tmp_path: Path) -> None:
    job = _executor(tmp_path).submit(time.sleep, 300)
    wait_for_state(job.job_id, {"RUNNING"}, timeout=WAIT_S)
    job.cancel()
    wait_for_state(job.job_id, {"CANCELLED"}, timeout=WAIT_S)
    assert job.watcher.get_state(job.job_id, mode="force").startswith("CANCELLED")


@pytest.mark.slow
def test_submitit_checkpointable_resumes_after_preemption(tmp_path: Path) -> None:
    log = tmp_path / "progress.txt"
    job = _executor(tmp_path).submit(_Counter(log), 8, 0.5)
    deadline = time.monotonic() + WAIT_S
    while not (log.exists() and int(log.read_text() or 0) >= 2):  # handlers are in place by now
        stuck = f"job {job.job_id} made no progress: {sacct_states(job.job_id)}"
        assert time.monotonic() < deadline, stuck
        time.sleep(0.2)
    # what a preemption does (submitit's ``job._interrupt()``): SIGTERM, then USR2 -> checkpoint
    # -> ``scontrol requeue``. The job's signals are delivered by slurmd, each in its own time:
    # the next signal is sent once the job has logged the last one, or a SIGTERM that arrived
    # late killed the job's ``scontrol requeue`` child (seen once in the suite, under load).
    for signal_name, logged in (("SIGTERM", "Bypassing signal SIGTERM"), ("USR2", None)):
        subprocess.check_call(["scancel", job.job_id, "--signal", signal_name])
        while logged is not None and logged not in (job.stderr() or ""):
            assert time.monotonic() < deadline, f"job {job.job_id} never logged {logged!r}"
            time.sleep(0.2)
    result = job.result()
    assert result["count"] == 8
    (first, second) = result["starts"]  # the first start's record survived in the checkpoint
    assert first == (None, 0)
    assert second[0] == "1" and second[1] >= 2  # restarted once, resuming the checkpointed count
    assert wait_for_state(job.job_id, {"COMPLETED"}, timeout=WAIT_S) == {job.job_id: "COMPLETED"}
