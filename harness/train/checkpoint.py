"""Resumable training state, written atomically (temp file + rename).

A checkpoint holds everything a resumed run needs to continue bit for bit: model and optimizer
state, the step reached, the loss curve so far, accumulated timings and the RNG states. The data
order needs no state: batch ``k`` is a pure function of (seed, k).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from harness.core.files import atomic_write


@dataclass
class LoopState:
    """What a checkpoint carries besides model and optimizer."""

    step: int = 0
    """Optimizer steps completed."""
    curve: list[dict[str, Any]] = field(default_factory=list)
    """Loss-curve points so far."""
    wall_s: float = 0.0
    """Wall seconds spent in earlier attempts."""
    timed_s: float = 0.0
    """Training seconds counted for throughput (first step of each attempt excluded)."""
    timed_tokens: int = 0
    """Tokens trained during ``timed_s``."""
    data_wait_s: float = 0.0
    """Seconds spent producing batches (host side)."""
    opt_s: float = 0.0
    """Optimizer-step seconds on log steps (each synchronised and timed)."""
    profiled_s: float = 0.0
    """Whole-step seconds on log steps (the name is kept: checkpoints store it)."""
    compile_s: float | None = None
    """Extra seconds of the first step when compiled."""
    interval_loss: float = 0.0
    """Sum of the training losses of the unfinished logging interval."""
    interval_steps: int = 0
    """Steps in the unfinished logging interval."""
    extra_passes: int = 0
    """Forward and backward passes beyond one per step (an optimizer's closure calls)."""
    branch_of: str | None = None
    """The run whose state at ``branched_at`` this run started from (a branch, see
    :mod:`harness.grid.branches`); None: it trained from step 0 itself."""
    branched_at: int = 0
    """The step this run started from (its parent trained the steps before it)."""


@dataclass(frozen=True, slots=True)
class Checkpointing:
    """Where a run checkpoints, and how often."""

    path: Path
    """The checkpoint file (resumed from when it exists)."""
    every_s: float
    """Seconds between checkpoints (besides the one written when the run is asked to stop)."""
    progress: Path | None = None
    """A small JSON file (:func:`write_progress`) rewritten at each logged point with the step
    and the loss curve reached: what a run killed without warning (SIGKILL, the kernel's OOM
    killer) had done, between checkpoints. None: not written."""
    weights: Path | None = None
    """Where the final weights (the model's state dict at the evaluated point) are written once
    the run completes (:func:`save_weights`); None: not kept."""
    start_from: Path | None = None
    """A branch's first state, its parent's at the branch point (:mod:`harness.grid.branches`),
    restored when :attr:`path` does not exist yet; None: a run starts from step 0."""
    branch_points: tuple[tuple[int, Path], ...] = ()
    """(step, file): a parent also writes its state to ``file`` once it has done ``step`` steps
    (the :attr:`start_from` of the branch that starts there)."""


def write_progress(path: Path, step: int, curve: list[dict[str, Any]]) -> None:
    """Record atomically that a run reached ``step`` with loss curve ``curve``."""
    atomic_write(path, lambda fh: fh.write(json.dumps({"step": step, "curve": curve}).encode()))


def read_progress(path: Path) -> dict[str, Any] | None:
    """What :func:`write_progress` recorded (``step``, ``curve``); None when there is nothing
    readable."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(doc, dict) and isinstance(doc.get("step"), int)
    return doc if ok and isinstance(doc.get("curve"), list) else None


def rng_state() -> dict[str, Any]:
    """The RNG states of python, numpy and torch (CPU and CUDA)."""
    state = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` captured."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save(path: Path, state: dict[str, Any]) -> None:
    """Write ``state`` to ``path`` atomically."""
    atomic_write(path, lambda fh: torch.save(state, fh))


def save_weights(path: Path, model: torch.nn.Module) -> None:
    """Write ``model``'s state dict to ``path`` atomically, as ``{"model": state_dict}``
    (what :func:`harness.downstream.evaluate.load_lm` reads)."""
    save(path, {"model": model.state_dict()})


def load(path: Path) -> dict[str, Any] | None:
    """The checkpoint at ``path``, or None when there is none."""
    if not path.exists():
        return None
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    if not isinstance(ckpt, dict):
        raise ValueError(f"{path}: not a checkpoint (a {type(ckpt).__name__}, not a dict)")
    return ckpt


def progress(path: Path) -> dict[str, Any] | None:
    """The loop state a checkpoint holds (``step``, ``curve``, ``wall_s``, ...), its tensors
    memory-mapped rather than read; None when there is no readable checkpoint."""
    try:
        saved = torch.load(path, map_location="cpu", weights_only=False, mmap=True)
    except (OSError, RuntimeError, ValueError, EOFError, KeyError):
        return None
    loop = saved.get("loop") if isinstance(saved, dict) else None
    return loop if isinstance(loop, dict) else None
