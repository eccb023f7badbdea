"""Helpers shared by the benchmarks: synthetic token data, resolved runs, robust summaries."""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from harness.core.config import RunConfig
from harness.data.catalogue import vocab_lookup
from harness.grid.resolve import Resolver


def synthetic_dataset(folder: Path, vocab_size: int, train_tokens: int, val_tokens: int) -> Path:
    """A user dataset of uniform random token ids (speed does not depend on the ids): the
    ``train.bin``, ``val.bin`` and ``meta.json`` a run can point at. Returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for name, n in (("train.bin", train_tokens), ("val.bin", val_tokens)):
        rng.integers(0, vocab_size, size=n, dtype=np.uint16).tofile(folder / name)
    meta = {"name": "synthetic", "vocab_size": vocab_size, "dtype": "uint16"}
    (folder / "meta.json").write_text(json.dumps(meta) + "\n")
    return folder


def bench_run(data_dir: Path, grid: str = "bench", **point: Any) -> RunConfig:
    """A resolved run on ``data_dir`` (AdamW, the paper's small-scale hyperparameters) with
    ``point``'s overrides, exactly as a grid would resolve it."""
    base: dict[str, Any] = {
        "dataset": str(data_dir),
        "optimizer": "adamw",
        "lr": 6e-4,
        "beta1": 0.9,
        "beta2": 0.95,
        "weight_decay": 0.1,
        "lr_min": 6e-5,
    }
    resolver = Resolver(grid, "full", vocab_lookup(data_dir.parent), "benchmark")
    return resolver.resolve({**base, **point}, grid)


def summary(values: Sequence[float]) -> str:
    """``median [min, max]`` of a few repeats."""
    return f"{statistics.median(values):,.0f} [{min(values):,.0f}, {max(values):,.0f}]"


def machine() -> str:
    """One line naming the machine and the software."""
    if torch.cuda.is_available():
        device = torch.cuda.get_device_name()
    else:
        device = (
            f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} threads"
        )
    return f"{device}; torch {torch.__version__}; python {platform.python_version()}"


def parse_args_quick(ap: argparse.ArgumentParser, quick: dict[str, Any]) -> argparse.Namespace:
    """``ap``'s arguments, with a ``--quick`` flag that makes ``quick`` the defaults: a run of a
    few seconds that checks the benchmark works (the test suite runs it; its numbers are noise)."""
    ap.add_argument(
        "--quick", action="store_true", help=f"a few seconds, to check it runs: {quick}"
    )
    if "--quick" in sys.argv[1:]:
        ap.set_defaults(**quick)
    return ap.parse_args()
