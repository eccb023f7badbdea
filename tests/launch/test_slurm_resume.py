"""Runs on the real test cluster that are interrupted and resume: ``scontrol requeue``
(preemption) and the time limit, each compared with an uninterrupted twin run at the same time;
and a run spread over two SLURM tasks with DDP (gloo).

Fails (never skips) under CI=true when the cluster is absent.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from harness.core import paths
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.launch.slurm.records import read_submissions
from harness.train.loop import train
from tests.launch.test_branch_runs import SLOW_SGD
from tests.polling import wait_until
from tests.runs import tiny_run
from tests.slurm_runs import (
    curve_losses,
    invoke,
    rows,
    steps,
    task_log,
    write_grid,
    write_profile,
)
from tests.threads import torch_threads

pytestmark = pytest.mark.slurm

#: Result columns that must be identical between an interrupted run and its uninterrupted twin.
SAME = ("status", "val_loss", "val_ppl", "train_loss", "steps_done", "tokens_seen", "iso", "rho")


def _twins(
    slurm_env: Path, prepared_data: Path, launchers: tuple[str, str], **base: object
) -> list:
    """Submit the same run in grids ``ref`` and ``int`` (on ``launchers``); returns their files."""
    files = [
        write_grid(slurm_env, name, launcher, base=base)
        for name, launcher in zip(("ref", "int"), launchers, strict=True)
    ]
    for f in files:
        out = invoke("submit", f, "--results", slurm_env / "results", "--data", prepared_data)
        assert out.exit_code == 0 and "launching 1" in out.output, out.output
    return files


def _assert_identical(root: Path, run_id: str) -> dict:
    """Both twins completed with the same metrics and loss curve; returns the interrupted row."""
    ref = wait_until(lambda: rows(root, "ref").get(run_id), 400, "the reference row")
    got = wait_until(lambda: rows(root, "int").get(run_id), 400, "the interrupted run's row")
    assert got["status"] == "completed", got["error"]
    assert {k: got[k] for k in SAME} == {k: ref[k] for k in SAME}
    assert curve_losses(root, "int", run_id) == curve_losses(root, "ref", run_id)
    assert not paths.checkpoint_path(root, "int", run_id).exists()  # removed after the row
    return got


def test_a_requeued_run_resumes_from_its_checkpoint_with_identical_metrics(
    slurm_env, prepared_data
):
    # The GPT (its weights and AdamW's moments are what the checkpoint must restore), 100 steps
    # of the built-in AdamW (its preflight is cached; a sleeping optimizer of the test's own would
    # be preflighted in a child process at each of the two submits): requeued at step 10, 90
    # steps remain, several seconds on this machine kind (the requeue's SIGTERM comes within a
    # second).
    launcher = write_profile(slurm_env / "launchers", "slurm-t")
    files = _twins(slurm_env, prepared_data, (launcher, launcher), tokens=steps(100))
    root = slurm_env / "results"
    run_id = load_grid(files[1], vocab=vocab_lookup(prepared_data)).runs[0].run_id
    job = read_submissions(root, "int")[0].job_id
    wait_until(lambda: "step 10/100" in task_log(root, "int", job), 120, "10 steps done")
    subprocess.run(["scontrol", "requeue", job], check=True)  # as a preemption would

    got = _assert_identical(root, run_id)
    log = task_log(root, "int", job)
    assert "is being requeued" in log and got["job_id"] == job
    logged = [int(s) for s in re.findall(r"step (\d+)/100", log)]
    assert logged == list(range(10, 101, 10))  # resumed where it stopped: no step twice


def _steps_lasting(seconds: float, prepared_data: Path) -> int:
    """Steps of the twin runs that take about ``seconds`` of training on this machine now."""
    with torch_threads(1):  # as in a job with cpus_per_task 1
        probe = train(tiny_run(prepared_data, tokens=steps(30)), data_root=prepared_data, log=None)
    return max(200, min(4000, round(seconds * probe.metrics["tokens_per_s"] / steps(1) / 10) * 10))


UNTIL_REQUEUED_SGD = '''
import os
import time

import torch


class UntilRequeuedSGD(torch.optim.SGD):
    """SGD that sleeps 0.3 s a step until its job is restarted (SLURM sets SLURM_RESTART_COUNT
    from the first requeue on): interrupted once by the time limit, the run then ends at once."""

    def step(self, closure=None):
        if not int(os.environ.get("SLURM_RESTART_COUNT") or 0):
            time.sleep(0.3)
        return super().step(closure)
'''

TIME_LIMIT_GRID = """
name: {name}
launcher: {launcher}
base: {{optimizer: ./until_requeued.py:UntilRequeuedSGD, workload: quadratic, lr: 0.01, steps: 120,
       log_every: 10}}
