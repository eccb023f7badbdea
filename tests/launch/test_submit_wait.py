"""``submit --wait`` waits for the whole grid (issue 44, item 7 of the findings): after a
detached SLURM submit, ``submit --wait`` of the same grid returns only once every run has a row,
whoever queued it, and says what it waited for; before, it printed "launching 0" and returned at
once with the runs still queued. How many are still queued when the second submit looks depends
on the machine (CI's faster submits found 4 of 6 finished), so the count is read, not assumed.
On the real one-node SLURM test cluster; fails (never skips) under CI=true when the cluster is
absent."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core import env
from harness.core.errors import UserError
from harness.core.result import RESULT_STATUSES
from harness.store.db import connect
from tests.launch.test_branch_runs import SLOW_SGD
from tests.slurm_runs import FAST_WAIT, write_profile

REPO = Path(__file__).resolve().parents[2]
RUNS = 6


def _harness(env: dict[str, str], *argv: object) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from harness.cli import main; main()", *map(str, argv)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)


@pytest.mark.slurm
@pytest.mark.slow
def test_submit_wait_waits_for_runs_an_earlier_submit_queued(slurm_env: Path) -> None:
    launcher = write_profile(slurm_env / "launchers", "slurm-wait", runs_per_task=2)
    grid = slurm_env / "wait.yaml"
    (slurm_env / "slow_sgd.py").write_text(SLOW_SGD)  # 0.3 s a step: 4.8 s a run, sleeping
    grid.write_text(
        f"name: wait\nlauncher: {launcher}\n"
        "base: {workload: quadratic, steps: 16, optimizer: ./slow_sgd.py:SlowSGD, log_every: 4}\n"
        f"grid: {{lr: [0.001, 0.002, 0.003]}}\nseeds: {RUNS // 3}\n"
    )
    root = slurm_env / "results"
    env = {**os.environ, "PYTHONPATH": str(REPO), **FAST_WAIT}

    first = _harness(env, "submit", grid, "--results", root)
    assert first.returncode == 0 and f"launching {RUNS} " in first.stdout, (
        first.stdout + first.stderr
    )
    again = _harness(env, "submit", grid, "--results", root, "--wait")

    said = again.stdout + again.stderr
    assert again.returncode == 0, said
    # the runs the first submit's tasks had not finished when the second looked (each task trains
    # for about 10 s: some are still queued or training then)
    waiting = re.search(r"waiting for (\d+) runs queued or being trained by another submit", said)
    assert "launching 0 " in said and waiting is not None, said
    n = int(waiting.group(1))
    assert 1 <= n <= RUNS, said
    assert f"waited for {n} runs queued by another submit: {n} have a row" in said, said
    rows = connect(root, "wait").execute("SELECT status FROM runs").fetchall()
    assert len(rows) == RUNS and {s for (s,) in rows} <= set(RESULT_STATUSES), rows


def test_the_wait_poll_comes_from_the_environment_and_a_bad_one_is_refused() -> None:
    # the tests' FAST_WAIT shortens every --wait's poll; a user who sets it gets it, or exit 2
    assert env.wait_poll_s(5.0, {}) == 5.0
    assert env.wait_poll_s(5.0, FAST_WAIT) == 1.0
    for bad in ("0", "-1", "soon", "nan"):
        with pytest.raises(UserError, match=f"HARNESS_WAIT_POLL_S='{bad}': expected a positive"):
            env.wait_poll_s(5.0, {"HARNESS_WAIT_POLL_S": bad})
