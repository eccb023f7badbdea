"""End-of-run diagnostics stored in the row: embedding metrics (paper Eqs. 25-28) of the input
embedding (and of the untied output head, as ``head_*``) and the second-moment probe (App. D.2)."""

from __future__ import annotations

from typing import Any

import torch

from harness.core.lm import is_tied, output_weight
from harness.metrics.embedding import embedding_metrics, second_moment_probe


def final_metrics(
    model: Any, optimizer: torch.optim.Optimizer, data: Any
) -> dict[str, float | None]:
    """Embedding metrics and the second-moment probe of a trained GPT.

    Args:
        model: the (unwrapped) GPT with ``.embedding`` and ``.head`` (None when tied).
        optimizer: its optimizer, for the probe of the embedding's second moment.
        data: the run's ``TokenData`` (unigram counts of the training split).
    """
    counts = data.unigram_counts()
    out: dict[str, float | None] = dict(embedding_metrics(model.embedding.weight.detach(), counts))
    if not is_tied(model):
        head = embedding_metrics(output_weight(model).detach(), counts)
        out.update({f"head_{k}": v for k, v in head.items()})
    out.update(second_moment_probe(optimizer, model.embedding.weight, counts))
    return out
