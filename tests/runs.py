"""Helpers that build small, real run configs for tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.config import RunConfig
from harness.resolve import Resolver

TINY: dict[str, Any] = {
    "model": "tiny",
    "dataset": "classics-bpe8k",
    "optimizer": "adamw",
    "lr": 3e-3,
    "seq_len": 32,
    "batch_size": 8,
    "tokens": 8 * 32 * 6,
    "eval_tokens": 2048,
    "warmup_steps": 1,
    "log_every": 2,
    "weight_decay": 0.1,
}


def tiny_run(data_root: Path, grid: str = "t", **overrides: Any) -> RunConfig:
    """A resolved tiny run (6 steps of 8 x 32 tokens unless overridden)."""
    point = {**TINY, **overrides}
    return Resolver(grid, "local", data_root, "test").resolve(point, "test run")
