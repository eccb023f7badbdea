"""The Adam family: AdamW, Adam (L2), RMSprop (AdamW with beta1 = 0) and Coupled Adam.

All share :func:`adam_update`, which performs exactly the operations of
``torch.optim.AdamW(foreach=True)`` (same order, same rounding), so ``AdamW`` here is bitwise
equal to torch's. Update of a parameter w with gradient g at step t (1-based)::

    w <- w - lr * wd * w                      (decoupled weight decay; Adam: g <- g + wd * w)
    m <- beta1 * m + (1 - beta1) * g          (exp_avg)
    v <- beta2 * v + (1 - beta2) * g^2        (exp_avg_sq)
    w <- w - lr / (1 - beta1^t) * m / (sqrt(v / (1 - beta2^t)) + eps)

On CUDA, Adam and AdamW (and the uncoupled groups of Coupled Adam) take torch's fused kernels
(``torch._fused_adamw_`` / ``torch._fused_adam_``, what ``torch.optim.AdamW(fused=True)`` runs):
the same update in one kernel launch per tensor list, equal to the multi-tensor path to float32
rounding (``tests/optim/test_adam_kernel.py``, ``tests/train/test_gpu.py``). On the CPU the
multi-tensor path stays, bitwise equal to torch's foreach AdamW. :data:`Kernel` names the choice.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import torch
from torch import Tensor

from harness.optim.base import (
    ForeachOptimizer,
    Group,
    State,
    advance_steps,
    check_range,
    decay_weights,
    state_tensors,
)

Kernel = Literal["auto", "fused", "foreach"]
"""Which implementation of the Adam update runs: ``auto`` is ``fused`` where every parameter is
on a CUDA device in a float dtype, else ``foreach``; ``fused`` on the CPU runs torch's CPU fused
kernel (tests)."""
FUSED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
"""Parameter dtypes torch's fused Adam kernels take."""


def fused_applies(params: list[Tensor], kernel: Kernel) -> bool:
    """Whether ``kernel`` means torch's fused kernel for ``params``."""
    if kernel == "auto":
        return all(p.is_cuda and p.dtype in FUSED_DTYPES for p in params)
    return kernel == "fused"


def step_tensors(params: list[Tensor], steps: list[int]) -> list[Tensor]:
    """Each parameter's step count as the float32 scalar on its device that torch's fused kernels
    read; one fill kernel when all are equal (the usual case), none copied from the host."""
    if len(set(steps)) == 1 and len({p.device for p in params}) == 1:
        shared = torch.full(
            (len(params),), float(steps[0]), dtype=torch.float32, device=params[0].device
        )
        return list(shared.unbind())  # (n,) -> n scalar views
    return [
        torch.full((), float(t), dtype=torch.float32, device=p.device)
        for p, t in zip(params, steps, strict=True)
    ]


def fused_adam_update(
    state: State,
    params: list[Tensor],
    grads: list[Tensor],
    steps: list[int],
    *,
    lr: float,
    betas: tuple[float, float],
    eps: float,
    weight_decay: float,
    l2: bool,
) -> None:
    """Adam(W) through torch's fused kernel, per (device, dtype) of the parameters; ``steps`` are
    the already advanced step counts (:func:`advance_steps`)."""
    exp_avgs = state_tensors(state, params, "exp_avg")
    exp_avg_sqs = state_tensors(state, params, "exp_avg_sq")
    kernel = torch._fused_adam_ if l2 else torch._fused_adamw_
    groups: dict[tuple[torch.device, torch.dtype], list[int]] = {}
    for i, p in enumerate(params):
        groups.setdefault((p.device, p.dtype), []).append(i)
    for idx in groups.values():

        def pick(ts: list[Tensor], idx: list[int] = idx) -> list[Tensor]:
            return [ts[i] for i in idx]

        kernel(
            pick(params),
            pick(grads),
            pick(exp_avgs),
            pick(exp_avg_sqs),
            [],  # max_exp_avg_sqs: no amsgrad
            step_tensors(pick(params), [steps[i] for i in idx]),
            lr=lr,
            beta1=betas[0],
            beta2=betas[1],
            weight_decay=weight_decay,
            eps=eps,
            amsgrad=False,
            maximize=False,
        )


