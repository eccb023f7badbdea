"""Parameter routing in one place: which parameters form which optimizer group.

Groups: ``embedding`` (input token embedding, and the head when tied), ``head`` (untied output
head), ``matrix`` (every other >= 2-D weight), ``vector`` (norm gains, biases, learned positions).
Weight decay applies to ``matrix`` only.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from harness.optim.spec import GROUPS


def split_parameters(model: nn.Module) -> dict[str, list[nn.Parameter]]:
    """Partition a GPT's trainable parameters into ``GROUPS`` (each parameter exactly once).

    The model exposes ``model.embedding`` (``nn.Embedding``) and ``model.head`` (``nn.Linear``,
    or None when tied). Learned position embeddings are routed to ``vector`` (no weight decay).
    """
    emb = model.embedding.weight
    head = None if model.head is None else model.head.weight
    out: dict[str, list[nn.Parameter]] = {g: [] for g in GROUPS}
    seen: set[int] = set()
    for name, p in model.named_parameters():
        if not p.requires_grad or id(p) in seen:
            continue
        seen.add(id(p))
        if p is emb:
            out["embedding"].append(p)
        elif head is not None and p is head:
            out["head"].append(p)
        elif p.ndim >= 2 and "pos" not in name:
            out["matrix"].append(p)
        else:
            out["vector"].append(p)
    return out


def param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """torch param groups with a ``name`` key; weight decay on matrices only."""
    groups = []
    for name, params in split_parameters(model).items():
        if params:
            wd = weight_decay if name == "matrix" else 0.0
            groups.append({"name": name, "params": params, "weight_decay": wd})
    return groups


def is_tied(model: nn.Module) -> bool:
    """True when the output head shares the embedding matrix."""
    return model.head is None


__all__ = ["GROUPS", "is_tied", "param_groups", "split_parameters"]
