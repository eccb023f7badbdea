"""The model a run trains: the harness's GPT (``model`` names a preset), or a user's
(``model: my_module:build`` or ``model: path/to/file.py:build``, see
:mod:`harness.model.builder`), which returns a :class:`LanguageModel`. Parameters and FLOPs
of a user's model are measured on the meta device (no memory): FLOPs per token count ``6 x``
the weights of its matrix multiplies (no attention term).

Torch is imported inside the functions that need it, so that planning code may import this.
"""

from __future__ import annotations

import functools
from typing import Any

from harness.core.config import Architecture
from harness.core.errors import UserError
from harness.core.lm import LanguageModel, is_tied
from harness.core.registry import is_reference, load_object
from harness.model.architecture import flops_per_token, matmul_params, param_count
from harness.model.builder import builder_arguments


def model_code(arch: Architecture) -> object:
    """The code that builds ``arch``'s model (the GPT class, or the user's builder)."""
    if is_reference(arch.model):
        return load_object(arch.model)
    from harness.model.gpt import GPT

    return GPT


def build_model(arch: Architecture, seq_len: int) -> Any:
    """The model of a run (on the current default device).

    Raises:
        UserError: a user's builder returned something that is not a :class:`LanguageModel`.
    """
    if not is_reference(arch.model):
        from harness.model.gpt import GPT

        return GPT(arch, seq_len)
    kwargs = {
        name: seq_len if name == "seq_len" else getattr(arch, name)
        for name in builder_arguments(arch.model)
    }
    model = load_object(arch.model)(**kwargs)
    import torch

    if not (isinstance(model, torch.nn.Module) and isinstance(model, LanguageModel)):
        raise UserError(
            f"model {arch.model!r} returned {type(model).__name__}, not an nn.Module with "
            "'.embedding' (nn.Embedding) and '.head' (nn.Linear or None)"
        )
    return model


@functools.cache
def _measured(arch: Architecture, seq_len: int) -> tuple[int, int]:
    """(parameters, matmul weights incl. the head) of a user's model, built on the meta device."""
    import torch

    from harness.model.gpt import trainable_params

    with torch.device("meta"):
        model = build_model(arch, seq_len)
    params = trainable_params(model)
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    tied = is_tied(model)
    return params, linear + (model.embedding.weight.numel() if tied else 0)


def count_params(arch: Architecture, seq_len: int) -> int:
    """Trainable parameters of the run's model, without allocating it."""
    if is_reference(arch.model):
        return _measured(arch, seq_len)[0]
    return param_count(arch, seq_len)


def training_flops_per_token(arch: Architecture, seq_len: int) -> float:
    """Training FLOPs per token: the GPT formula, or ``6 x`` matmul weights of a user's model."""
    if is_reference(arch.model):
        return 6.0 * _measured(arch, seq_len)[1]
    assert matmul_params(arch) > 0
    return flops_per_token(arch, seq_len)
