"""Sign-based optimizers: signSGD, Signum and Lion. All use decoupled weight decay
(``w <- w - lr * wd * w``, applied before the step; the step does not depend on w).

- signSGD: ``w <- w - lr * sign(g)``.
- Signum (Bernstein et al. 2018, the talk's Table 1): ``m <- beta * m + (1 - beta) * g``,
  ``w <- w - lr * sign(m)``; with ``beta = 0`` it is exactly signSGD.
- Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms", Algorithm 2):
  ``c <- beta1 * m + (1 - beta1) * g``, ``w <- w - lr * sign(c)``,
  ``m <- beta2 * m + (1 - beta2) * g``.

``sign(0) = 0``: a coordinate whose direction is exactly zero does not move.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

from harness.optim.base import (
    ForeachOptimizer,
    Group,
    check_range,
    decay_weights,
    state_tensors,
)


class SignSGD(ForeachOptimizer):
    """signSGD: ``w <- w - lr * sign(g)``.

    Args:
        params: Parameters or param groups.
        lr: Learning rate (the size of every coordinate's step).
        weight_decay: Decoupled weight decay.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-4, weight_decay: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay})

    def _update_group(self, group: Group, params: list[Tensor], grads: list[Tensor]) -> None:
        decay_weights(params, group["lr"], group["weight_decay"])
        torch._foreach_add_(params, torch._foreach_sign(grads), alpha=-group["lr"])


class Signum(ForeachOptimizer):
    """Signum, sign descent with momentum: ``m <- beta m + (1 - beta) g``, ``w <- w - lr sign(m)``.

    Args:
        params: Parameters or param groups.
        lr: Learning rate.
        beta: Momentum (EMA) coefficient of ``m`` (the run field ``beta1``); 0 gives signSGD.
        weight_decay: Decoupled weight decay.
    """

    def __init__(
        self, params: Iterable[Any], lr: float = 1e-4, beta: float = 0.9, weight_decay: float = 0.0
    ) -> None:
        check_range("beta", beta, 0.0, 1.0)
        super().__init__(params, {"lr": lr, "beta": beta, "weight_decay": weight_decay})

    def _update_group(self, group: Group, params: list[Tensor], grads: list[Tensor]) -> None:
        decay_weights(params, group["lr"], group["weight_decay"])
        exp_avgs = state_tensors(self.state, params, "exp_avg")
        torch._foreach_lerp_(exp_avgs, grads, 1 - group["beta"])  # beta = 0: exp_avg == g exactly
        torch._foreach_add_(params, torch._foreach_sign(exp_avgs), alpha=-group["lr"])


class Lion(ForeachOptimizer):
    """Lion (EvoLved Sign Momentum, Chen et al. 2023).

    Args:
        params: Parameters or param groups.
        lr: Learning rate.
        betas: ``(beta1, beta2)``: beta1 interpolates the step direction, beta2 the momentum.
        weight_decay: Decoupled weight decay.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-4,
        betas: tuple[float, float] = (0.9, 0.99),
        weight_decay: float = 0.0,
    ) -> None:
        check_range("beta1", betas[0], 0.0, 1.0)
        check_range("beta2", betas[1], 0.0, 1.0)
        defaults = {"lr": lr, "betas": tuple(betas), "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def _update_group(self, group: Group, params: list[Tensor], grads: list[Tensor]) -> None:
        beta1, beta2 = group["betas"]
        decay_weights(params, group["lr"], group["weight_decay"])
        exp_avgs = state_tensors(self.state, params, "exp_avg")
        direction = torch._foreach_lerp(exp_avgs, grads, 1 - beta1)
        torch._foreach_sign_(direction)
        torch._foreach_add_(params, direction, alpha=-group["lr"])
        torch._foreach_lerp_(exp_avgs, grads, 1 - beta2)
