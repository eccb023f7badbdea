"""The SLURM launcher against the real one-node test cluster (``.ci/slurm/start.sh``): job arrays,
idempotent re-submission, cancel and retry, bad requests, runs killed for memory.

Fails (never skips) under CI=true when the cluster is absent.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.core import paths
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.launch.contract import ExecutionSpec
from harness.launch.profile import load_profile
from harness.launch.slurm.launcher import SlurmLauncher
from harness.launch.slurm.limits import ClusterLimits
from harness.launch.slurm.records import latest_assignments, read_submissions
from harness.launch.slurm.scheduler import active_tasks
from harness.store.manifest import write_manifest
from tests.polling import wait_until
from tests.slurm_runs import invoke, rows, steps, write_grid, write_profile

pytestmark = pytest.mark.slurm


def test_a_grid_of_44_runs_arrives_through_arrays_and_resubmission_queues_nothing(
    slurm_env, prepared_data
):
    launcher = write_profile(slurm_env / "launchers", "slurm-pack", runs_per_task=8)
    lrs = [round(1e-3 * 1.2**i, 6) for i in range(11)]
    grid_file = slurm_env / "arrays.yaml"  # quadratic runs: what is tested is how they arrive
    grid_file.write_text(
        f"name: arrays\nlauncher: {launcher}\nseeds: 4\ngrid: {{lr: {lrs}}}\n"
        "base: {workload: quadratic, steps: 6, optimizer: sgd, log_every: 2}\n"
    )
    root = slurm_env / "results"
    grid = load_grid(grid_file, vocab=vocab_lookup(prepared_data))
    assert len(grid.runs) == 44
    write_manifest(root, grid.name, grid.runs)
    # MaxArraySize 2 instead of the cluster's 1001: 6 tasks of <= 8 runs need 3 arrays (2 + 2 + 2).
    small = ClusterLimits(2, 10000, "test: small arrays")
    profile = load_profile(launcher)
    spec = ExecutionSpec.build(profile, root, grid.name, prepared_data)
    launched = SlurmLauncher(profile, limits=small).launch(grid.runs, spec)
    assert launched.runs == 44
    subs = read_submissions(root, "arrays")
    assert [len(s.tasks) for s in subs] == [2, 2, 2] and all(s.array for s in subs)
    placed = latest_assignments(subs)
    assert set(placed) == {r.run_id for r in grid.runs}

    # While the arrays are queued, a second submit queues nothing.
    common = ["--results", root, "--data", prepared_data]
    again = invoke("submit", grid_file, *common)
    assert again.exit_code == 0, again.output
    assert "skipped 44" in again.output and "launching 0" in again.output
    assert len(read_submissions(root, "arrays")) == 3
    # Nor does a submit on the local launcher train them here (their tasks are queued or running).
    repo_launchers = Path(__file__).resolve().parents[2] / "launchers"
    (slurm_env / "launchers" / "local.yaml").write_text((repo_launchers / "local.yaml").read_text())
    local = invoke("submit", grid_file, "--launcher", "local", *common)
    assert local.exit_code == 0, local.output
    assert "skipped 44" in local.output and "launching 0" in local.output

    got = wait_until(lambda: len(rows(root, "arrays")) == 44 and rows(root, "arrays"), 420, "rows")
    assert {r["status"] for r in got.values()} == {"completed"}
    assert {run_id: r["job_id"] for run_id, r in got.items()} == {
        run_id: p.task for run_id, p in placed.items()
    }  # each row came from the array task its run was recorded in
    assert not any(paths.grid_dir(root, "arrays").glob("checkpoints/*.pt"))

    third = invoke("submit", grid_file, *common)
    assert "skipped 44" in third.output and "launching 0" in third.output
    status = invoke("status", "arrays", "--results", root)
    assert "slurm (3 submissions" in status.output

    def sacct_done() -> bool:
        return "COMPLETED 44" in invoke("status", "arrays", "--results", root).output

    wait_until(sacct_done, 300, "sacct to report 44 completed runs")  # a hang guard


def test_cancel_records_cancelled_runs_and_retry_resubmits_exactly_those(slurm_env, prepared_data):
    launcher = write_profile(slurm_env / "launchers", "slurm-c")
    # Run 0 is short; runs 1-3 would take minutes. Two tasks run at once, the rest waits.
    tokens = [steps(6), steps(5000), steps(5001), steps(5002)]
    grid_file = write_grid(
        slurm_env, "cx", launcher, base={"log_every": 5}, grid={"tokens": tokens}
    )
    root = slurm_env / "results"
    common = ["--results", root, "--data", prepared_data]
    out = invoke("submit", grid_file, *common)
    assert out.exit_code == 0 and "launching 4" in out.output, out.output
    runs = load_grid(grid_file, vocab=vocab_lookup(prepared_data)).runs
    short, long_runs = runs[0].run_id, [r.run_id for r in runs[1:]]
    ckpts = paths.grid_dir(root, "cx") / "checkpoints"
    wait_until(lambda: short in rows(root, "cx"), 120, "the short run's row")
    wait_until(lambda: len(list(ckpts.glob("*.pt"))) == 2, 120, "two long runs checkpointing")

    out = invoke("cancel", "cx", "--results", root)
    assert out.exit_code == 0, out.output
    assert "3 runs cancelled" in out.output, out.output
    got = rows(root, "cx")
    assert got[short]["status"] == "completed"
    assert {got[r]["status"] for r in long_runs} == {"cancelled"}
    by_job = sorted(got[r]["error"] for r in long_runs)
    assert sum("job was cancelled (scancel)" in e for e in by_job) == 2  # running: SIGTERM
    assert sum("cancelled by harness cancel" in e for e in by_job) == 1  # pending: never ran
    assert len(list(ckpts.glob("*.pt"))) == 2  # kept: a retry resumes
    job = read_submissions(root, "cx")[0].job_id
    assert active_tasks({job}) == {}

    out = invoke("submit", grid_file, "--retry", "cancelled", *common)
    assert "skipped 1" in out.output and "launching 3" in out.output, out.output
    retry = read_submissions(root, "cx")[-1]
    assert sorted(r for t in retry.tasks for r in t) == sorted(long_runs)
    out = invoke("cancel", "cx", "--results", root)
    assert out.exit_code == 0 and "3 runs cancelled" in out.output, out.output
    assert rows(root, "cx")[short]["status"] == "completed"


def _jobs_named(name: str) -> list[str]:
    """Every job (and array task) the controller holds named ``name``, finished ones too: only
    this test's, whatever other tests or suites run on the cluster meanwhile."""
    args = ["squeue", "--noheader", "--array", "--states=all", f"--name={name}", "--format=%i"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return out.split()


def _rejected(slurm_env: Path, prepared_data: Path, launcher: str, **base) -> str:
    """Submit a one-run grid on ``launcher``; assert exit 2 and nothing queued or recorded."""
    grid_file = write_grid(slurm_env, "bad", launcher, base=base)
    root = slurm_env / "results"
    before = _jobs_named("harness-bad")  # the job name of grid 'bad' (arrays.executor_parameters)
    out = invoke("submit", grid_file, "--results", root, "--data", prepared_data)
    assert out.exit_code == 2, out.output
    error = [ln for ln in out.output.splitlines() if ln.startswith("error:")]
    assert len(error) == 1, out.output
    assert not read_submissions(root, "bad")
    leftovers = paths.submissions_dir(root, "bad") / "slurm"
    assert not [p for p in leftovers.rglob("*") if p.is_file()] if leftovers.exists() else True
    assert _jobs_named("harness-bad") == before
    return error[0]


def test_impossible_requests_and_sbatch_errors_exit_2_and_record_nothing(slurm_env, prepared_data):
    profiles = slurm_env / "launchers"
    write_profile(profiles, "too-many-gpus", gpus_per_node=4)
    msg = _rejected(slurm_env, prepared_data, "too-many-gpus", gpus_per_run=4, micro_batch_size=2)
    assert "asks for 4 GPUs, 4 CPUs" in msg and "the most there: 2 GPUs, 2 CPUs" in msg
    write_profile(profiles, "too-much-mem", mem_gb=100000)
    assert "100000 GB but no node" in _rejected(slurm_env, prepared_data, "too-much-mem")
    write_profile(profiles, "no-such-partition", partition="h100")
    assert "unknown partition 'h100'" in _rejected(slurm_env, prepared_data, "no-such-partition")
    write_profile(profiles, "bad-gres", sbatch={"gres": "nic:1"})
    msg = _rejected(slurm_env, prepared_data, "bad-gres")
    assert "'bad-gres': sbatch refused the job: Invalid generic resource" in msg
    (profiles / "typo.yaml").write_text("kind: slurm\ngpus: 1\n")
    assert "unknown key 'gpus'" in _rejected(slurm_env, prepared_data, "typo")


def test_a_run_killed_for_memory_is_recorded_as_oom(slurm_env, prepared_data):
    launcher = write_profile(slurm_env / "launchers", "slurm-small", mem_gb=0.2)  # torch needs more
    grid_file = write_grid(slurm_env, "mem", launcher, base={"tokens": steps(200)})
    root = slurm_env / "results"
    out = invoke("submit", grid_file, "--results", root, "--data", prepared_data, "--wait")
    assert out.exit_code == 1, out.output  # a run that did not complete or diverge: exit 1
    assert "finished: oom 1" in out.output, out.output
    (row,) = rows(root, "mem").values()
    assert row["status"] == "oom" and "without a result row" in row["error"]
    assert row["job_id"] == read_submissions(root, "mem")[0].job_id
