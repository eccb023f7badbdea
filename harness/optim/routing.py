"""Parameter routing in one place: which parameters form which optimizer group, and which are
weight-decayed.

Groups: ``embedding`` (input token embedding, and the head when tied), ``head`` (untied output
head), ``matrix`` (every other >= 2-D weight), ``vector`` (norm gains, biases, learned positions).
Weight decay applies to the parameters the run's ``decay_params`` convention names
(:data:`DECAYED`): by default ``matrix`` only. A group holding both decayed and undecayed
parameters (``vector`` with learned positions under ``no_embedding``) becomes two torch param
groups of the same name, one with the decay and one without.
"""

from __future__ import annotations

from typing import Any, cast

from torch import nn

from harness.core.lm import LanguageModel, is_tied, output_weight
from harness.optim.spec import DECAYED, GROUPS


def split_parameters(model: nn.Module) -> dict[str, list[nn.Parameter]]:
    """Partition a model's trainable parameters into ``GROUPS`` (each parameter exactly once).

    A GPT (a :class:`~harness.core.lm.LanguageModel`) exposes ``model.embedding``
    (``nn.Embedding``) and ``model.head`` (``nn.Linear``, or None when tied); learned position
    embeddings are routed to ``vector`` (no weight decay). Another model (a workload's) has
    only ``matrix`` (>= 2-D) and ``vector`` parameters.
    """
    emb = head = None  # a workload's model (harness.workloads) has neither
    if isinstance(model, LanguageModel):
        lm = cast(LanguageModel, model)
        emb = lm.embedding.weight
        head = None if is_tied(lm) else output_weight(lm)
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


def _kind(model: nn.Module, group: str, p: nn.Parameter) -> str:
    """The routed group of ``p``, except ``position`` for learned absolute positions."""
    pos = getattr(model, "pos_embedding", None)
    return "position" if pos is not None and p is pos.weight else group


def param_groups(
    model: nn.Module, weight_decay: float, decay_params: str = "matrices"
) -> list[dict[str, Any]]:
    """torch param groups with a ``name`` key; ``weight_decay`` on the parameters the
    ``decay_params`` convention names (:data:`DECAYED`), 0 on the others."""
    kinds = DECAYED[decay_params]
    groups = []
    for name, params in split_parameters(model).items():
        decayed = [p for p in params if _kind(model, name, p) in kinds]
        kept = [p for p in params if _kind(model, name, p) not in kinds]
        for part, wd in ((decayed, weight_decay), (kept, 0.0)):
            if part:
                groups.append({"name": name, "params": part, "weight_decay": wd})
    return groups


__all__ = ["DECAYED", "GROUPS", "is_tied", "param_groups", "split_parameters"]
