"""Living with a sweep (issue 21): submit's exit status, a failed run's log, the live view of
running runs (their points, heartbeat, ``status``, ``query``), with real run processes."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.cli import main
from harness.core import paths
from harness.launch.progress import Progress
from harness.store.live import append_point, read_points, start_attempt
from tests.local_submits import REPO
from tests.polling import wait_until

BOOM = '''
import torch


class Boom(torch.optim.SGD):
    """SGD that raises at its third step."""

    def __init__(self, params, lr=1e-3):
        super().__init__(params, lr=lr)
        self.steps = 0

    def step(self, closure=None):
        self.steps += 1
        if self.steps == 3:
            raise RuntimeError("boom at the third step")
        return super().step(closure)
'''

GRID = """
name: {name}
base: {{model: tiny, dataset: classics-bpe8k, seq_len: 32, batch_size: 8, steps: {steps},
        eval_tokens: 2048, log_every: 2, warmup_steps: 1}}
grid:
  optimizer:
{arms}
seeds: [0]
"""


def grid_file(folder: Path, name: str, arms: list[str], steps: int = 6) -> Path:
    """A grid of one tiny run per arm (``optimizer: {lr: [...]}`` lines)."""
    (folder / "boom.py").write_text(BOOM)
    body = GRID.format(name=name, steps=steps, arms="\n".join(f"    {a}" for a in arms))
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(body))
    return path


def harness(*argv: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``harness ARGV`` as a process of its own."""
    code = "from harness.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, argv)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
    )


def in_process(*argv: object) -> Result:
    """``harness ARGV`` in this process (no interpreter start-up: the run keeps training)."""
    return CliRunner().invoke(main, [str(a) for a in argv])


ADAMW = "adamw: {lr: [3.0e-3]}"
RAISES = "./boom.py:Boom: {lr: [1.0e-2]}"


@pytest.mark.slow
def test_submit_exits_1_when_a_run_failed_and_its_log_holds_the_traceback(tmp_path, prepared_data):
    grid = grid_file(tmp_path, "boom", [ADAMW, RAISES])
    root = tmp_path / "results"

    sub = harness("submit", grid, "--launcher", "local", "--results", root, "--data", prepared_data)

    assert sub.returncode == 1, sub.stdout + sub.stderr
    assert "finished: completed 1, failed 1" in sub.stdout
    assert "exit 1: 1 runs failed or were lost" in sub.stderr
    logs = sorted((root / "boom" / "submissions" / "local").glob("*.log"))
    texts = [p.read_text() for p in logs]
    failed = [t for t in texts if "boom at the third step" in t]
    assert len(failed) == 1 and "Traceback (most recent call last)" in failed[0]
    assert 'in step\n    raise RuntimeError("boom at the third step")' in failed[0]


@pytest.mark.slow
def test_submit_exits_0_when_every_run_completed_or_diverged(tmp_path, prepared_data):
    grid = grid_file(tmp_path, "ok", ["adamw: {lr: [3.0e-3, 1.0e+3]}"], steps=10)  # 1e3 blows up
    root = tmp_path / "results"

    sub = harness("submit", grid, "--launcher", "local", "--results", root, "--data", prepared_data)

    assert sub.returncode == 0, sub.stdout + sub.stderr
    assert "finished: completed 1, diverged 1" in sub.stdout
    assert re.search(r"\| best val_loss \d+\.\d{4}\n", sub.stderr), sub.stderr  # progress line


def test_the_progress_line_shows_the_best_validation_loss_so_far():
    progress = Progress(4, stream=io.StringIO())
    assert "best" not in progress.line()
    for status, val in (
        ("completed", 3.5),
        ("completed", 3.25),
        ("diverged", None),
        ("completed", float("nan")),
        ("failed", 1.0),
    ):
        progress.finished(status, val)
    assert progress.line().endswith("| best val_loss 3.2500")


SLOW = '''
import time

import torch


class Slow(torch.optim.AdamW):
    """AdamW that sleeps at each step, so that a test sees the run mid-way."""

    def step(self, closure=None):
        time.sleep(0.2)
        return super().step(closure)
'''


@pytest.mark.slow
def test_a_running_run_is_seen_by_status_and_query_while_it_trains(tmp_path, prepared_data):
    (tmp_path / "slow.py").write_text(SLOW)
    grid = grid_file(tmp_path, "live", ["./slow.py:Slow: {lr: [3.0e-3]}"], steps=40)
    root = tmp_path / "results"
    argv = [
        sys.executable,
        "-c",
        "from harness.cli import main; main()",
        "submit",
        str(grid),
        "--launcher",
        "local",
        "--results",
        str(root),
        "--data",
        str(prepared_data),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    submit = subprocess.Popen(
        argv, env=env, cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        folder = paths.live_dir(root, "live")
        wait_until(
            lambda: any(len(read_points(p)) >= 3 for p in folder.glob("*.jsonl")),
            180,
            "three live points",
        )
        (live,) = folder.glob("*.jsonl")
        run_id = live.stem

        status = in_process("status", "live", "--results", root)
        query = in_process(
            "query",
            "SELECT step, running FROM curves ORDER BY step",
            "--format",
            "csv",
            "--results",
            root,
        )
    finally:
        _, err = submit.communicate(timeout=300)

    assert status.exit_code == 0, status.output
    (line,) = [ln for ln in status.stdout.splitlines() if run_id in ln]
    assert re.search(
        r"running\s+\S+  step \d+/40  loss \d+\.\d{4}  [\d,]+ tok/s  ETA \d+m\d\ds", line
    ), status.stdout
    step = int(re.search(r"step (\d+)/", line)[1])
    assert 6 <= step < 40
    rows = [ln.split(",") for ln in query.stdout.strip().splitlines()[1:]]
    assert len(rows) >= 3 and {r[1] for r in rows} == {"True"}, query.output
    assert [int(r[0]) for r in rows] == list(range(2, 2 * len(rows) + 1, 2))
    assert submit.returncode == 0, err
    assert not live.exists()  # its row is written: no longer live
    done = in_process(
        "query",
        "SELECT count(*) AS n, bool_or(running) AS r FROM curves",
        "--format",
        "csv",
        "--results",
        root,
    )
    assert done.stdout.strip().splitlines()[1] == "20,False", done.output


def test_a_reader_sees_only_complete_points_of_a_file_being_written(tmp_path):
    path = tmp_path / "run.jsonl"
    for step in (2, 4, 6):
        append_point(path, {"step": step, "train_loss": 5.0 - step / 10})
    with open(path, "ab") as fh:
        fh.write(b'{"step": 8, "train_loss": 4.2}')  # its newline not written yet

    assert [p["step"] for p in read_points(path)] == [2, 4, 6]
    with open(path, "ab") as fh:
        fh.write(b'\n{"step": 10, "train_lo')  # a writer killed mid-line
    assert [p["step"] for p in read_points(path)] == [2, 4, 6, 8]
    start_attempt(path)  # resumed from a checkpoint at step 2
    append_point(path, {"step": 4, "train_loss": 4.55})
    append_point(path, {"step": 6, "train_loss": 4.35})
    assert [(p["step"], p["train_loss"]) for p in read_points(path)] == [
        (2, 4.8),
        (4, 4.55),
        (6, 4.35),
    ]
