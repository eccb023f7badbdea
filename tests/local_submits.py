"""Helpers for tests that run ``harness submit --local`` as real processes and signal them."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from harness.core import paths

REPO = Path(__file__).resolve().parent.parent

GRID = """
name: {name}
base: {{model: tiny, dataset: classics-bpe8k, optimizer: adamw, lr: 3.0e-3, seq_len: 32,
        batch_size: 8, tokens: {tokens}, eval_tokens: 2048, log_every: 2}}
seeds: {seeds}
local: {{base: {{}}}}
"""


def grid_file(folder: Path, name: str, seeds: list[int], steps: int, file: str = "") -> Path:
    """A grid of tiny runs of ``steps`` steps, one per seed."""
    path = folder / (file or f"{name}.yaml")
    path.write_text(textwrap.dedent(GRID.format(name=name, tokens=8 * 32 * steps, seeds=seeds)))
    return path


SLOW_SGD = """
import time

import torch


class SlowSGD(torch.optim.SGD):
    \"\"\"SGD that sleeps at each step: a run lasts long enough to be signalled mid-way, on no
    CPU (a tiny GPT's steps cost seconds of it).\"\"\"

    def step(self, closure=None):
        time.sleep({step_s})
        return super().step(closure)
"""

QUADRATIC_GRID = """
name: {name}
base: {{workload: quadratic, optimizer: ./slow_sgd.py:SlowSGD, lr: 0.01, steps: {steps},
        log_every: 2}}
seeds: {seeds}
local: {{base: {{}}}}
"""


def quadratic_grid_file(
    folder: Path, name: str, seeds: list[int], steps: int, file: str = "", step_s: float = 0.1
) -> Path:
    """A grid of quadratic runs of ``steps`` steps, one per seed, each step ``step_s`` seconds
    of sleep (``slow_sgd.py`` beside the grid): real run processes, as :func:`grid_file`'s, where
    the model does not matter, for a fraction of their CPU."""
    (folder / "slow_sgd.py").write_text(SLOW_SGD.format(step_s=step_s))
    path = folder / (file or f"{name}.yaml")
    path.write_text(textwrap.dedent(QUADRATIC_GRID.format(name=name, steps=steps, seeds=seeds)))
    return path


def start_submit(
    grid: Path, root: Path, data: Path, spill: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """``harness submit GRID --local`` in a session of its own (a terminal's process group);
    ``env`` adds to (or overrides) its environment."""
    env = {
        **os.environ,
        "HARNESS_CHECKPOINT_EVERY_S": "1",
        "HARNESS_SPILL": str(spill),
        "PYTHONPATH": str(REPO),
        **(env or {}),
    }
    argv = [
        sys.executable,
        "-c",
        "from harness.cli import main; main()",
        "submit",
        str(grid),
        "--local",
        "--results",
        str(root),
        "--data",
        str(data),
    ]
    return subprocess.Popen(
        argv,
        env=env,
        cwd=REPO,
        text=True,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def log_of(root: Path, grid: str, run_id: str) -> Path:
    """A local run's log."""
    return paths.submissions_dir(root, grid) / "local" / f"{run_id}.log"


def logged_steps(root: Path, grid: str, run_id: str) -> list[int]:
    """The steps a run's log reports, in order, over all its attempts."""
    path = log_of(root, grid, run_id)
    text = path.read_text() if path.exists() else ""
    return [int(s) for s in re.findall(rf"\[{run_id}\] step (\d+)/", text)]


def children(pid: int) -> list[int]:
    """Process ids of the live children of ``pid``."""
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def descendants(pid: int) -> list[int]:
    """Process ids of the live processes below ``pid``: its children, theirs, and so on (run
    processes are children of a fork server, itself a child of ``submit``)."""
    out = []
    for child in children(pid):
        out += [child, *descendants(child)]
    return out


def run_processes(pid: int) -> list[int]:
    """The live run processes ``pid`` started: its spawned children, and the children of its
    fork server (:func:`harness.launch.worker.server.run_context`), not multiprocessing's
    resource tracker or the fork server itself."""
    out = []
    for child in children(pid):
        argv = _argv(child)
        if b"spawn_main" in argv and alive(child):
            out.append(child)
        elif b"forkserver" in argv:
            out.extend(p for p in children(child) if alive(p))
    return out


def _argv(pid: int) -> bytes:
    """The command line of ``pid`` (empty once it has exited)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not reaped, does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def signal_group(proc: subprocess.Popen[str], signum: int) -> None:
    """Send ``signum`` to the process group of ``proc`` (what a terminal does)."""
    os.killpg(proc.pid, signum)


SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP}
