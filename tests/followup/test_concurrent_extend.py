"""Two ``submit --extend --confirm`` of one grid at once (issue 29, item 6): the one that waited
joins the rounds (it waits for the runs the other trains, then plans the next round with it)
instead of stopping after round 0 with a SLURM-only hint; no run is trained twice."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from harness.core import paths
from harness.store.db import result_statuses
from harness.store.manifest import read_manifest
from tests.local_submits import REPO, logged_steps
from tests.polling import wait_until

SLOW_SGD = '''
import time
from pathlib import Path

import torch

HOLD = Path(__file__).with_name("hold")


class SlowSGD(torch.optim.SGD):
    """SGD that sleeps at each step and, after its fourth (a run's first logged point), waits
    while the file ``hold`` beside it exists: the first submit's runs are still training when
    the second submit plans, however long its start takes on a busy machine (it once came
    after both rounds were done). The preflight's single step never waits."""

    steps = 0

    def step(self, closure=None):
        self.steps += 1
        time.sleep(0.15)
        deadline = time.monotonic() + 600
        while self.steps > 4 and HOLD.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
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
    hold = tmp_path / "hold"
    hold.touch()  # the first submit's runs wait after their first logged point
    first = start(grid, root, prepared_data)
    try:
        live = paths.live_dir(root, "twice")
        wait_until(lambda: any(live.glob("*.jsonl")), 180, "the first submit's runs training")
        second = start(grid, root, prepared_data)
        lines: list[str] = []
        assert second.stdout is not None
        reader = threading.Thread(target=lambda: lines.extend(second.stdout), daemon=True)
        reader.start()
        # the second submit planned its round 0 (every run queued by the first): it waits now
        wait_until(lambda: any("new run(s) planned" in ln for ln in lines), 300, "second's plan")
        hold.unlink()
        out_first, _ = first.communicate(timeout=600)
        reader.join(timeout=600)
        second.wait(timeout=60)
        out_second = "".join(lines)
    finally:
        hold.unlink(missing_ok=True)
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
