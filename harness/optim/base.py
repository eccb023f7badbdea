"""The shared skeleton of the zoo's optimizers: multi-tensor (``torch._foreach_*``) updates.

Every optimizer here subclasses :class:`ForeachOptimizer` and implements one method,
``_update_group(group, params, grads)``, which updates all parameters of one param group with a
handful of ``torch._foreach_*`` calls (one kernel per tensor list on CUDA, no Python loop over
elements). ``group["lr"]`` is read at every step, so a trainer may rewrite it between steps.

State lives in ``self.state[p]`` as plain tensors and ints (``step`` is a Python int), so
``state_dict()``/``load_state_dict()`` round-trip exactly and a resumed run is bitwise identical.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor

State = dict[Tensor, dict[str, Any]]
"""An optimizer's per-parameter state (``optimizer.state``)."""
Group = dict[str, Any]
"""A torch param group: ``params`` plus hyperparameters (``lr``, ``weight_decay``, ...)."""


def zeros_like(p: Tensor) -> Tensor:
    """A zero state buffer shaped, typed and laid out like ``p``."""
    return torch.zeros_like(p, memory_format=torch.preserve_format)


def state_tensors(
    state: State,
    params: list[Tensor],
    key: str,
    init: Callable[[Tensor], Tensor] = zeros_like,
) -> list[Tensor]:
    """The state tensor ``key`` of every parameter, created with ``init(p)`` on first use."""
    out = []
    for p in params:
        s = state[p]
        t = s.get(key)
        if t is None:
            t = s[key] = init(p)
        out.append(t)
    return out


def advance_steps(state: State, params: list[Tensor]) -> list[int]:
    """Increment each parameter's step counter (1 on its first update); return the new values."""
    steps = []
    for p in params:
        s = state[p]
        s["step"] = s.get("step", 0) + 1
        steps.append(s["step"])
    return steps


def decay_weights(params: list[Tensor], lr: float, weight_decay: float) -> None:
    """Decoupled weight decay, ``w <- w - lr * weight_decay * w`` (torch AdamW's convention)."""
    if weight_decay != 0:
        torch._foreach_mul_(params, 1 - lr * weight_decay)


def check_range(name: str, value: float, low: float, high: float | None = None) -> None:
    """Raise ValueError unless ``low <= value`` (and ``value < high`` when given)."""
    ok = low <= value and (high is None or value < high)
    if not ok:
        bound = f"[{low}, {high})" if high is not None else f">= {low}"
        raise ValueError(f"invalid {name} {value!r}: must be {bound}")


class ForeachOptimizer(torch.optim.Optimizer):
    """Base class: collects each group's parameters that have gradients and updates them."""

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        check_range("lr", defaults["lr"], 0.0)
        check_range("weight_decay", defaults.get("weight_decay", 0.0), 0.0)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]  # torch types the closure loosely
        """Perform one optimization step over every param group.

        Args:
            closure: Optional callable that re-evaluates the model and returns the loss.

        Returns:
            The closure's loss, or None.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            grads = [p.grad for p in params]
            if any(g.is_sparse for g in grads):
                raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")
            self._update_group(group, params, grads)
        return loss

    def _update_group(self, group: Group, params: list[Tensor], grads: list[Tensor]) -> None:
        """Update ``params`` (those of ``group`` with a gradient) in place."""
        raise NotImplementedError
