"""Build the optimizer of a run: routing + registry + the run's hyperparameters."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from harness.optim.composite import CompositeOptimizer
from harness.optim.registry import get_spec
from harness.optim.routing import param_groups
from harness.optim.spec import OptimizerSpec


def build_optimizer(model: nn.Module, run: Any) -> torch.optim.Optimizer:
    """The optimizer named by ``run.optim.optimizer`` over ``model``'s routed parameter groups.

    Every group gets an ``lr_scale`` (1.0; ``embedding_lr_factor`` for the embedding group),
    which the trainer multiplies into each step's learning rate, and the extra keys the
    optimizer's spec asks for (``coupled``, ``muon``). With ``run.optim.embedding_optimizer`` set to
    another optimizer, the embedding group (which holds the head when tied; an untied head stays
    with the main optimizer) is optimized by that one: a :class:`CompositeOptimizer` with parts
    ``main`` and ``embedding``. The embedding optimizer's hyperparameters are the run's values
    where the run sets them, else its spec's defaults (``sgd``: momentum 0.9, paper Sec. 6.2).

    Args:
        model: A GPT exposing ``.embedding`` and ``.head`` (None when tied).
        run: A resolved :class:`~harness.core.config.RunConfig`.

    Returns:
        The optimizer, with ``param_groups`` named ``embedding``/``head``/``matrix``/``vector``.
    """
    opt = run.optim
    spec = get_spec(opt.optimizer)
    groups = param_groups(model, opt.weight_decay, opt.decay_params)
    for g in groups:
        g["lr_scale"] = 1.0
        if g["name"] == "embedding" and opt.embedding_lr_factor is not None:
            g["lr_scale"] = float(opt.embedding_lr_factor)
    if opt.embedding_optimizer is None or opt.embedding_optimizer == opt.optimizer:
        return _construct(spec, groups, run)
    emb_spec = get_spec(opt.embedding_optimizer)
    emb = [g for g in groups if g["name"] == "embedding"]
    rest = [g for g in groups if g["name"] != "embedding"]
    parts = {"embedding": _construct(emb_spec, emb, run, fill_defaults=True)}
    if rest:
        parts = {"main": _construct(spec, rest, run), **parts}
    return CompositeOptimizer(parts)


def _construct(
    spec: OptimizerSpec, groups: list[dict[str, Any]], run: Any, *, fill_defaults: bool = False
) -> torch.optim.Optimizer:
    for g in groups:
        g.update(spec.group_options.get(g["name"], {}))
    return spec.load()(groups, lr=run.optim.lr, **spec.kwargs(run, fill_defaults=fill_defaults))
