"""Curves with the shape of a published speed-run table (issue 39): six arms, each with its own
run length, 1 to 10 seeds, validation loss every 125 steps, written as an import would read them.

Arm ``a`` of :data:`ARMS` reaches the target ``TARGET`` at ``steps_at_target`` steps (its mean
seed); each seed's curve is shifted by a seeded offset, so its own crossing moves by a few steps.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TARGET = 3.28
EVERY = 125
BATCH, SEQ = 8, 1024  # tokens per step: BATCH * SEQ


@dataclass(frozen=True)
class Arm:
    label: str
    seeds: int
    steps: int  # the arm's own run length
    at_target: float  # steps at which the mean seed reaches TARGET
    devices: int = 8


ARMS = (
    Arm("record1", 1, 3500, 3400.0),
    Arm("record2", 1, 3375, 3300.0),
    Arm("record3", 4, 3250, 3180.0),
    Arm("record4", 4, 3125, 3010.0, devices=2),
    Arm("record5", 10, 3000, 2870.0),
    Arm("record6", 8, 2875, 2690.0),
)


def loss(step: np.ndarray, at_target: float, offset: float) -> np.ndarray:
    """A power law through TARGET at ``at_target`` (slope about -1e-4 per step there)."""
    return 3.0 + (TARGET - 3.0) * (at_target / step) ** 1.3 + offset


def curves(rng: np.random.Generator, sd: float = 0.004) -> list[dict[str, object]]:
    """One row per evaluation: label, seed, step, val_loss (and the run's own length)."""
    out = []
    for arm in ARMS:
        for seed in range(arm.seeds):
            offset = float(rng.normal(0.0, sd))
            steps = np.arange(EVERY, arm.steps + 1, EVERY)
            if steps[-1] != arm.steps:
                steps = np.append(steps, arm.steps)
            for s, v in zip(steps, loss(steps.astype(float), arm.at_target, offset), strict=True):
                out.append({"label": arm.label, "seed": seed, "step": int(s), "val_loss": v})
    return out


def write_csvs(folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """``runs.csv`` (one row per run: config and final val_loss) and ``curves.csv``."""
    pts = curves(np.random.default_rng(seed))
    runs = []
    for arm in ARMS:
        for s in range(arm.seeds):
            last = [p for p in pts if p["label"] == arm.label and p["seed"] == s][-1]
            runs.append(
                {
                    "label": arm.label,
                    "optimizer": "muon",
                    "seed": s,
                    "steps": arm.steps,
                    "batch_size": BATCH,
                    "seq_len": SEQ,
                    "tokens": arm.steps * BATCH * SEQ,
                    "gpus_per_run": arm.devices,
                    "val_loss": last["val_loss"],
                }
            )
    return _write(folder / "runs.csv", runs), _write(folder / "curves.csv", pts)


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def write_wandb(folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """The same runs as a W&B export: ``runs.csv`` (Name, State, Group, W&B's metadata, the
    configs and the summary ``val/loss``) and ``history.csv`` (Name, _step, val/loss, lr)."""
    pts = curves(np.random.default_rng(seed))
    runs, history = [], []
    for arm in ARMS:
        for s in range(arm.seeds):
            name = f"{arm.label}-seed{s}"
            mine = [p for p in pts if p["label"] == arm.label and p["seed"] == s]
            runs.append(
                {
                    "Name": name,
                    "State": "finished",
                    "Notes": "-",
                    "User": "someone",
                    "Created": "2026-01-01T00:00:00",
                    "Runtime": 600,
                    "Group": arm.label,
                    "optimizer": "muon",
                    "seed": s,
                    "lr": 0.05,
                    "steps": arm.steps,
                    "batch_size": BATCH,
                    "seq_len": SEQ,
                    "val/loss": round(mine[-1]["val_loss"], 4),
                }
            )
            history += [
                {"Name": name, "_step": p["step"], "val/loss": round(p["val_loss"], 4), "lr": 0.05}
                for p in mine
            ]
    return _write(folder / "runs.csv", runs), _write(folder / "history.csv", history)
