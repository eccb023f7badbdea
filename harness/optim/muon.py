"""Muon: momentum orthogonalised by Newton-Schulz for hidden matrices, AdamW for the rest.

For a parameter W (A x B, higher-dimensional weights viewed as ``(shape[0], -1)``) in a group
with ``muon=True``, following Keller Jordan's reference implementation (and ``torch.optim.Muon``)::

    b <- momentum * b + (1 - momentum) * g             (momentum_buffer, an EMA)
    u <- g + momentum * (b - g) if nesterov else b
    O <- NewtonSchulz5(u)                              (quintic, coefficients below, 5 steps)
    W <- W - lr * wd * W - lr * 0.2 * sqrt(max(A, B)) * O

Learning-rate convention: the update is scaled by ``0.2 * sqrt(max(A, B))`` (Moonshot AI, "Muon
is Scalable for LLM Training", Eq. 4; ``adjust_lr_fn="match_rms_adamw"`` in torch), which gives
the orthogonalised update the RMS of a typical AdamW update (about 0.2). Hence one ``lr`` and one
``weight_decay`` serve both the Muon matrices and the AdamW parameters, as a run has one ``lr``.
(Keller Jordan's original scales by ``sqrt(max(1, A / B))`` with a separate lr around 0.02.)

Every other parameter - the groups with ``muon=False`` (embedding, head and vectors, set by
``harness.optim.build_optimizer``) and any parameter with fewer than 2 dimensions - takes an
AdamW step with ``betas`` and ``eps``.

Newton-Schulz runs in ``ns_dtype`` (bfloat16 by default, as in the reference implementation),
batched over matrices of the same shape.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

from harness.optim.adam import adam_update, check_adam_args
from harness.optim.base import (
    ForeachOptimizer,
    Group,
    State,
    check_range,
    decay_weights,
    state_tensors,
)

#: Keller Jordan's quintic Newton-Schulz coefficients (a, b, c).
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
#: Added to the Frobenius norm before normalising (reference implementation).
NS_EPS = 1e-7
#: Update RMS Muon matches to AdamW's (Moonshot's 0.2).
RMS_MATCH = 0.2


def newton_schulz(G: Tensor, steps: int = 5, dtype: torch.dtype = torch.bfloat16) -> Tensor:
    """Approximately orthogonalise a batch of matrices: ``G = U S V^T -> U S' V^T``, S' ~ 1.

    Args:
        G: ``(..., A, B)`` matrices.
        steps: Quintic iterations.
        dtype: Compute dtype.

    Returns:
        ``(..., A, B)`` in ``dtype``.
    """
    a, b, c = NS_COEFFICIENTS
    X: Tensor = G.to(dtype)
    wide = G.size(-2) > G.size(-1)
    if wide:
        X = X.mT  # iterate on the (min, max) orientation: Gram matrix is min x min
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + NS_EPS)  # spectral norm <= 1
    for _ in range(steps):
        gram = X @ X.mT  # (..., m, m)
        poly = b * gram + c * (gram @ gram)
        X = a * X + poly @ X
    return X.mT if wide else X


def orthogonalize(updates: list[Tensor], steps: int, dtype: torch.dtype) -> list[Tensor]:
    """Newton-Schulz of each ``(shape[0], -1)`` matrix, batched by shape, in the input dtype."""
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for i, u in enumerate(updates):
        by_shape.setdefault(tuple(u.shape), []).append(i)
    out: list[Tensor] = [updates[0]] * len(updates)
    for shape, idx in by_shape.items():
        batch = torch.stack([updates[i].reshape(shape[0], -1) for i in idx])  # (k, A, B)
        orth = newton_schulz(batch, steps, dtype)
        for j, i in enumerate(idx):
            out[i] = orth[j].reshape(shape).to(updates[i].dtype)
    return out


def muon_update(
    state: State,
    params: list[Tensor],
    grads: list[Tensor],
    *,
    lr: float,
    momentum: float,
    nesterov: bool,
    weight_decay: float,
    ns_steps: int,
    ns_dtype: torch.dtype,
) -> None:
    """One Muon step over matrices (see the module docstring)."""
    bufs = state_tensors(state, params, "momentum_buffer")
    torch._foreach_lerp_(bufs, grads, 1 - momentum)
    updates = torch._foreach_lerp(grads, bufs, momentum) if nesterov else bufs
    orth = orthogonalize(updates, ns_steps, ns_dtype)  # type: ignore[arg-type]  # torch._foreach_* return lists; the stub says tuple
    decay_weights(params, lr, weight_decay)
    scales = [-lr * RMS_MATCH * math.sqrt(max(p.shape[0], p.numel() // p.shape[0])) for p in params]
    torch._foreach_mul_(orth, scales)
    torch._foreach_add_(params, orth)


class Muon(ForeachOptimizer):
    """Muon for hidden matrices with AdamW for everything else (see the module docstring).

    Args:
        params: Parameters or param groups; a group's ``muon`` key (default True) says whether its
            >= 2-D parameters are Muon matrices; its other parameters always use AdamW.
        lr: Learning rate, shared by Muon (RMS-matched) and AdamW parameters.
        momentum: Muon momentum (EMA coefficient of the momentum buffer).
        nesterov: Nesterov-style Muon momentum.
        betas: AdamW's ``(beta1, beta2)`` for the non-Muon parameters.
        eps: AdamW's epsilon.
        weight_decay: Decoupled weight decay for both parts.
        ns_steps: Newton-Schulz iterations.
        ns_dtype: Newton-Schulz compute dtype name (``bfloat16``, ``float32``, ``float64``).
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0.95,
        nesterov: bool = True,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        ns_steps: int = 5,
        ns_dtype: str = "bfloat16",
    ) -> None:
        check_range("momentum", momentum, 0.0, 1.0)
        check_adam_args(betas, eps)
        if not isinstance(getattr(torch, ns_dtype, None), torch.dtype):
            raise ValueError(f"invalid ns_dtype {ns_dtype!r}: a torch dtype name, e.g. bfloat16")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "nesterov": bool(nesterov),
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "ns_steps": ns_steps,
            "ns_dtype": ns_dtype,
            "muon": True,
        }
        super().__init__(params, defaults)

    def _update_group(self, group: Group, params: list[Tensor], grads: list[Tensor]) -> None:
        is_matrix = [group["muon"] and p.ndim >= 2 for p in params]
        mats = [p for p, m in zip(params, is_matrix, strict=True) if m]
        if mats:
            muon_update(
                self.state,
                mats,
                [g for g, m in zip(grads, is_matrix, strict=True) if m],
                lr=group["lr"],
                momentum=group["momentum"],
                nesterov=group["nesterov"],
                weight_decay=group["weight_decay"],
                ns_steps=group["ns_steps"],
                ns_dtype=getattr(torch, group["ns_dtype"]),
            )
        rest = [p for p, m in zip(params, is_matrix, strict=True) if not m]
        if rest:
            adam_update(
                self.state,
                rest,
                [g for g, m in zip(grads, is_matrix, strict=True) if not m],
                lr=group["lr"],
                betas=group["betas"],
                eps=group["eps"],
                weight_decay=group["weight_decay"],
            )


__all__ = ["NS_COEFFICIENTS", "Muon", "muon_update", "newton_schulz", "orthogonalize"]