seeds: 1
"""


def test_a_run_past_its_time_limit_checkpoints_requeues_and_completes(slurm_env, tmp_path):
    # SLURM's own time limit, the one test that waits for it: a 1-minute limit signals its task
    # (USR2, submitit's --signal) at slurmctld's next time-limit check, 0 to 30 s after it starts
    # (it checks every 30 s): a run of 36 s (120 steps of 0.3 s) is interrupted at least once,
    # however fast this machine. Once requeued it stops sleeping and ends at once. The model does
    # not matter to the signal and requeue; the GPT's checkpoint is compared with its twin by the
    # scontrol requeue test above.
    write_profile(slurm_env / "launchers", "slurm-t")
    write_profile(slurm_env / "launchers", "slurm-1min", timeout_min=1)
    (slurm_env / "until_requeued.py").write_text(UNTIL_REQUEUED_SGD)
    root, data = slurm_env / "results", tmp_path / "data"
    files = []
    for name, launcher in (("ref", "slurm-t"), ("int", "slurm-1min")):
        files.append(slurm_env / f"{name}.yaml")
        files[-1].write_text(TIME_LIMIT_GRID.format(name=name, launcher=launcher))
        out = invoke("submit", files[-1], "--results", root, "--data", data)
        assert out.exit_code == 0 and "launching 1" in out.output, out.output
    run_id = load_grid(files[1], vocab=lambda d: None).runs[0].run_id
    job = read_submissions(root, "int")[0].job_id
    wait_until(lambda: "Requeued job" in task_log(root, "int", job), 300, "a time-limit requeue")
    # Once is what is tested: a longer limit spares its restarts the signal (on a loaded machine
    # a restart can take longer than the 0 to 30 s to the next check, and be requeued again).
    extend = ["scontrol", "update", f"JobId={job}", "TimeLimit=30"]
    wait_until(
        lambda: subprocess.run(extend, capture_output=True).returncode == 0, 60, "a longer limit"
    )

    _assert_identical(root, run_id)
    log = task_log(root, "int", job)
    assert "this job is timed-out" in log and "Requeued job" in log


def test_a_run_over_two_slurm_tasks_with_ddp_matches_one_process(slurm_env, prepared_data):
    launcher = write_profile(slurm_env / "launchers", "slurm-t")
    base = {"gpus_per_run": 2, "micro_batch_size": 4, "tokens": steps(10), "log_every": 2}
    grid_file = write_grid(slurm_env, "ddp", launcher, base=base)
    root = slurm_env / "results"
    out = invoke("submit", grid_file, "--results", root, "--data", prepared_data, "--wait")
    assert out.exit_code == 0 and "finished: completed 1" in out.output, out.output
    run = load_grid(grid_file, vocab=vocab_lookup(prepared_data)).runs[0]
    job = read_submissions(root, "ddp")[0].job_id
    folder = paths.submissions_dir(root, "ddp") / "slurm" / job
    script = (folder / f"{job}_submission.sh").read_text()
    assert "--ntasks-per-node=2" in script and "--gpus-per-node=2" in script
    assert "step 10/10" in task_log(root, "ddp", job)  # rank 0 logs
    assert (folder / f"{job}_1_log.err").exists()  # rank 1 ran too
    with torch_threads(1):
        single = train(run, data_root=prepared_data, log=None)
    row = rows(root, "ddp")[run.run_id]
    assert row["val_loss"] == pytest.approx(single.metrics["val_loss"], rel=1e-5)
    ddp_curve = curve_losses(root, "ddp", run.run_id)
    assert ddp_curve == pytest.approx([p["train_loss"] for p in single.curve], rel=1e-5)
    assert len(ddp_curve) == 5


def test_a_run_out_of_requeues_is_recorded_as_timeout_and_keeps_its_checkpoint(
    slurm_env, prepared_data
):
    # The time-limit signal (USR2, as SLURM sends it at limit - 90 s) is sent once the run has
    # taken steps: SLURM's own would come 10 to 40 s after the start of a 1-minute job, which on
    # a loaded machine can be before the first step (then there is no checkpoint to keep). With
    # a limit this short submitit counts any USR2 as a time-out, and max_num_timeout 0 allows
    # no requeue.
    launcher = write_profile(
        slurm_env / "launchers", "slurm-3min-0", timeout_min=3, max_num_timeout=0
    )
    n_steps = _steps_lasting(60.0, prepared_data)
    grid_file = write_grid(slurm_env, "tl0", launcher, base={"tokens": steps(n_steps)})
    root = slurm_env / "results"
    out = invoke("submit", grid_file, "--results", root, "--data", prepared_data)
    assert out.exit_code == 0 and "launching 1" in out.output, out.output
    job = read_submissions(root, "tl0")[0].job_id
    wait_until(lambda: f"step 20/{n_steps}" in task_log(root, "tl0", job), 120, "20 steps done")
    subprocess.run(["scancel", "--signal=USR2", job], check=True)

    (row,) = wait_until(lambda: list(rows(root, "tl0").values()), 120, "the timeout row")
    assert row["status"] == "timeout" and "time limit reached too often" in row["error"], row
    assert 20 <= row["steps_done"] < n_steps, row  # what it had done when it was stopped
    assert paths.checkpoint_path(root, "tl0", row["run_id"]).exists()  # a retry resumes it
    out = invoke("submit", grid_file, "--results", root, "--data", prepared_data)
    assert out.exit_code == 0 and "launching 0" in out.output, out.output  # only with --retry


PACKED_GRID = """
name: packed
launcher: {launcher}
base: {{optimizer: ./slow_sgd.py:SlowSGD, workload: quadratic, lr: 0.01, steps: 40, log_every: 2}}
seeds: 3
"""
"""Three runs of 12 s (SlowSGD sleeps 0.3 s a step): the model does not matter to packing, and the
GPT's resume is compared with its twin by the two tests above."""


