"""Torch's fused Adam kernels in the harness's Adam family (issue 43): on CUDA the harness's
AdamW/Adam take ``torch._fused_adamw_`` / ``torch._fused_adam_``, the kernel of the bare loop's
``torch.optim.AdamW(fused=True)``. On the CPU (where torch has the fused kernel too) the fused path
is forced, so it is checked here against torch's own fused optimizer (the same kernel: bitwise)
and against the harness's multi-tensor path (the reference math: float32 rounding).
``tests/train/test_gpu.py`` checks the same on CUDA."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
from torch import Tensor, nn

from harness.optim.adam import fused_applies, step_tensors
from harness.optim.registry import OPTIMIZERS

SHAPES = [(64, 32), (33,), (8, 4, 3), (1,)]
STEPS = 6
TORCH = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam}


def trajectory(make: Callable[[list[dict]], torch.optim.Optimizer], wd: float) -> list[Tensor]:
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


def ours(name: str, kernel: str, **kw: object) -> Callable[[list[dict]], torch.optim.Optimizer]:
    def make(groups: list[dict]) -> torch.optim.Optimizer:
        opt = OPTIMIZERS[name].load()(groups, lr=1.0, betas=(0.9, 0.95), **kw)
        opt.kernel = kernel
        return opt

    return make


@pytest.mark.parametrize("wd", [0.0, 0.1])
@pytest.mark.parametrize("name", ["adamw", "adam"])
def test_the_fused_path_is_torchs_fused_optimizer(name: str, wd: float) -> None:
    mine = trajectory(ours(name, "fused"), wd)
    ref = trajectory(
        lambda g: TORCH[name](g, lr=1.0, betas=(0.9, 0.95), weight_decay=0.0, fused=True), wd
    )
    for a, b in zip(mine, ref, strict=True):
        assert torch.equal(a, b), (a - b).abs().max()


@pytest.mark.parametrize("wd", [0.0, 0.1])
@pytest.mark.parametrize("name", ["adamw", "adam", "coupled_adam"])
def test_the_fused_path_equals_the_multi_tensor_math(name: str, wd: float) -> None:
    """Fused vs foreach over several steps: the same update to float32 rounding (the fused kernel
    computes the bias corrections in float32, the multi-tensor path in double on the host)."""
    fused, foreach = (trajectory(ours(name, k), wd) for k in ("fused", "foreach"))
    start = trajectory(lambda g: torch.optim.SGD(g, lr=0.0), 0.0)
    for a, b, w0 in zip(fused, foreach, start, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
        assert not torch.equal(a, w0)  # they moved


def test_the_cpu_keeps_the_multi_tensor_path_bitwise_equal_to_torch_foreach() -> None:
    mine = trajectory(ours("adamw", "auto"), 0.1)
    ref = trajectory(
        lambda g: torch.optim.AdamW(g, lr=1.0, betas=(0.9, 0.95), weight_decay=0.0, foreach=True),
        0.1,
    )
    for a, b in zip(mine, ref, strict=True):
        assert torch.equal(a, b), (a - b).abs().max()


def test_auto_means_fused_only_on_cuda() -> None:
    cpu = [torch.zeros(2)]
    assert not fused_applies(cpu, "auto")
    assert fused_applies(cpu, "fused") and not fused_applies(cpu, "foreach")
    assert OPTIMIZERS["adamw"].load().kernel == "auto"


def test_a_fused_run_resumes_from_a_multi_tensor_state_dict() -> None:
    """The state is the same (``step`` an int, two moment tensors), so a checkpoint written on the
    CPU resumes under the fused kernel and vice versa."""
    gen = torch.Generator().manual_seed(1)
    w = nn.Parameter(torch.randn(5, 3, generator=gen))
    a = ours("adamw", "foreach")([{"params": [w], "weight_decay": 0.1}])
    for _ in range(3):
        w.grad = torch.randn(5, 3, generator=gen)
        a.step()
    w2 = nn.Parameter(w.detach().clone())
    b = ours("adamw", "fused")([{"params": [w2], "weight_decay": 0.1}])
    b.load_state_dict(copy.deepcopy(a.state_dict()))  # not a's tensors themselves
    w.grad = w2.grad = torch.randn(5, 3, generator=gen)
    a.step()
    b.step()
    assert b.state[w2]["step"] == 4
    torch.testing.assert_close(w2, w, rtol=1e-6, atol=1e-7)


def test_step_tensors_are_float32_scalars_per_parameter() -> None:
    ps = [torch.zeros(3), torch.zeros(2, 2)]
    same = step_tensors(ps, [7, 7])
    assert [t.shape for t in same] == [torch.Size([]), torch.Size([])]
    assert [t.item() for t in same] == [7.0, 7.0] and same[0].dtype == torch.float32
    assert [t.item() for t in step_tensors(ps, [2, 5])] == [2.0, 5.0]
