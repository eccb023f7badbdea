"""Exact equalities the zoo promises: against torch's optimizers and between its own members.

float32 parameters, as in training; "equal" means bitwise (``torch.equal``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import Tensor, nn

from harness.optim.registry import OPTIMIZERS

SHAPES = [(64, 32), (33,), (8, 4, 3), (1,)]
STEPS = 6


def trajectory(
    make: Callable[[list[dict]], torch.optim.Optimizer], wd: float = 0.0
) -> list[Tensor]:
    """Params after STEPS steps with fixed random gradients and a per-step lr schedule."""
    gen = torch.Generator().manual_seed(0)
    params = [nn.Parameter(torch.randn(s, generator=gen)) for s in SHAPES]
    opt = make([{"params": params[:2], "weight_decay": wd}, {"params": params[2:]}])
    for step in range(STEPS):
        for g in opt.param_groups:
            g["lr"] = 1e-2 * (step + 1) / STEPS
        for p in params:
            p.grad = torch.randn(p.shape, generator=gen)
        opt.step()
    return [p.detach().clone() for p in params]


def assert_equal(a: list[Tensor], b: list[Tensor]) -> None:
    for x, y in zip(a, b, strict=True):
        assert torch.equal(x, y), (x - y).abs().max()


@pytest.mark.parametrize("foreach", [True, None])
@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_adamw_equals_torch_adamw(wd: float, foreach: bool | None) -> None:
    betas = (0.9, 0.95)
    ours = trajectory(lambda g: OPTIMIZERS["adamw"].load()(g, lr=1.0, betas=betas), wd)
    ref = trajectory(
        lambda g: torch.optim.AdamW(g, lr=1.0, betas=betas, weight_decay=0.0, foreach=foreach), wd
    )
    assert_equal(ours, ref)


@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_adam_equals_torch_adam_with_l2(wd: float) -> None:
    ours = trajectory(lambda g: OPTIMIZERS["adam"].load()(g, lr=1.0), wd)
    ref = trajectory(lambda g: torch.optim.Adam(g, lr=1.0, foreach=True), wd)
    assert_equal(ours, ref)
    if wd:  # L2 and decoupled decay differ
        adamw = trajectory(lambda g: OPTIMIZERS["adamw"].load()(g, lr=1.0), wd)
        assert not torch.equal(ours[0], adamw[0])


@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_rmsprop_equals_torch_adamw_with_beta1_zero(wd: float) -> None:
    ours = trajectory(lambda g: OPTIMIZERS["rmsprop"].load()(g, lr=1.0, beta2=0.95), wd)
    ref = trajectory(
        lambda g: torch.optim.AdamW(g, lr=1.0, betas=(0.0, 0.95), weight_decay=0.0, foreach=True),
        wd,
    )
    assert_equal(ours, ref)


@pytest.mark.parametrize(("momentum", "nesterov"), [(0.0, False), (0.9, False), (0.9, True)])
def test_sgd_without_weight_decay_equals_torch_sgd(momentum: float, nesterov: bool) -> None:
    kw = {"momentum": momentum, "nesterov": nesterov}
    ours = trajectory(lambda g: OPTIMIZERS["sgd"].load()(g, lr=1.0, **kw))
    ref = trajectory(lambda g: torch.optim.SGD(g, lr=1.0, foreach=True, **kw))
    assert_equal(ours, ref)


def test_sgd_weight_decay_is_decoupled() -> None:
    """First step: w1 = (1 - lr wd) w0 - lr g (torch's L2 would give w0 - lr (g + wd w0))."""
    w = nn.Parameter(torch.tensor([2.0, -4.0]))
    w.grad = torch.tensor([1.0, 1.0])
    opt = OPTIMIZERS["sgd"].load()([w], lr=0.5, momentum=0.9, weight_decay=0.1)
    opt.step()
    assert torch.equal(w.detach(), torch.tensor([0.95 * 2 - 0.5, 0.95 * -4 - 0.5]))


@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_signum_with_beta_zero_equals_signsgd(wd: float) -> None:
    signum = trajectory(lambda g: OPTIMIZERS["signum"].load()(g, lr=1.0, beta=0.0), wd)
    signsgd = trajectory(lambda g: OPTIMIZERS["signsgd"].load()(g, lr=1.0), wd)
    assert_equal(signum, signsgd)
    momentum = trajectory(lambda g: OPTIMIZERS["signum"].load()(g, lr=1.0, beta=0.9), wd)
    assert not torch.equal(momentum[0], signsgd[0])


def test_sgd_cclip_with_a_huge_threshold_equals_sgd() -> None:
    clip = trajectory(
        lambda g: OPTIMIZERS["sgd_cclip"].load()(g, lr=1.0, momentum=0.9, clip_value=1e30)
    )
    sgd = trajectory(lambda g: OPTIMIZERS["sgd"].load()(g, lr=1.0, momentum=0.9))
    assert_equal(clip, sgd)


def test_coupled_adam_without_coupled_groups_equals_adamw() -> None:
    coupled = trajectory(
        lambda g: OPTIMIZERS["coupled_adam"].load()(g, lr=1.0, coupled_scale_exp=2), 0.1
    )
    adamw = trajectory(lambda g: OPTIMIZERS["adamw"].load()(g, lr=1.0), 0.1)
    assert_equal(coupled, adamw)


def test_muon_non_matrix_groups_equal_adamw() -> None:
    muon = trajectory(
        lambda g: OPTIMIZERS["muon"].load()([{**x, "muon": False} for x in g], lr=1.0), 0.1
    )
    adamw = trajectory(lambda g: OPTIMIZERS["adamw"].load()(g, lr=1.0), 0.1)
    assert_equal(muon, adamw)


def test_muon_matrices_match_torch_muon_rms_matched() -> None:
    """2-D weights: torch.optim.Muon with Moonshot's lr adjustment (both Newton-Schulz in bf16)."""
    gen = torch.Generator().manual_seed(0)
    init = [torch.randn(s, generator=gen) for s in [(64, 32), (32, 96), (48, 48)]]
    grads = [[torch.randn(w.shape, generator=gen) for w in init] for _ in range(STEPS)]
    finals = []
    for make in (
        lambda ps: OPTIMIZERS["muon"].load()(ps, lr=0.02, momentum=0.95, weight_decay=0.1),
        lambda ps: torch.optim.Muon(
            ps, lr=0.02, momentum=0.95, weight_decay=0.1, adjust_lr_fn="match_rms_adamw"
        ),
    ):
        params = [nn.Parameter(w.clone()) for w in init]
        opt = make(params)
        for gs in grads:
            for p, g in zip(params, gs, strict=True):
                p.grad = g.clone()
            opt.step()
        finals.append([p.detach() - w for p, w in zip(params, init, strict=True)])
    for ours, ref in zip(*finals, strict=True):
        # bf16 Newton-Schulz: agreement to bf16 precision of the (RMS ~ 0.2 lr) update
        assert (ours - ref).abs().max() < 0.03 * ref.abs().max()
        assert ref.abs().max() > 1e-3