def test_packed_runs_train_at_once_stop_together_on_requeue_and_resume(slurm_env, tmp_path):
    # One task, three runs, two at a time on its device (each a process with one of its 2 CPUs).
    launcher = write_profile(
        slurm_env / "launchers", "slurm-packed", runs_per_task=3, runs_per_device=2, cpus_per_task=2
    )
    (slurm_env / "slow_sgd.py").write_text(SLOW_SGD)
    grid_file = slurm_env / "packed.yaml"
    grid_file.write_text(PACKED_GRID.format(launcher=launcher))
    root, data = slurm_env / "results", tmp_path / "data"
    out = invoke("submit", grid_file, "--results", root, "--data", data)
    assert out.exit_code == 0 and "as 1 array tasks" in out.output, out.output
    runs = load_grid(grid_file, vocab=lambda d: None).runs
    job = read_submissions(root, "packed")[0].job_id

    def both_running() -> bool:
        log = task_log(root, "packed", job)
        return sum(f"[{r.run_id}] step 10/40" in log for r in runs) >= 2

    wait_until(both_running, 180, "two runs of the task training at once")
    subprocess.run(["scontrol", "requeue", job], check=True)  # as a preemption would

    got = wait_until(lambda: len(rows(root, "packed")) == 3 and rows(root, "packed"), 400, "rows")
    log = task_log(root, "packed", job)
    assert "is being requeued" in log
    for run in runs:
        row = got[run.run_id]
        assert (row["status"], row["job_id"]) == ("completed", job), row["error"]
        logged = [int(s) for s in re.findall(rf"\[{run.run_id}\] step (\d+)/40", log)]
        assert logged == list(range(2, 41, 2))  # resumed where it stopped: no step twice
        assert not paths.checkpoint_path(root, "packed", run.run_id).exists()
    stopped = re.search(r"is being requeued; (.+) resume", log)
    assert stopped and len(stopped.group(1).split(", ")) == 2, log  # both stopped mid-run
    # Packed, interrupted and resumed, each run is the run trained alone in one process.
    with torch_threads(1):
        alone = train(runs[0], data_root=data, log=None)
    assert got[runs[0].run_id]["val_loss"] == alone.metrics["val_loss"]
    assert curve_losses(root, "packed", runs[0].run_id) == [p["train_loss"] for p in alone.curve]
