"""Total tokens/s of one device running several small runs at once vs one at a time.

The same N runs (one grid, the same shape, different seeds) are trained through
``harness.launch.worker.packing.run_packed`` with ``per_device = 1`` (one after another; on CPU once
with all cores per run, once with one core) and with ``per_device = k`` for each ``k`` of
``--packs`` (k processes at once; on CPU the cores split between them). The ratio is against the
first mode. Each mode starts from an empty results folder and is repeated
``--repeats`` times, modes alternating; medians are printed with [min, max].

- ``total tok/s``: N * tokens per run / wall time from the first process start to the last exit
  (process start-up and evaluation included: what a packed task really delivers).
- ``per-run tok/s``: the median of the runs' own ``tokens_per_s`` (their training steps).
- ``steady tok/s``: per-run tok/s * runs at once, the device's throughput while all are training.
- ``GPU util``: on CUDA, the mean of NVML's ``utilization.gpu`` of the device (percent of time a
  kernel ran), sampled every 0.2 s from the first process start to the last exit.

Example:
    python benchmarks/packing.py --device cpu --runs 4 --packs 2,4
    python benchmarks/packing.py --device cuda --batch-size 32 --seq-len 256 --packs 2,4,8
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch
from common import (  # benchmarks/common.py
    bench_run,
    machine,
    parse_args_quick,
    summary,
    synthetic_dataset,
)

from harness.launch.contract import ExecutionSpec
from harness.launch.local.slots import available_cores
from harness.launch.profile import load_profile
from harness.launch.worker.packing import run_packed
from harness.store.db import connect
from harness.store.manifest import write_manifest


def one_mode(
    args: argparse.Namespace, data_dir: Path, per_device: int, threads: int | None, tmp: Path
) -> dict:
    """Train the N runs, ``per_device`` at once with ``threads`` torch threads each, in a fresh
    results root; time it."""
    root = Path(tempfile.mkdtemp(dir=tmp))
    runs = [
        bench_run(
            data_dir,
            grid="packing",
            model=args.preset,
            seq_len=args.seq_len,
            batch_size=args.batch_size,
            steps=args.steps,
            warmup_steps=1,
            log_every=args.steps // 4 or 1,
            eval_tokens=args.batch_size * args.seq_len,
            seed=s,
            compile=args.compile,
        )
        for s in range(args.runs)
    ]
    write_manifest(root, "packing", runs)
    start = time.perf_counter()
    spec = ExecutionSpec.build(load_profile("local"), root, "packing", data_dir.parent)
    ids = [r.run_id for r in runs]
    with Utilisation(args.device == "cuda") as util:
        statuses = run_packed(spec.with_threads(threads), ids, per_device=per_device)
    wall = time.perf_counter() - start
    assert set(statuses.values()) == {"completed"}, statuses
    rows = connect(root, "packing").sql("SELECT * FROM runs").to_arrow_table().to_pylist()
    per_run = statistics.median(r["tokens_per_s"] for r in rows)
    tokens = sum(r["tokens_seen"] for r in rows)
    return {
        "total": tokens / wall,
        "per_run": per_run,
        "steady": per_run * per_device,
        "util": util.mean(),
    }


class Utilisation:
    """Samples the GPU's utilisation (NVML's ``utilization.gpu``, percent) every ``every_s`` in a
    thread while the ``with`` block runs; :meth:`mean` is None on the CPU or without NVML."""

    def __init__(self, on_gpu: bool, every_s: float = 0.2) -> None:
        self.read = _nvml_reader() if on_gpu else None
        self.every_s = every_s
        self.samples: list[float] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> Utilisation:
        if self.read is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()

    def _sample(self) -> None:
        assert self.read is not None
        while not self._done.wait(self.every_s):
            value = self.read()
            if value is not None:
                self.samples.append(value)

    def mean(self) -> float | None:
        return statistics.fmean(self.samples) if self.samples else None


def _nvml_reader() -> Callable[[], float | None] | None:
    """A function reading GPU 0's utilisation (percent): NVML through ``pynvml`` (the
    ``nvidia-ml-py`` package), else ``nvidia-smi``; None when neither works. GPU 0 is the
    first of ``CUDA_VISIBLE_DEVICES`` for the run processes, and NVML's index 0 when that is
    unset (the benchmark's case)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        return lambda: float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
    except Exception:  # no pynvml, or NVML refused: try the command line tool
        pass

    def smi() -> float | None:
        try:
            out = subprocess.run(
                [
                    "nvidia-smi",
                    "--query-gpu=utilization.gpu",
                    "--format=csv,noheader,nounits",
                    "--id=0",
                ],
                capture_output=True,
                text=True,
                timeout=5,
                check=True,
            ).stdout
            return float(out.split()[0])
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            return None

    return smi if smi() is not None else None


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--runs", type=int, default=4, help="runs per mode (N)")
    ap.add_argument("--packs", default="2,4", help="comma-separated runs at once to compare")
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--compile", choices=["auto", "on", "off"], default="auto")
    ap.add_argument("--vocab", type=int, default=8192)
    args = parse_args_quick(
        ap, {"runs": 2, "packs": "2", "steps": 4, "batch_size": 8, "repeats": 1}
    )
    if (args.device == "cuda") != torch.cuda.is_available():
        ap.error(
            f"--device {args.device}, but CUDA available: {torch.cuda.is_available()} "
            "(hide GPUs with CUDA_VISIBLE_DEVICES= for cpu)"
        )
    args.cores = available_cores()
    return args


def main() -> None:
    args = parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M')}  {machine()}; {args.cores} cores", flush=True)
    # (runs at once, torch threads each): one at a time with all cores, then with one core (on a
    # busy machine a second thread can cost more than it gives), then the packs.
    packs = [int(k) for k in args.packs.split(",")]
    if args.device == "cpu":
        modes = [(1, args.cores), (1, 1), *((k, max(1, args.cores // k)) for k in packs)]
    else:
        modes = [(1, None), *((k, None) for k in packs)]
    with tempfile.TemporaryDirectory() as tmp:
        data = synthetic_dataset(Path(tmp) / "data" / "synthetic", args.vocab, 1 << 20, 1 << 16)
        measured: dict[tuple[int, int | None], list[dict]] = {mode: [] for mode in modes}
        for _ in range(args.repeats):
            for mode in modes:
                measured[mode].append(one_mode(args, data, *mode, Path(tmp)))
                m = measured[mode][-1]
                print(
                    f"  {_label(mode)}: total {m['total']:,.0f} tok/s, per run "
                    f"{m['per_run']:,.0f} tok/s, GPU util {_util([m])}",
                    flush=True,
                )
    tokens = args.batch_size * args.seq_len * args.steps
    print(
        f"{args.runs} runs of {args.preset}, {args.steps} steps of {args.batch_size} x "
        f"{args.seq_len} ({tokens:,} tokens each), pid {os.getpid()}"
    )
    base = statistics.median(m["total"] for m in measured[modes[0]])
    for mode in modes:
        ms = measured[mode]
        ratio = statistics.median(m["total"] for m in ms) / base
        print(
            f"  {_label(mode)}: total tok/s {summary([m['total'] for m in ms])} ({ratio:.2f}x)  "
            f"per-run {summary([m['per_run'] for m in ms])}  "
            f"steady {summary([m['steady'] for m in ms])}  GPU util {_util(ms)}"
        )


def _util(measured: list[dict]) -> str:
    """The median of the modes' mean GPU utilisation, 'n/a' on the CPU or without NVML."""
    values = [m["util"] for m in measured if m["util"] is not None]
    return f"{statistics.median(values):.0f}%" if values else "n/a"


def _label(mode: tuple[int, int | None]) -> str:
    k, threads = mode
    return f"{k} at once" + (f" x {threads} thread{'s' if threads > 1 else ''}" if threads else "")


if __name__ == "__main__":
    main()
