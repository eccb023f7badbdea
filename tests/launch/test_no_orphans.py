"""No process outlives its submit (issue 44, item 3): a user's constructor that forks a sleeper
(in the preflight's child and in the run process) leaves nothing running once ``submit`` has
returned, and ``out=$(harness submit ...)`` returns when ``submit`` does (no fork, and not the
resource tracker, holds its output open). Before, the forks ignored SIGTERM (the run process's
SIG_IGN survives fork and exec) and kept ``submit``'s stdout open for minutes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.local_submits import REPO

OPTIMIZER = """
import os, pathlib, signal, subprocess, time
import torch

def _note(pid):
    with open(pathlib.Path(__file__).with_name("pids"), "a") as f:
        f.write(f"{pid}\\n")

class Forking(torch.optim.SGD):
    def __init__(self, params, lr=0.1):
        super().__init__(params, lr=lr)
        _note(subprocess.Popen(["sleep", "300"], stdout=None, stderr=None).pid)  # fork + exec
        pid = os.fork()
        if pid == 0:  # a plain fork: the harness's Python state, then a long sleep
            try:
                time.sleep(300)
            finally:
                os._exit(0)
        _note(pid)
"""

GRID = (
    "name: forks\nbase: {workload: quadratic, optimizer: ./forking.py:Forking, lr: 0.01, "
    "steps: 4, log_every: 2}\nseeds: 2\n"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.slow
def test_no_process_of_the_submit_remains_and_its_output_closes_with_it(tmp_path):
    (tmp_path / "forking.py").write_text(OPTIMIZER)
    (tmp_path / "g.yaml").write_text(GRID)
    env = {**os.environ, "PYTHONPATH": str(REPO), "HARNESS_PREFLIGHT_TIMEOUT_S": "120"}
    argv = [sys.executable, "-c", "from harness.cli import main; main()", "submit", "g.yaml"]
    argv += ["--launcher", "local", "--results", str(tmp_path / "results")]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
    closed = threading.Event()
    out: list[str] = []
    reader = threading.Thread(target=lambda: (out.append(proc.stdout.read()), closed.set()))
    reader.start()
    try:
        code = proc.wait(timeout=300)
        exited = time.monotonic()
        assert closed.wait(30), "submit's stdout held open after it exited"  # $(...) returns
        held_s = time.monotonic() - exited
        time.sleep(1.0)
        pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
        left = [p for p in pids if _alive(p)]
    finally:
        for pid in [int(p) for p in (tmp_path / "pids").read_text().split()]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
    assert code == 0, out
    assert "completed 2" in out[0] or "2 completed" in out[0] or "finished" in out[0], out
    assert len(pids) >= 6  # 2 forks in the preflight's child, 2 in each of the 2 runs
    assert left == [], f"{len(left)} of {len(pids)} forks alive 1 s after submit returned"
    assert held_s < 5, held_s
