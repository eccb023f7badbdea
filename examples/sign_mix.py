"""SignMixAdam: an optimizer the harness has never seen, benchmarked without editing it.

How much of Adam's advantage over SGD is the sign of its step? (The talk's Table 1: Signum,
sign descent with momentum, closes 96% of the SGD-Adam gap.) SignMixAdam interpolates between
the two with one new hyperparameter, ``gamma``::

    m <- beta1 m + (1 - beta1) g,      v <- beta2 v + (1 - beta2) g^2      (as AdamW)
    u <- m_hat / (sqrt(v_hat) + eps)                                      (AdamW's step)
    w <- w - lr * wd * w - lr * ((1 - gamma) * u + gamma * sign(m_hat))

``gamma = 0`` is AdamW, ``gamma = 1`` sign descent on Adam's momentum. The harness reads its
hyperparameters from the constructor: ``lr`` and ``weight_decay`` are the harness's, ``betas`` is
the run's ``beta1``/``beta2``, ``eps`` the run's ``eps``, and ``gamma`` becomes a grid key and a
typed column. Used by ``examples/sign_mix.yaml``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch


class SignMixAdam(torch.optim.Optimizer):
    """AdamW whose step is mixed with its sign: ``(1 - gamma) * u + gamma * sign(m_hat)``.

    Args:
        params: Parameters or param groups.
        lr: Learning rate.
        betas: Decay rates of the first and second moments.
        eps: Added to ``sqrt(v_hat)``.
        weight_decay: Decoupled weight decay.
        gamma: Weight of the sign step, in [0, 1].
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        gamma: float = 0.5,
    ) -> None:
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"invalid gamma {gamma!r}: must be in [0, 1]")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, {**defaults, "gamma": gamma})

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """One update of every parameter with a gradient."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p)
                    state["v"] = torch.zeros_like(p)
                state["step"] += 1
                t, m, v = state["step"], state["m"], state["v"]
                m.lerp_(p.grad, 1 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                m_hat = m / (1 - beta1**t)
                u = m_hat / ((v / (1 - beta2**t)).sqrt() + group["eps"])
                p.mul_(1 - group["lr"] * group["weight_decay"])
                mixed = u.mul_(1 - group["gamma"]).add_(m_hat.sign(), alpha=group["gamma"])
                p.add_(mixed, alpha=-group["lr"])
        return loss
