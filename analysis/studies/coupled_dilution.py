"""Why Coupled Adam's higher lr is unstable at laptop scale: the vocabulary-averaged second
moment is diluted, so its steps on frequent embedding rows are far larger than Adam's.

Coupled Adam divides every embedding row's first moment by the same root second moment, the mean
over the V rows, sqrt(v_bar) (paper Eq. 24); Adam divides row i's by its own sqrt(v_i). Per
coordinate, Coupled Adam's step on row i is therefore sqrt(v_i / v_bar) times Adam's (for the
same m_i). The paper's Eq. 18 (E[v_i] = A p_i, App. D) gives v_bar = A / V and a ratio of
sqrt(V p_i): about 43 for the most frequent GPT-2 token of OpenWebText (p = 0.037). This script
trains the coupled_adam grid's local runs step by step with the harness's own model, optimizer and
batches, and records at every step:

- ``seen``: the fraction of the vocabulary that occurred (as a target) in the batches so far;
- ``ratio_top``: sqrt(v_i / v_bar) for the most frequent training token (v per row: mean over
  the H coordinates of the bias-corrected second moment), and ``ratio_top100``: its median over
  the 100 most frequent tokens; ``eq18``: sqrt(V p_i) of the most frequent token;
- ``rel_step_top100``: the median over the 100 most frequent rows of ||e_i(t) - e_i(t-1)|| /
  ||e_i(t-1)||, the relative change of a frequent embedding row in one step.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from harness.core.catalogue import with_values
from harness.data.batches import TokenData
from harness.data.catalogue import vocab_lookup
from harness.data.prepare import ensure_prepared
from harness.grid.load import load_grid
from harness.model.gpt import GPT
from harness.optim.build import build_optimizer
from harness.optim.schedule import lr_at

TOP = 100


def measure(grid: Path, data_root: Path, optimizer: str, lr: float, steps: int | None = None):
    """Per-step measurements (module docstring) of the grid's local run ``optimizer`` at ``lr``
    (seed 0), trained for ``steps`` steps (default: the grid's)."""
    runs = load_grid(grid, vocab=vocab_lookup(data_root), local=True).runs
    (run,) = [
        r
        for r in runs
        if r.optim.optimizer == optimizer and r.optim.lr == lr and r.execution.seed == 0
    ]
    if steps is not None:
        run = with_values(
            run,
            steps=steps,
            tokens=steps * run.data.tokens_per_step,
            warmup_steps=round(0.1 * steps),
        )
    torch.manual_seed(run.execution.seed)
    data = TokenData(ensure_prepared(run.data.dataset, data_root))
    model = GPT(run.arch, run.data.seq_len)
    opt = build_optimizer(model, run)
    emb = model.embedding.weight
    counts = data.unigram_counts()
    V = len(counts)
    top = np.argsort(-counts, kind="stable")[:TOP]
    p_top = counts[top[0]] / counts.sum()
    seen = np.zeros(V, dtype=bool)
    out = []
    for step in range(run.data.steps):
        lr_now = lr_at(step, run)
        for g in opt.param_groups:
            g["lr"] = lr_now * g.get("lr_scale", 1.0)
        x, y = data.batch(step, run.execution.seed, run.data.batch_size, run.data.seq_len)
        seen[np.unique(y.numpy())] = True
        before = emb.detach()[top].clone()
        loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), run.optim.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        state = opt.state[emb]
        beta2 = run.optim.beta2
        v = state["exp_avg_sq"].double().mean(dim=1) / (1 - beta2 ** state["step"])  # (V,)
        v_bar = float(v.mean())
        ratio = torch.sqrt(v[top] / v_bar).numpy()
        rel = ((emb.detach()[top] - before).norm(dim=1) / before.norm(dim=1)).numpy()
        out.append(
            {
                "step": step + 1,
                "loss": float(loss.detach()),
                "seen": float(seen.mean()),
                "ratio_top": float(ratio[0]),
                "ratio_top100": float(np.median(ratio)),
                "eq18": math.sqrt(V * p_top),
                "rel_step_top100": float(np.median(rel)),
            }
        )
    return out
