"""Shared helpers of the optimizer tests: tiny real runs resolved as a grid resolves them."""

from __future__ import annotations

from typing import Any

import torch

from harness.core.config import RunConfig
from harness.grid.resolve import Resolver
from harness.model.gpt import GPT

VOCAB, SEQ = 64, 8


def make_run(**point: Any) -> RunConfig:
    """A resolved run of a tiny GPT (tied ``tiny-gpt2`` unless ``model="tiny"``)."""
    base = {"model": "tiny-gpt2", "n_layer": 1, "d_model": 32, "n_head": 2, "vocab_size": VOCAB}
    base |= {"seq_len": SEQ, "batch_size": 2, "tokens": 10_000, "lr": 1e-2, "weight_decay": 0.1}
    if point.get("optimizer") == "sgd_cclip":
        base["clip_value"] = 0.5
    resolver = Resolver("test", "local", lambda dataset: VOCAB, "test")
    return resolver.resolve(base | point, "point")


def make_model(run: RunConfig, seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    return GPT(run.arch, run.data.seq_len)


def train_steps(
    model: GPT, opt: torch.optim.Optimizer, steps: range, base_lr: float = 1e-2
) -> None:
    """Steps on random tokens that depend only on the step index (like the trainer's batches)."""
    for step in steps:
        gen = torch.Generator().manual_seed(1000 + step)
        x = torch.randint(0, VOCAB, (2, SEQ), generator=gen)
        y = torch.randint(0, VOCAB, (2, SEQ), generator=gen)
        lr = base_lr * (1 - step / 20)
        for g in opt.param_groups:  # what the trainer does
            g["lr"] = lr * g.get("lr_scale", 1.0)
        model(x, y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
