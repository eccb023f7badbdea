"""Branch runs on the real test cluster (issue 42): a family (a parent and its branches) is one
array task; ``scontrol requeue`` while a branch trains its cooldown: the requeued task skips the
runs it finished and the branch resumes from its own checkpoint, training nothing twice.

Fails (never skips) under CI=true when the cluster is absent.
"""

from __future__ import annotations

import re
import subprocess
import textwrap

import pytest

from harness.grid.load import load_grid
from harness.launch.slurm.records import read_submissions
from tests.launch.test_branch_runs import SLOW_SGD
from tests.polling import wait_until
from tests.slurm_runs import invoke, rows, task_log, write_profile

pytestmark = pytest.mark.slurm

GRID = """
name: sb
launcher: {launcher}
base: {{optimizer: ./slow_sgd.py:SlowSGD, workload: quadratic, lr: 0.01, schedule: wsd,
       decay_frac: 0.5, log_every: 1}}
grid: {{steps: [16, 32, 64]}}
seeds: 1
"""


def test_a_requeued_family_task_resumes_its_branch_in_its_cooldown(slurm_env, tmp_path):
    launcher = write_profile(slurm_env / "launchers", "slurm-b")
    (slurm_env / "slow_sgd.py").write_text(SLOW_SGD)
    grid = slurm_env / "sb.yaml"
    grid.write_text(textwrap.dedent(GRID.format(launcher=launcher)))
    root, data = slurm_env / "results", tmp_path / "data"
    out = invoke("submit", grid, "--results", root, "--data", data)
    assert out.exit_code == 0 and "as 1 array tasks" in out.output, out.output  # one family
    runs = {r.data.steps: r.run_id for r in load_grid(grid, vocab=lambda d: None).runs}
    branch, parent = runs[32], runs[64]
    job = read_submissions(root, "sb")[0].job_id
    pattern = rf"\[{branch}\] step (\d+)/32"
    in_cooldown = lambda: any(int(s) > 20 for s in re.findall(pattern, task_log(root, "sb", job)))  # noqa: E731
    wait_until(in_cooldown, 300, "the branch in its cooldown")
    subprocess.run(["scontrol", "requeue", job], check=True)  # as a preemption would

    got = wait_until(lambda: len(rows(root, "sb")) == 3 and rows(root, "sb"), 400, "three rows")
    log = task_log(root, "sb", job)
    assert "is being requeued" in log
    assert {(r["status"], r["job_id"]) for r in got.values()} == {("completed", job)}
    for run_id, steps in ((branch, 32), (parent, 64), (runs[16], 16)):
        logged = [int(s) for s in re.findall(rf"\[{run_id}\] step (\d+)/{steps}", log)]
        assert logged == sorted(set(logged)) and logged[-1] == steps, logged  # none twice
    first = next(int(s) for s in re.findall(pattern, log))
    assert first == 17  # from its parent's state at step 16
    assert (got[branch]["branch_of"], got[branch]["steps_trained"]) == (parent, 16)
