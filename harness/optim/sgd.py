"""SGD with heavy-ball momentum, and SGD with coordinate-wise clipping after momentum.

Update of a parameter w with gradient g (paper App. C, Algorithm 2; the talk's SGD)::

    w <- w - lr * wd * w                   (weight_decay_mode "decoupled", the talk's Table 1)
    g <- g + wd * w                        (weight_decay_mode "l2", torch.optim.SGD, plainLM)
    b <- g on the first step, else momentum * b + g
    d <- g + momentum * b if nesterov else b     (d = g when momentum = 0)
    w <- w - lr * d                        (sgd_cclip: w <- w - lr * clamp(d, -c, c))

Weight decay is decoupled (``w <- (1 - lr * wd) w``) by default, because the talk's Table 1
decouples weight decay for every optimizer it compares; ``weight_decay_mode="l2"`` adds the L2
term to the gradient before momentum, as ``torch.optim.SGD`` (and so the talk's base code,
plainLM) does: under momentum m the term accumulates, a steady-state shrink of
``lr * wd / (1 - m)`` per step, 10x the decoupled one at m = 0.9. With ``weight_decay=0``, or
with ``l2``, this SGD is bitwise equal to ``torch.optim.SGD(momentum=..., nesterov=...,
weight_decay=..., foreach=True)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

from harness.optim.base import ForeachOptimizer, Group, State, check_range, decay_weights


def momentum_direction(
    state: State, params: list[Tensor], grads: list[Tensor], momentum: float, nesterov: bool
) -> list[Tensor]:
    """Update the heavy-ball buffers ``b`` and return the step directions (not to be modified)."""
    if momentum == 0:
        return grads
    bufs: list[Tensor] = []
    old_bufs: list[Tensor] = []
    old_grads: list[Tensor] = []
    for p, g in zip(params, grads, strict=True):
        s = state[p]
        buf = s.get("momentum_buffer")
        if buf is None:  # first step: b = g
            buf = s["momentum_buffer"] = torch.clone(g).detach()
        else:
            old_bufs.append(buf)
            old_grads.append(g)
        bufs.append(buf)
    if old_bufs:
        torch._foreach_mul_(old_bufs, momentum)
        torch._foreach_add_(old_bufs, old_grads)
    if nesterov:
        return torch._foreach_add(grads, bufs, alpha=momentum)  # type: ignore[return-value]  # torch._foreach_* return lists; the stub says tuple
    return bufs


WEIGHT_DECAY_MODES = ("decoupled", "l2")


def _sgd_defaults(
    lr: float, momentum: float, nesterov: bool, weight_decay: float, mode: str | None
) -> dict[str, Any]:
    check_range("momentum", momentum, 0.0)
    if nesterov and momentum <= 0:
        raise ValueError("nesterov momentum needs momentum > 0")
    mode = mode or "decoupled"  # None: a run recorded before the field existed (decoupled)
    if mode not in WEIGHT_DECAY_MODES:
        raise ValueError(f"invalid weight_decay_mode {mode!r}: must be one of {WEIGHT_DECAY_MODES}")
    return {
        "lr": lr,
        "momentum": momentum,
        "nesterov": bool(nesterov),
        "weight_decay": weight_decay,
        "weight_decay_mode": mode,
    }


class SGD(ForeachOptimizer):
    """SGD with optional heavy-ball or Nesterov momentum and decoupled weight decay.

    Args:
        params: Parameters or param groups.
        lr: Learning rate.
        momentum: Heavy-ball coefficient gamma (0: plain SGD, no buffer stored). 0.9 by default,
            not torch's 0: the paper's Sec. 6.2 embedding SGD and the usual choice, and the value
            every grid naming ``sgd`` without a momentum has run with.
        nesterov: Step along ``g + momentum * b`` instead of ``b``; needs ``momentum > 0``.
        weight_decay: Weight decay coefficient wd.
        weight_decay_mode: ``decoupled`` (``w <- w - lr * wd * w``) or ``l2`` (``g <- g + wd *
            w`` before momentum); None means ``decoupled``.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0.9,
        nesterov: bool = False,
        weight_decay: float = 0.0,
        weight_decay_mode: str | None = "decoupled",
    ) -> None:
        defaults = _sgd_defaults(lr, momentum, nesterov, weight_decay, weight_decay_mode)
        super().__init__(params, defaults)

    def _update_group(self, group: Group, params: list[Tensor], grads: list[Tensor]) -> None:
        lr, wd = group["lr"], group["weight_decay"]
        if group["weight_decay_mode"] == "l2" and wd != 0:
            # a copy: p.grad stays as is
            grads = torch._foreach_add(grads, params, alpha=wd)  # type: ignore[assignment]  # torch._foreach_* return lists; the stub says tuple
        else:
            decay_weights(params, lr, wd)
        d = momentum_direction(self.state, params, grads, group["momentum"], group["nesterov"])
        torch._foreach_add_(params, self._transform(group, d), alpha=-lr)

    def _transform(self, group: Group, direction: list[Tensor]) -> list[Tensor]:
        """Map the momentum direction to the step (identity for SGD)."""
        return direction


class SGDCClip(SGD):
    """SGD whose step is clipped coordinate-wise after momentum: ``w <- w - lr * clamp(d, -c, c)``.

    The talk's "SGD + Cclip" (Table 1). Arguments as :class:`SGD`, plus:

    Args:
        clip_value: The threshold c > 0 of the coordinate-wise clip; required (no value is
            accepted as a default: it sets the step's scale as much as ``lr`` does).
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0.9,
        nesterov: bool = False,
        weight_decay: float = 0.0,
        weight_decay_mode: str | None = "decoupled",
        *,
        clip_value: float,
    ) -> None:
        if not clip_value > 0:
            raise ValueError(f"invalid clip_value {clip_value!r}: must be > 0")
        defaults = _sgd_defaults(lr, momentum, nesterov, weight_decay, weight_decay_mode)
        ForeachOptimizer.__init__(self, params, {**defaults, "clip_value": clip_value})

    def _transform(self, group: Group, direction: list[Tensor]) -> list[Tensor]:
        c = group["clip_value"]
        clipped = torch._foreach_clamp_min(direction, -c)  # a copy: direction may be the buffers
        torch._foreach_clamp_max_(clipped, c)
        return clipped  # type: ignore[return-value]  # torch._foreach_* return lists; the stub says tuple
