"""``scripts/gpu_check.sh`` (issues 32, 43) runs end to end on the CPU, and every command it would
run on a GPU takes the flags it is given, so that the first GPU run does not die on a typo."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gpu_check() -> ModuleType:
    return _load(ROOT / "scripts" / "gpu_check.py")


@pytest.mark.slow
@pytest.mark.nightly  # three benchmarks and two pytest runs: 2 min of CPU (scripts/nightly.sh)
def test_the_check_runs_every_step_on_the_cpu_into_one_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_check.sh"), str(out), "--device", "cpu"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    summary = (out / "summary.md").read_text()
    assert proc.returncode == 0, summary + proc.stderr[-3000:]
    steps = re.findall(r"^\| (.+?) \| (.+?) \| \d+ \| (\w+)\.log \|$", summary, re.MULTILINE)
    names = [  # issue 43's order: the headline, optimizer steps, gpt2-124m, packing, tests
        "environment",
        "throughput tiny seq 64",
        "optimizer steps",
        "throughput tiny seq 32,64",
        "packing tiny 4 x 32",
        "gpu tests",
        "test suite",
    ]
    assert [s[0] for s in steps] == names
    assert all(state == "ok" for _, state, _ in steps), steps
    assert sorted(p.name for p in out.iterdir()) == sorted(
        {f"{log}.log" for *_, log in steps} | {"summary.md", "profile.txt"}
    )
    assert len(list(out.iterdir())) <= 8  # what the device tool brings back
    # each benchmark's numbers reached the summary
    assert len(re.findall(r"ratio harness/bare: tokens/s [\d.]+", summary)) == 3, summary
    # the headline's profile (always taken on the CPU): one step's operations by CPU time
    profile = (out / "profile.txt").read_text()
    assert "harness step 3 of 3 under torch.profiler" in profile
    assert re.search(r"^ +aten::mm ", profile, re.MULTILINE), profile
    assert "profile.txt" in summary
    assert re.search(r"2 at once x 1 thread: total tok/s [\d,]+ .* GPU util n/a", summary)
    for row in ("adamw", r"muon", r"muon\[ns=float32\]"):
        assert re.search(rf"^{row} +[\d.]+ +[\d.]+ +[\d.]+$", summary, re.MULTILINE), row
    assert re.search(r"\d+ passed, \d+ skipped", summary), summary  # the gpu tests: some ran
    assert re.search(r"\d+/\d+ tests? collected", summary), summary  # the suite: collected
    assert "reference torch.optim.AdamW(fused=True)" in summary


@pytest.mark.slow
def test_every_step_of_the_gpu_plan_takes_its_flags(
    gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each benchmark of the CUDA plan parses its command line (with ``--device cpu``: the
    parsers refuse ``cuda`` without a GPU); a misspelt flag or a bad value exits 2."""
    threads = torch.get_num_threads()
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    steps = gpu_check.plan("cuda", gpu_check.CUDA, Path("/out"))
    assert {s.limit_key for s in steps} == {*gpu_check.CUDA.limits, "tests"}
    benches = [s for s in steps if s.argv[2].endswith(".py")]
    assert len(benches) == 2 + 1 + 1  # throughput, packing (tiny only on a GPU), optimizer steps
    try:
        for step in benches:
            argv = [a if a != "cuda" else "cpu" for a in step.argv[2:]]
            monkeypatch.setattr(sys, "argv", argv)
            args = _load(Path(argv[0])).parse_args()
            assert args.device == "cpu", step
            if step.kind == "throughput":
                assert args.batch_size == 256 and args.steps % args.warmup_steps == 0
            if step.kind == "packing":
                assert args.packs == "2,4,8" and args.runs == 8
    finally:
        torch.set_num_threads(threads)


def test_the_gpu_plan_puts_the_headline_first_and_fits_420_s(gpu_check: ModuleType) -> None:
    """Issue 43: the numbers that matter most come first, each step has a limit, and the limits
    add up to the one call's 420 s (the suite gets what the others leave)."""
    steps = gpu_check.plan("cuda", gpu_check.CUDA, Path("/out"))
    assert [s.name for s in steps] == [
        "environment",
        "throughput 160m seq 2048",
        "optimizer steps",
        "throughput gpt2-124m seq 1024,2048",
        "packing tiny 16 x 128",  # gpt2-124m's packing left out: 40 s did not reach a pack
        "gpu tests",
        "test suite",
    ]
    headline = steps[1].argv
    assert headline[headline.index("--batch-size") + 1] == "256"
    assert headline[headline.index("--profile-below") + 1] == "0.97"
    assert headline[headline.index("--profile-out") + 1] == str(Path("/out") / "profile.txt")
    assert all(s.limit_key in gpu_check.CUDA.limits for s in steps[:-1])
    assert sum(gpu_check.CUDA.limits.values()) <= gpu_check.CUDA.budget_s == 420
    assert gpu_check.CUDA.limits["tests_gpu"] >= 88  # the 21 gpu tests took 88 s (RESULTS §14)
    for step in steps:
        if step.kind == "packing":
            assert step.argv[step.argv.index("--packs") + 1] == "2,4,8"


def test_the_suite_step_leaves_out_slurm_and_the_gpu_tests(gpu_check: ModuleType) -> None:
    (suite,) = [s for s in gpu_check.plan("cuda", gpu_check.CUDA, Path("/o")) if s.kind == "tests"]
    assert "not slurm and not gpu" in suite.argv
    assert "--ignore=tests/system/test_gpu_check.py" in suite.argv  # never itself
    assert "--collect-only" not in suite.argv
    (cpu_suite,) = [
        s for s in gpu_check.plan("cpu", gpu_check.CPU, Path("/o")) if s.kind == "tests"
    ]
    assert "--collect-only" in cpu_suite.argv
    env = gpu_check.step_env("cuda")
    assert "CI" not in env  # SLURM, Chromium and tmux tests would fail loudly under CI=true
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)
    assert gpu_check.step_env("cpu")["CUDA_VISIBLE_DEVICES"] == ""


def test_the_gpu_tests_step_collects_without_the_files_the_gpu_image_cannot_import(
    gpu_check: ModuleType,
) -> None:
    # the first GPU run's gpu step died collecting tests/system/test_notebook.py (no nbformat)
    (gpu,) = [
        s for s in gpu_check.plan("cuda", gpu_check.CUDA, Path("/o")) if s.kind == "tests_gpu"
    ]
    assert "gpu" in gpu.argv
    for path in gpu_check.NOT_ON_GPU_IMAGE:
        assert f"--ignore={path}" in gpu.argv, path


def test_a_step_past_its_limit_is_killed_and_the_next_one_runs(
    gpu_check: ModuleType, tmp_path: Path
) -> None:
    slow = gpu_check.Step("sleeper", "env", (sys.executable, "-c", "import time; time.sleep(60)"))
    state, wall = gpu_check.run_step(slow, tmp_path / "env.log", dict(os.environ), 1.0)
    assert state == "timed out after 1 s", (state, wall)
    fails = gpu_check.Step("fails", "env", (sys.executable, "-c", "raise SystemExit(3)"))
    assert gpu_check.run_step(fails, tmp_path / "env.log", dict(os.environ), 30)[0] == (
        "failed (exit 3)"
    )
    log = (tmp_path / "env.log").read_text()
    assert "# sleeper: timed out after 1 s" in log and "# fails: failed (exit 3)" in log
