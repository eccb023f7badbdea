"""Synthetic result rows for tests and examples: real Parquet rows without training.

``write_run(root, make_run(optimizer="sgd", lr=0.1, seed=1), val_ppl=30.0)`` writes the row and
loss curve exactly as a finished run would (through :func:`harness.store.rows.write_result`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.core.catalogue import from_flat
from harness.core.config import RunConfig
from harness.core.result import RunResult, Status
from harness.store.rows import write_result

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
    "tokens": 1_048_576,
    "eval_tokens": 4096,
    "optimizer": "adamw",
    "lr": 1e-3,
}


def make_run(**fields: Any) -> RunConfig:
    """A :class:`RunConfig` from :data:`BASE_FIELDS` and ``fields`` (``steps`` derived)."""
    d = {**BASE_FIELDS, **fields}
    d.setdefault("steps", d["tokens"] // (d["batch_size"] * d["seq_len"]))
    d.setdefault("micro_batch_size", d["batch_size"])
    return from_flat(d)


def write_run(
    root: Path,
    run: RunConfig,
    *,
    val_ppl: float | None = None,
    status: Status = Status.COMPLETED,
    metrics: Mapping[str, float | None] | None = None,
    points: int = 5,
    source: str = "synthetic",
    losses: Sequence[float] | None = None,
    curve: Sequence[Mapping[str, Any]] | None = None,
) -> Path:
    """Write one run's row and a loss curve falling linearly to ``log(val_ppl)`` (or the
    training losses ``losses``, one per point; or the ``curve`` points given: dicts of curve
    columns, missing ones NULL); returns the row path."""
    points = len(losses) if losses is not None else points
    completed = status == Status.COMPLETED
    val_loss = math.log(val_ppl) if val_ppl is not None and completed else None
    uniform = math.log(run.arch.vocab_size)
    final = val_loss if val_loss is not None else uniform
    steps = run.data.steps
    generated = [
        {
            "step": (k + 1) * steps // points,
            "tokens": (k + 1) * steps // points * run.data.tokens_per_step,
            "train_loss": losses[k]
            if losses is not None
            else final + (uniform - final) * (1 - (k + 1) / points),
            "lr": run.optim.lr,
            "val_loss": None,
            "elapsed_s": float(k + 1),
        }
        for k in range(points)
    ]
    written = [dict(p) for p in curve] if curve is not None else generated
    outcome = {
        "val_loss": val_loss,
        "val_ppl": val_ppl if completed else None,
        "train_loss": written[-1].get("train_loss") if written else None,
        "wall_s": float(points),
    }
    result = RunResult(
        status=status,
        params=1000,
        steps_done=steps,
        tokens_seen=run.data.tokens,
        error=None if completed else f"{status} (synthetic)",
        device="cpu",
        metrics=outcome | dict(metrics or {}),
        curve=written,
    )
    return write_result(root, run, result, {"device": "cpu", "source": source})
