"""Optimizers as users write them, named by file in the tests' grids (``./user_optimizers.py:X``):
``EveryPattern`` has every constructor signature real optimizers have; ``TwoPassSAM`` needs a
closure (the SAM family); ``Modal`` has ``train()``/``eval()`` modes (schedule-free)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Optional

import torch


def identity(x: torch.Tensor) -> torch.Tensor:
    """The default transform of ``EveryPattern``'s update."""
    return x


def halve(x: torch.Tensor) -> torch.Tensor:
    """A transform a grid may name instead (``./user_optimizers.py:halve``)."""
    return 0.5 * x


class EveryPattern(torch.optim.Optimizer):
    """SGD whose constructor records what it was given (``self.received``)."""

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float, float] = (0.9, 0.99, 0.999),  # annotated 3-tuple
        clip_range=(-1.0, 1.0),  # unannotated tuple: clip_range1, clip_range2
        scale: Optional[float] = None,  # annotated None  # noqa: UP045 (as users write it)
        anneal=None,  # unannotated None: any scalar
        mode: Literal["fast", "slow"] = "fast",
        label="plain",  # a string default
        centered: bool = False,
        flips=False,  # inferred bool
        period: int = 10,
        every=5,  # inferred int
        gamma: float = 0.5,
        decay=0.9,  # inferred float
        base: type[torch.optim.Optimizer] = torch.optim.SGD,  # a class, by reference
        transform: Callable[[torch.Tensor], torch.Tensor] = identity,  # a function
        table: dict | None = None,  # unrepresentable: left at its default
        warmup_steps: int = 0,  # a run field it does not read: opt_warmup_steps
        steps=3,  # the same, inferred: opt_steps
        weight_decay: float = 0.0,
    ):
        self.received = {k: v for k, v in locals().items() if k not in ("self", "params")}
        self.received.pop("__class__", None)
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):
        fn = self.received["transform"]
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(fn(p.grad), alpha=-group["lr"])


class TwoPassSAM(torch.optim.Optimizer):
    """Sharpness-aware SGD: ascend to ``w + rho * g / |g|``, take the gradient there (the
    closure's second forward and backward), step from ``w``. Its step requires the closure."""

    def __init__(self, params, lr: float = 1e-2, rho: float = 0.05, weight_decay: float = 0.0):
        super().__init__(params, {"lr": lr, "rho_": rho, "weight_decay": weight_decay})
        self.closure_calls = 0

    def step(self, closure):
        params = [p for g in self.param_groups for p in g["params"] if p.grad is not None]
        with torch.no_grad():
            norm = torch.norm(torch.stack([p.grad.norm() for p in params])) + 1e-12
            shifts = [self.param_groups[0]["rho_"] * p.grad / norm for p in params]
            for p, e in zip(params, shifts, strict=True):
                p.add_(e)
        with torch.enable_grad():
            loss = closure()
        self.closure_calls += 1
        with torch.no_grad():
            for p, e in zip(params, shifts, strict=True):
                p.sub_(e)
                p.add_(p.grad, alpha=-self.param_groups[0]["lr"])
        return loss


class Fragile(torch.optim.Optimizer):
    """SGD whose constructor refuses ``depth`` above 3 and whose step fails at ``depth`` 3."""

    def __init__(self, params, lr: float = 1e-3, depth: int = 1):
        if depth > 3:
            raise ValueError(f"depth {depth} is too deep")
        super().__init__(params, {"lr": lr, "depth": depth})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            if group["depth"] == 3:
                raise RuntimeError("not enough values to unpack (expected 3, got 2)")
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])
