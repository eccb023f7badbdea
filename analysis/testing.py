"""Synthetic result rows for tests and examples: real Parquet rows without training.

``write_run(root, make_run(optimizer="sgd", lr=0.1, seed=1), val_ppl=30.0)`` writes the row and
loss curve exactly as a finished run would (through :func:`harness.results.write_result`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.config import RunConfig
from harness.outcome import RunResult
from harness.results import write_result

#: A tiny, complete run config; :func:`make_run` overrides any field.
BASE_FIELDS: dict[str, Any] = {
    "grid": "synthetic",
    "model": "tiny",
    "n_layer": 2,
    "n_head": 2,
    "d_model": 32,
    "vocab_size": 256,
    "norm": "rmsnorm",
    "activation": "swiglu",
    "positions": "rope",
    "rotary_frac": 0.25,
    "tie_weights": False,
    "mlp_ratio": 8 / 3,
    "scaled_init": True,
    "bias": False,
    "dataset": "kjv",
    "seq_len": 64,
    "batch_size": 16,
    "micro_batch_size": 16,
    "tokens": 1_048_576,
    "eval_tokens": 4096,
    "optimizer": "adamw",
    "lr": 1e-3,
}


def make_run(**fields: Any) -> RunConfig:
    """A :class:`RunConfig` from :data:`BASE_FIELDS` and ``fields`` (``steps`` derived)."""
    d = {**BASE_FIELDS, **fields}
    d.setdefault("steps", d["tokens"] // (d["batch_size"] * d["seq_len"]))
    return RunConfig(**d)


def write_run(
    root: Path,
    run: RunConfig,
    *,
    val_ppl: float | None = None,
    status: str = "completed",
    metrics: Mapping[str, float | None] | None = None,
    points: int = 5,
    source: str = "synthetic",
) -> Path:
    """Write one run's row and a loss curve falling to ``log(val_ppl)``; returns the row path."""
    val_loss = math.log(val_ppl) if val_ppl is not None and status == "completed" else None
    final = val_loss if val_loss is not None else math.log(run.vocab_size)
    step_tokens = run.batch_size * run.seq_len
    curve = [
        {
            "step": (k + 1) * run.steps // points,
            "tokens": (k + 1) * run.steps // points * step_tokens,
            "train_loss": final + (math.log(run.vocab_size) - final) * (1 - (k + 1) / points),
            "lr": run.lr,
            "val_loss": None,
            "elapsed_s": float(k + 1),
        }
        for k in range(points)
    ]
    result = RunResult(
        status=status,
        params=1000,
        val_loss=val_loss,
        val_ppl=val_ppl if status == "completed" else None,
        train_loss=curve[-1]["train_loss"],
        steps_done=run.steps,
        tokens_seen=run.tokens,
        wall_s=float(points),
        error=None if status == "completed" else f"{status} (synthetic)",
        device="cpu",
        metrics=dict(metrics or {}),
        curve=curve,
    )
    return write_result(root, run, result, {"device": "cpu", "source": source})
