"""What tracking metrics through training (``track:``, issue 23) costs on the tiny preset.

The same run (tiny preset, V 8192, 64 x 8 tokens per step, eval every ``--eval-every`` steps on
``--eval-tokens`` held-out tokens) is trained with each ``track`` setting, in rotating order,
``--repeats`` times. Reported per setting: the run's process CPU time (one thread, so CPU time
is the work done, whatever else loads the machine; median [min, max]) and its overhead over the
same run tracking nothing; and, measured directly on a fresh model, the CPU time of one
evaluation point's tracked metrics (median of 5 calls of ``Tracker.measure``) times the number of
evaluation points, over the untracked run's CPU time: the same overhead without the noise of
whole-run timings.

BLAS and torch run on one thread (``OPENBLAS_NUM_THREADS=1``, as a launched run on a shared CPU
should: with its default threads OpenBLAS's eigensolver behind ``iso`` is 10x slower on a loaded
2-core machine).

Example:
    python benchmarks/tracking.py                       # 200 steps, eval every 50, 3 repeats
    python benchmarks/tracking.py --steps 100 --repeats 1
    python benchmarks/tracking.py --quick               # seconds: checks it runs (the suite)
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # after the thread settings, before numpy loads
import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path

import torch
from common import bench_run, machine, parse_args_quick, synthetic_dataset

from harness.data.batches import TokenData
from harness.data.catalogue import resolve_dataset
from harness.metrics.catalogue import track_names
from harness.model.build import build_model
from harness.train.loop import train
from harness.workloads.tracking import Tracker

SETTINGS = {
    "nothing (default)": None,
    "buckets": ["buckets"],
    "mu_norm, rho": ["mu_norm", "rho"],
    "embedding": ["embedding"],
    "embedding, head, buckets": ["embedding", "head", "buckets"],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--eval-tokens", type=int, default=2**16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--val-tokens", type=int, default=2**17, help="held-out tokens made")
    args = parse_args_quick(
        ap, {"steps": 4, "eval_every": 2, "eval_tokens": 2**10, "repeats": 1, "val_tokens": 2**12}
    )
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        data = synthetic_dataset(Path(tmp) / "synthetic", 8192, 2_000_000, args.val_tokens)
        point = {
            "model": "tiny",
            "vocab_size": 8192,
            "seq_len": 64,
            "batch_size": 8,
            "steps": args.steps,
            "eval_every": args.eval_every,
            "eval_tokens": args.eval_tokens,
            "log_every": 10,
        }
        runs = {name: bench_run(data, track=track, **point) for name, track in SETTINGS.items()}
        walls: dict[str, list[float]] = {name: [] for name in SETTINGS}
        names = list(SETTINGS)
        for r in range(args.repeats):
            for name in names[r % len(names) :] + names[: r % len(names)]:  # rotate the order
                t = time.process_time()
                train(runs[name], data_root=Path(tmp), log=None)
                walls[name].append(time.process_time() - t)
        points = args.steps // args.eval_every - (args.steps % args.eval_every == 0)
        base = statistics.median(walls[names[0]])
        model = build_model(runs[names[0]].arch, 64)
        tokens = TokenData(resolve_dataset(str(data), Path(tmp)))
        print(
            f"# {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; {machine()}; "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        print(
            f"# tiny, {args.steps} steps of 64 x 8 tokens, eval every {args.eval_every} steps "
            f"on {args.eval_tokens} tokens ({points} intermediate points + the end), "
            f"{args.repeats} repeats"
        )
        print("| track | run CPU s | overhead (runs) | per point ms | overhead (direct) |")
        print("|---|---|---|---|---|")
        for name, track in SETTINGS.items():
            tracker = Tracker(track_names(track), tokens, torch.device("cpu"))
            cost = _measure_cost(tracker, model)
            wall = statistics.median(walls[name])
            spread = f"{wall:.2f} [{min(walls[name]):.2f}, {max(walls[name]):.2f}]"
            print(
                f"| {name} | {spread} | {100 * (wall / base - 1):+.1f}% | "
                f"{1000 * cost:.1f} | {100 * cost * points / base:.2f}% |"
            )


def _measure_cost(tracker: Tracker, model: torch.nn.Module) -> float:
    """Median CPU seconds of one evaluation point's tracked metrics (buckets: their bincounts over
    one evaluation's worth of per-token losses are timed with the evaluation, not here)."""
    times = []
    for _ in range(5):
        t = time.process_time()
        tracker.measure(model, tracker.buckets())
        times.append(time.process_time() - t)
    return statistics.median(times)


if __name__ == "__main__":
    main()
