"""The preflight runs the user's optimizer in a child process with a time and memory limit
(issue 29, item 2): an exit, a signal, a hang, ``KeyboardInterrupt``/``SystemExit`` raised by the
user's code or a memory blow-up is one line per configuration, exit 2, nothing queued; Ctrl-C
during a slow constructor stops ``submit`` at once and kills the user's code. Real processes:
``harness submit`` through the CLI and as a process of its own."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

HERE = Path(__file__).resolve().parent


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(HERE / "hostile_optimizers.py", tmp_path / "hostile_optimizers.py")
    monkeypatch.setenv("HARNESS_PREFLIGHT_TIMEOUT_S", "20")
    monkeypatch.setenv("HARNESS_PREFLIGHT_MEMORY_GB", "2")
    return tmp_path


def _grid(project: Path, arms: list[str], extra: str = "") -> Path:
    path = project / "hostile.yaml"
    listed = "".join(f"./hostile_optimizers.py:{a}: {{{extra}}}, " for a in arms)
    path.write_text(
        "name: hostile\nbase: {workload: quadratic, lr: 0.01, steps: 4}\n"
        f"grid: {{optimizer: {{{listed}sgd: {{}}}}}}\n"
    )
    return path


def _submit(project: Path, path: Path, code: int) -> str:
    results = project / "results"
    r = CliRunner().invoke(main, ["submit", str(path), "--launcher", "local", "--results",
                                  str(results)])  # fmt: skip
    assert r.exit_code == code, r.output
    assert not (results / "hostile" / "manifest.parquet").exists()  # nothing queued
    return r.output


def _line(out: str, arm: str) -> str:
    lines = [s for s in out.splitlines() if f"hostile_optimizers.py:{arm}:" in s]
    assert len(lines) == 1, out
    return lines[0]


def test_an_exit_or_an_interrupt_of_the_users_code_is_one_line_exit_2(project: Path) -> None:
    out = _submit(project, _grid(project, ["ExitZero", "ExitThree", "Interrupt"]), code=2)
    assert "preflight" in out and "arm sgd" not in out  # the working arm passes
    assert "exited with status 0" in _line(out, "ExitZero")
    assert "SystemExit: 3 raised by the user's code" in _line(out, "ExitThree")
    assert "KeyboardInterrupt: from the constructor raised by the user's code" in _line(
        out, "Interrupt"
    )


@pytest.mark.slow
def test_a_hang_a_signal_and_a_memory_blow_up_are_one_line_each(project, monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_PREFLIGHT_MEMORY_GB", "1.2")  # torch takes 0.65 of it
    out = _submit(project, _grid(project, ["HangStep", "Segfault", "Greedy"]), code=2)
    assert "did not finish within 20 s (set HARNESS_PREFLIGHT_TIMEOUT_S" in _line(out, "HangStep")
    assert "killed by SIGSEGV" in _line(out, "Segfault")
    assert "MemoryError" in _line(out, "Greedy")
    assert "arm sgd" not in out


def test_a_bad_limit_is_one_line(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_PREFLIGHT_TIMEOUT_S", "soon")
    out = _submit(project, _grid(project, []), code=2)
    assert "HARNESS_PREFLIGHT_TIMEOUT_S='soon': expected a positive number" in out


def test_ctrl_c_during_a_slow_constructor_stops_submit_and_the_users_code(project) -> None:
    marker = project / "constructing"
    path = _grid(project, ["Slow"], extra=f"marker: {marker}")
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    cmd = [sys.executable, "-c", "from harness.cli import main; main()", "submit", str(path),
           "--launcher", "local", "--results", str(project / "results")]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not marker.exists() or not marker.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
        time.sleep(0.1)
    child = int(marker.read_text())
    assert child != proc.pid  # the user's code runs in a process of its own
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)  # the constructor sleeps 600 s
    assert proc.returncode == 130, out
    assert b"Traceback" not in out, out
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)  # the user's code was stopped with submit
    assert not (project / "results" / "hostile" / "manifest.parquet").exists()