def adam_update(
    state: State,
    params: list[Tensor],
    grads: list[Tensor],
    *,
    lr: float,
    betas: tuple[float, float],
    eps: float,
    weight_decay: float,
    l2: bool = False,
    coupled_scale: float | None = None,
    kernel: Kernel = "auto",
) -> None:
    """One Adam(W) step over a list of parameters (multi-tensor ops, or torch's fused kernel).

    Args:
        state: The optimizer's per-parameter state (``exp_avg``, ``exp_avg_sq``, ``step``).
        params: Parameters to update in place.
        grads: Their gradients (never modified).
        lr: Learning rate of this step.
        betas: ``(beta1, beta2)``.
        eps: Added to the bias-corrected root second moment.
        weight_decay: Decoupled (``l2=False``) or L2 (``l2=True``) coefficient.
        l2: Add ``weight_decay * w`` to the gradient before the moments (Adam) instead of
            decaying the weights (AdamW).
        coupled_scale: None for Adam; otherwise Coupled Adam: the bias-corrected second moment
            used in the update is ``coupled_scale`` times its mean over dim 0 (the vocabulary rows).
        kernel: The implementation (:data:`Kernel`); Coupled Adam's update is never fused.
    """
    beta1, beta2 = betas
    steps = advance_steps(state, params)
    if coupled_scale is None and fused_applies(params, kernel):
        fused_adam_update(
            state,
            params,
            grads,
            steps,
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            l2=l2,
        )
        return
    if weight_decay != 0 and l2:
        grads = torch._foreach_add(grads, params, alpha=weight_decay)  # type: ignore[assignment]  # torch._foreach_* return lists; the stub says tuple
    elif weight_decay != 0:
        decay_weights(params, lr, weight_decay)
    exp_avgs = state_tensors(state, params, "exp_avg")
    exp_avg_sqs = state_tensors(state, params, "exp_avg_sq")
    torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
    torch._foreach_mul_(exp_avg_sqs, beta2)
    torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
    del grads  # frees Adam's g + wd * w before the next allocation (as torch does): on CPU
    # the allocator then reuses that memory instead of page-faulting fresh pages in.
    step_size = [(lr / (1 - beta1**t)) * -1 for t in steps]
    bc2_sqrt = [(1 - beta2**t) ** 0.5 for t in steps]
    denom: list[Tensor] | tuple[Tensor, ...]
    if coupled_scale is None:
        denom = torch._foreach_sqrt(exp_avg_sqs)
    else:
        # (1, H) per tensor: every vocabulary row shares one second moment (paper Eq. 24, 29).
        denom = [v.mean(dim=0, keepdim=True).mul_(coupled_scale).sqrt_() for v in exp_avg_sqs]
    torch._foreach_div_(denom, bc2_sqrt)
    torch._foreach_add_(denom, eps)
    if coupled_scale is None:
        torch._foreach_addcdiv_(params, exp_avgs, denom, step_size)
    else:  # broadcasting (1, H) denominators: one in-place op per (few) coupled tensors
        for p, m, d, s in zip(params, exp_avgs, denom, step_size, strict=True):
            p.addcdiv_(m, d, value=s)


def check_adam_args(betas: tuple[float, float], eps: float) -> None:
    """Raise ValueError unless 0 <= beta1, beta2 < 1 and eps >= 0."""
    check_range("beta1", betas[0], 0.0, 1.0)
    check_range("beta2", betas[1], 0.0, 1.0)
    check_range("eps", eps, 0.0)


