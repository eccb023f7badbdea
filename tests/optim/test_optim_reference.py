"""Every optimizer of the zoo against a plain float64 reference written from its formula.

Several steps, several shapes (vectors, matrices, a 3-D weight), two param groups (one with
weight decay 0, one with 0 or 0.1), a learning rate that changes every step (as the trainer
sets it), random gradients. Ours runs in float64 too, so agreement is to rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import Tensor, nn

from harness.optim.registry import OPTIMIZERS

SHAPES = [(5, 3), (7,), (4, 3, 2), (1,), (6, 4)]
STEPS = 5
NS = (3.4445, -4.7750, 2.0315)


def _lr(step: int) -> float:
    return 0.01 * (1 + step) / 3


def _grads(seed: int = 1) -> list[list[Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    return [
        [torch.randn(s, generator=gen, dtype=torch.float64) for s in SHAPES] for _ in range(STEPS)
    ]


def _initial(seed: int = 0) -> list[Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=gen, dtype=torch.float64) for s in SHAPES]


def run_ours(
    name: str, hp: dict[str, Any], wd: float, group_extra: dict | None = None
) -> list[Tensor]:
    """Params after STEPS steps of ``OPTIMIZERS[name]``; group 0 has weight decay ``wd``."""
    params = [nn.Parameter(w.clone()) for w in _initial()]
    groups = [
        {"params": params[:3], "weight_decay": wd, **(group_extra or {})},
        {"params": params[3:], "weight_decay": 0.0},
    ]
    opt = OPTIMIZERS[name].load()(groups, lr=1.0, **hp)
    for step, gs in enumerate(_grads()):
        for g in opt.param_groups:
            g["lr"] = _lr(step)
        for p, grad in zip(params, gs, strict=True):
            p.grad = grad.clone()
        opt.step()
    return [p.detach() for p in params]


def run_reference(update: Callable, wd: float, n_first: int = 3) -> list[Tensor]:
    """Params after STEPS steps of ``update(w, g, state, lr, wd, index) -> w``, per tensor."""
    ws = _initial()
    states: list[dict] = [{} for _ in ws]
    for step, gs in enumerate(_grads()):
        for i, g in enumerate(gs):
            decay = wd if i < n_first else 0.0
            ws[i] = update(ws[i], g, states[i], _lr(step), decay, i)
    return ws


# --- references, written from the formulas (one tensor, float64) ----------------------------


def adam_ref(b1: float, b2: float, eps: float, l2: bool = False, coupled: Callable | None = None):
    def update(w, g, s, lr, wd, i):
        s["t"] = t = s.get("t", 0) + 1
        if l2:
            g = g + wd * w
        else:
            w = w - lr * wd * w
        s["m"] = m = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = v = b2 * s.get("v", 0.0) + (1 - b2) * g * g
        m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
        if coupled is not None and coupled(i):
            v_hat = coupled(i) * v_hat.mean(dim=0, keepdim=True).expand_as(v_hat)
        return w - lr * m_hat / (v_hat.sqrt() + eps)

    return update


def sgd_ref(momentum: float, nesterov: bool, clip: float | None = None):
    def update(w, g, s, lr, wd, i):
        w = w - lr * wd * w
        d = g
        if momentum:
            s["b"] = b = g if "b" not in s else momentum * s["b"] + g
            d = g + momentum * b if nesterov else b
        if clip is not None:
            d = d.clamp(-clip, clip)
        return w - lr * d

    return update


def signum_ref(beta: float | None):
    def update(w, g, s, lr, wd, i):
        d = g
        if beta is not None:
            s["m"] = d = beta * s.get("m", 0.0) + (1 - beta) * g
        return w - lr * wd * w - lr * torch.sign(d)

    return update


def lion_ref(b1: float, b2: float):
    def update(w, g, s, lr, wd, i):
        m = s.get("m", torch.zeros_like(w))
        c = b1 * m + (1 - b1) * g
        s["m"] = b2 * m + (1 - b2) * g
        return w - lr * wd * w - lr * torch.sign(c)

    return update


def newton_schulz_ref(u: Tensor, steps: int = 5) -> Tensor:
    a, b, c = NS
    X = u.reshape(u.shape[0], -1)
    tall = X.shape[0] > X.shape[1]
    if tall:
        X = X.T
    X = X / (torch.linalg.matrix_norm(X) + 1e-7)
    for _ in range(steps):
        A = X @ X.T
        X = a * X + (b * A + c * A @ A) @ X
    return (X.T if tall else X).reshape(u.shape)


def muon_ref(mom: float, nesterov: bool, betas: tuple[float, float], eps: float):
    adam = adam_ref(*betas, eps)

    def update(w, g, s, lr, wd, i):
        if w.ndim < 2:
            return adam(w, g, s, lr, wd, i)
        s["b"] = b = mom * s.get("b", 0.0) + (1 - mom) * g
        u = (1 - mom) * g + mom * b if nesterov else b
        rows, cols = w.shape[0], w.numel() // w.shape[0]
        return w - lr * wd * w - lr * 0.2 * math.sqrt(max(rows, cols)) * newton_schulz_ref(u)

    return update


CASES: dict[str, tuple[dict[str, Any], Callable, dict[str, Any]]] = {
    "adamw": ({"betas": (0.9, 0.95), "eps": 1e-8}, adam_ref(0.9, 0.95, 1e-8), {}),
    "adam": ({"betas": (0.8, 0.99), "eps": 1e-6}, adam_ref(0.8, 0.99, 1e-6, l2=True), {}),
    "rmsprop": ({"beta2": 0.95, "eps": 1e-8}, adam_ref(0.0, 0.95, 1e-8), {}),
    "sgd": ({"momentum": 0.9}, sgd_ref(0.9, False), {}),
    "sgd-nesterov": ({"momentum": 0.8, "nesterov": True}, sgd_ref(0.8, True), {}),
    "sgd-plain": ({"momentum": 0.0}, sgd_ref(0.0, False), {}),
    "sgd_cclip": ({"momentum": 0.9, "clip_value": 0.7}, sgd_ref(0.9, False, 0.7), {}),
    "signsgd": ({}, signum_ref(None), {}),
    "signum": ({"beta": 0.9}, signum_ref(0.9), {}),
    "lion": ({"betas": (0.9, 0.99)}, lion_ref(0.9, 0.99), {}),
    "coupled_adam": (
        {"betas": (0.9, 0.95), "eps": 1e-8, "coupled_scale_exp": 0.0},
        adam_ref(0.9, 0.95, 1e-8, coupled=lambda i: 1.0 if i < 3 else None),
        {"coupled": True},
    ),
    "coupled_adam-scaled": (
        {"betas": (0.9, 0.95), "eps": 1e-8, "coupled_scale_exp": 3.0},
        adam_ref(0.9, 0.95, 1e-8, coupled=lambda i: 2.0**-3 if i < 3 else None),
        {"coupled": True},
    ),
    "muon": (
        {"momentum": 0.95, "betas": (0.9, 0.95), "eps": 1e-8, "ns_dtype": "float64"},
        muon_ref(0.95, True, (0.9, 0.95), 1e-8),
        {},
    ),
    "muon-heavy-ball": (
        {"momentum": 0.9, "nesterov": False, "betas": (0.9, 0.95), "ns_dtype": "float64"},
        muon_ref(0.9, False, (0.9, 0.95), 1e-8),
        {},
    ),
}


@pytest.mark.parametrize("wd", [0.0, 0.1])
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_float64_reference(case: str, wd: float) -> None:
    hp, reference, group_extra = CASES[case]
    ours = run_ours(case.split("-")[0], hp, wd, group_extra)
    expected = run_reference(reference, wd)
    initial = _initial()
    for w, e, w0 in zip(ours, expected, initial, strict=True):
        assert not torch.equal(w, w0), "the parameter did not move"
        torch.testing.assert_close(w, e, rtol=1e-10, atol=1e-12)


def test_every_registered_optimizer_has_a_reference_case() -> None:
    assert {c.split("-")[0] for c in CASES} == set(OPTIMIZERS)


def test_coupled_moves_rows_by_the_same_effective_lr() -> None:
    """One coupled step: rows with gradients of very different size get the same denominator."""
    w = nn.Parameter(torch.zeros(4, 3, dtype=torch.float64))
    w.grad = torch.tensor([[1.0, 2, 3], [10, 20, 30], [-1, -2, -3], [-10, -20, -30]]).double()
    opt = OPTIMIZERS["coupled_adam"].load()(
        [{"params": [w], "coupled": True}], lr=0.1, betas=(0.9, 0.99)
    )
    opt.step()
    # step 1: m_hat = g, v_hat = g^2, mean over rows of g^2 per column = 50.5 * (1, 4, 9)
    col_v = 50.5 * torch.tensor([1.0, 4, 9], dtype=torch.float64)
    expected = -0.1 * w.grad / (col_v.sqrt() + 1e-8)
    torch.testing.assert_close(w.detach(), expected, rtol=1e-12, atol=0)
    assert w.detach().mean(dim=0).abs().max() < 1e-15  # rows' gradients sum to zero: mean fixed
