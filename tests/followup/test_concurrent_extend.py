"""Two ``submit --extend --confirm`` of one grid at once (issue 29, item 6): the one that waited
joins the rounds (it waits for the runs the other trains, then plans the next round with it)
instead of stopping after round 0 with a SLURM-only hint; no run is trained twice."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.core import paths
from harness.store.db import result_statuses
from harness.store.manifest import read_manifest
from tests.local_submits import REPO, logged_steps
from tests.polling import wait_until

SLOW_SGD = '''
import time

import torch


class SlowSGD(torch.optim.SGD):
    """SGD that sleeps at each step, so that a second submit arrives while runs train."""

    def step(self, closure=None):
        time.sleep(0.15)
        return super().step(closure)
'''

GRID = """
name: twice
base: {workload: quadratic, steps: 12, log_every: 4}
grid:
  optimizer:
    ./slow_sgd.py:SlowSGD: {lr: [1.0e-5, 1.0e-4]}
seeds: {tune: 1, confirm: 1}
extend: {axes: [lr], rounds: 2}
"""


def start(grid: Path, root: Path, data: Path) -> subprocess.Popen[str]:
    argv = [
        sys.executable,
        "-c",
        "from harness.cli import main; main()",
        "submit",
        str(grid),
        "--launcher",
        "local",
        "--extend",
        "--confirm",
        "--results",
        str(root),
        "--data",
        str(data),
    ]
    return subprocess.Popen(
        argv,
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


@pytest.mark.slow
def test_the_waiting_submit_joins_the_rounds(tmp_path: Path, prepared_data: Path) -> None:
    (tmp_path / "slow_sgd.py").write_text(SLOW_SGD)
    grid = tmp_path / "twice.yaml"
    grid.write_text(textwrap.dedent(GRID))
    root = tmp_path / "results"
    first = start(grid, root, prepared_data)
    try:
        live = paths.live_dir(root, "twice")
        wait_until(lambda: any(live.glob("*.jsonl")), 180, "the first submit's runs training")
        second = start(grid, root, prepared_data)
        out_first, _ = first.communicate(timeout=600)
        out_second, _ = second.communicate(timeout=600)
    finally:
        for proc in (first, locals().get("second")):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()

    for out, proc in ((out_first, first), (out_second, second)):
        assert proc.returncode == 0, out
        assert "run the same command again" not in out, out  # a SLURM hint, not for local runs
    assert out_second.count("new run(s) planned") >= 3, out_second  # rounds 0, 1, 2 and confirm
    runs = read_manifest(root, "twice")
    rounds = {r.extend_round for r in runs.values() if r.extend_round}
    assert rounds == {1, 2} and sum(1 for r in runs.values() if r.confirm) == 1
    assert set(result_statuses(root, "twice")) == set(runs)  # every run has its row
    for run_id in runs:  # each trained once: its log holds one attempt's steps
        assert logged_steps(root, "twice", run_id) == [4, 8, 12], run_id
