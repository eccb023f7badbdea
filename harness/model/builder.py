"""A user's model builder, read without torch: which architecture fields it takes.

A builder is a callable whose keyword arguments are architecture fields (``vocab_size``,
``d_model``, ``n_layer``, ...) and optionally ``seq_len``; it returns an ``nn.Module`` mapping
token ids ``(B, T)`` to logits ``(B, T, V)``, with its token embedding as ``.embedding`` (an
``nn.Embedding``) and its output head as ``.head`` (an ``nn.Linear``, or None when tied to the
embedding): see :class:`harness.model.build.LanguageModel`. Grid resolution fills the fields it
takes (its defaults where the grid sets none); the others are None.
"""

from __future__ import annotations

import inspect
from typing import Any

from harness.core.config import Architecture
from harness.core.errors import UserError
from harness.core.registry import load_object

EXTRA_ARGUMENTS = ("seq_len",)
"""Builder arguments that are not architecture fields."""


def builder_arguments(ref: str) -> dict[str, Any]:
    """The arguments builder ``ref`` takes -> their defaults (``inspect.Parameter.empty`` when
    required).

    Raises:
        UserError: ``ref`` cannot be loaded, is not callable, or takes an argument that is not
            an architecture field.
    """
    fn = load_object(ref)
    if not callable(fn):
        raise UserError(f"model {ref!r} is not callable")
    names = set(Architecture.__dataclass_fields__) | set(EXTRA_ARGUMENTS)
    out = {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        if p.name not in names:
            raise UserError(
                f"model {ref!r}: argument {p.name!r} is not an architecture field; valid: "
                f"{', '.join(sorted(names - {'model'}))}"
            )
        out[p.name] = p.default
    if "vocab_size" not in out:
        raise UserError(f"model {ref!r}: the builder must take 'vocab_size'")
    return out