class AdamW(ForeachOptimizer):
    """AdamW (Loshchilov & Hutter), identical to ``torch.optim.AdamW(foreach=True)``.

    Args:
        params: Parameters or param groups.
        lr: Learning rate.
        betas: ``(beta1, beta2)``, decay rates of the first and second moments.
        eps: Added to ``sqrt(v_hat)`` in the denominator.
        weight_decay: Decoupled weight decay, ``w <- w - lr * weight_decay * w``.
    """

    _l2 = False
    kernel: Kernel = "auto"
    """The update's implementation (:data:`Kernel`); an instance may set its own (tests)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        check_adam_args(betas, eps)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def _update_group(self, group: Group, params: list[Tensor], grads: list[Tensor]) -> None:
        adam_update(
            self.state,
            params,
            grads,
            lr=group["lr"],
            betas=group["betas"],
            eps=group["eps"],
            weight_decay=group["weight_decay"],
            l2=self._l2,
            kernel=self.kernel,
        )


class Adam(AdamW):
    """Adam with L2 regularisation: ``g <- g + weight_decay * w`` before the moments.

    Identical to ``torch.optim.Adam(foreach=True)``; same arguments as :class:`AdamW`.
    """

    _l2 = True


class CoupledAdam(AdamW):
    """Coupled Adam (Stollenwerk & Stollenwerk 2025, Algorithm 1 and Eq. 29).

    AdamW for every group, except groups with ``coupled=True``: there the bias-corrected second
    moment used in the update is the mean over dim 0 (the vocabulary rows, for an ``(V, H)``
    embedding or head weight), ``v_hat <- 2^-n * (1/V) sum_i v_hat_i``, a vector of size H shared
    by all rows, so every token gets the same effective learning rate and, with only the
    LM-head gradient (whose rows sum to zero), the mean row does not move. ``m`` and ``v`` are
    still stored per element; only the update uses the mean. As in torch's AdamW and the paper's
    code, ``eps`` is added outside the square root: ``m_hat / (sqrt(v_hat) + eps)``.

    Which groups are coupled is the caller's choice; ``harness.optim.build_optimizer`` couples the
    embedding group (which holds the head when tied) and the untied head (see the registry).
    Weight decay of a coupled group is applied as given (routing gives embeddings none).

    Args:
        params: Parameters or param groups; a group's ``coupled`` key defaults to False.
        lr: Learning rate.
        betas: ``(beta1, beta2)``.
        eps: Added to ``sqrt(v_hat)``.
        weight_decay: Decoupled weight decay.
        coupled_scale_exp: ``n`` of Eq. 29: the coupled second moment is multiplied by 2^-n
            (0: the paper's canonical Coupled Adam).
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        coupled_scale_exp: float = 0.0,
    ) -> None:
        check_adam_args(betas, eps)
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "coupled": False,
            "coupled_scale_exp": float(coupled_scale_exp),
        }
        ForeachOptimizer.__init__(self, params, defaults)

    def _update_group(self, group: Group, params: list[Tensor], grads: list[Tensor]) -> None:
        coupled = group["coupled"]
        adam_update(
            self.state,
            params,
            grads,
            lr=group["lr"],
            betas=group["betas"],
            eps=group["eps"],
            weight_decay=group["weight_decay"],
            coupled_scale=2.0 ** -group["coupled_scale_exp"] if coupled else None,
            kernel=self.kernel,
        )


class RMSprop(ForeachOptimizer):
    """RMSprop as the talk defines it: AdamW with beta1 = 0 (``torch.optim.AdamW(betas=(0, b2))``).

    ``w <- w - lr * g / (sqrt(v / (1 - beta2^t)) + eps)`` with ``v`` as in Adam and decoupled
    weight decay. Bitwise equal to torch's AdamW with ``beta1 = 0`` but stores no first moment.
    Not ``torch.optim.RMSprop``, which has no bias correction and names the decay ``alpha``.

    Args:
        params: Parameters or param groups.
        lr: Learning rate.
        beta2: Decay rate of the second moment (AdamW's beta2).
        eps: Added to ``sqrt(v_hat)``.
        weight_decay: Decoupled weight decay.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        beta2: float = 0.999,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        check_adam_args((0.0, beta2), eps)
        defaults = {"lr": lr, "beta2": beta2, "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def _update_group(self, group: Group, params: list[Tensor], grads: list[Tensor]) -> None:
        lr, beta2 = group["lr"], group["beta2"]
        steps = advance_steps(self.state, params)
        decay_weights(params, lr, group["weight_decay"])
        exp_avg_sqs = state_tensors(self.state, params, "exp_avg_sq")
        torch._foreach_mul_(exp_avg_sqs, beta2)
        torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
        denom = torch._foreach_sqrt(exp_avg_sqs)
        torch._foreach_div_(denom, [(1 - beta2**t) ** 0.5 for t in steps])
        torch._foreach_add_(denom, group["eps"])
        # (lr / (1 - 0^t)) * -1 == -lr: the step size torch's AdamW computes for beta1 = 0.
        torch._foreach_addcdiv_(params, grads, denom, -lr)
