"""What the harness needs of every model it trains (its GPT and a user's builder's), and the one
place that decides whether the output head is tied to the embedding. Plain Python: the torch
types (``nn.Embedding``, ``nn.Linear``) are named in the documentation only."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class LanguageModel(Protocol):
    """What the harness needs of a model: logits from token ids, and where its embedding and
    output head are (for parameter routing and the embedding metrics)."""

    embedding: Any
    """The token embedding (``nn.Embedding``, V x d)."""
    head: Any
    """The output head (``nn.Linear``, V x d), or None when it is tied to the embedding."""

    def __call__(self, idx: Any) -> Any:
        """Logits ``(B, T, V)`` of token ids ``(B, T)``."""
        ...


def is_tied(model: LanguageModel) -> bool:
    """True when the output head shares the embedding matrix (``model.head`` is None)."""
    return model.head is None


def output_weight(model: LanguageModel) -> Any:
    """The (V, d) matrix mapping the final hidden state to logits: the embedding's when tied,
    else the head's."""
    return model.embedding.weight if is_tied(model) else model.head.weight
