"""Build the optimizer of a run: routing + registry + the run's hyperparameters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from harness.core.config import RunConfig
from harness.core.registry import load_class
from harness.optim.composite import CompositeOptimizer
from harness.optim.registry import get_spec
from harness.optim.routing import param_groups
from harness.optim.spec import Hooks, OptimizerSpec

FALLBACK = "adamw"
"""The optimizer of the groups a spec does not take (``OptimizerSpec.takes``)."""


def build_optimizer(model: nn.Module, run: RunConfig) -> torch.optim.Optimizer:
    """The optimizer named by ``run.optim.optimizer`` over ``model``'s routed parameter groups.

    Every group gets an ``lr_scale`` (1.0; ``embedding_lr_factor`` for the embedding group),
    which the trainer multiplies into each step's learning rate, and the extra keys the
    optimizer's spec asks for (``coupled``, ``muon``). Groups can go to other optimizers than the
    main one, as parts of a :class:`CompositeOptimizer` (``main``, ``embedding``, ``fallback``):

    - with ``run.optim.embedding_optimizer`` set to another optimizer, the embedding group (which
      holds the head when tied; an untied head stays with the main optimizer) is optimized by it,
      with the run's values where the run sets them, else its defaults (``sgd``: momentum 0.9,
      paper Sec. 6.2);
    - an optimizer whose spec ``takes`` only some groups (one defined on matrices) leaves the
      others to AdamW, with the run's Adam fields where set, else AdamW's defaults.

    Args:
        model: A model exposing ``.embedding`` and ``.head`` (None when tied).
        run: A resolved :class:`~harness.core.config.RunConfig`.

    Returns:
        The optimizer, with ``param_groups`` named ``embedding``/``head``/``matrix``/``vector``.
    """
    opt = run.optim
    groups = param_groups(model, opt.weight_decay, opt.decay_params)
    for g in groups:
        g["lr_scale"] = 1.0
        if g["name"] == "embedding" and opt.embedding_lr_factor is not None:
            g["lr_scale"] = float(opt.embedding_lr_factor)
    spec = get_spec(opt.optimizer)
    other = opt.embedding_optimizer
    embedding = get_spec(other) if other is not None and other != opt.optimizer else None
    parts: dict[str, tuple[OptimizerSpec, list[dict[str, Any]]]] = {}
    for g in groups:
        if embedding is not None and g["name"] == "embedding":
            part, part_spec = "embedding", embedding
        elif spec.takes is not None and g["name"] not in spec.takes:
            part, part_spec = "fallback", get_spec(FALLBACK)
        else:
            part, part_spec = "main", spec
        parts.setdefault(part, (part_spec, []))[1].append(g)
    names = {id(p): n for n, p in model.named_parameters()}
    if list(parts) == ["main"]:
        return _construct(spec, groups, run, names)
    order = [p for p in ("main", "embedding", "fallback") if p in parts]
    return CompositeOptimizer(
        {p: _construct(*parts[p], run, names, fill_defaults=p != "main") for p in order}
    )


def _construct(
    spec: OptimizerSpec,
    groups: list[dict[str, Any]],
    run: RunConfig,
    names: dict[int, str],
    *,
    fill_defaults: bool = False,
) -> torch.optim.Optimizer:
    kwargs = spec.kwargs(run, fill_defaults=fill_defaults)
    # a subclass's constructor takes its own keywords (``lr``, ...), not the base class's
    make: Callable[..., torch.optim.Optimizer] = load_class(spec.cls, torch.optim.Optimizer)
    if spec.hooks.named_parameters:  # Adam-mini: (name, parameter) pairs, its own groups
        named = [(names[id(p)], p) for g in groups for p in g["params"]]
        opt = make(named, lr=run.optim.lr, weight_decay=run.optim.weight_decay, **kwargs)
        for g in opt.param_groups:
            g.setdefault("lr_scale", 1.0)
        return opt
    for g in groups:
        g.update(spec.group_options.get(g["name"], {}))
    return make(groups, lr=run.optim.lr, **kwargs)


def hooks_of(run: RunConfig) -> Hooks:
    """What the run's (main) optimizer needs from the loop beyond ``step()``."""
    return get_spec(run.optim.optimizer).hooks
