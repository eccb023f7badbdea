"""The GPU path (issue 32): bf16 autocast, torch.compile, fused optimizers and checkpoints on CUDA.

Every test here is marked ``gpu`` (``pytest -m gpu`` runs them; ``scripts/gpu_check.sh`` does on
a GPU machine). Those that need CUDA skip without it; the optimizer comparison also runs on the
CPU, where torch has a fused AdamW too.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from harness.model.gpt import GPT
from harness.optim.registry import OPTIMIZERS
from harness.optim.routing import param_groups
from harness.train.checkpoint import Checkpointing
from harness.train.device import place
from harness.train.loop import train
from tests.runs import interrupt_then_resume, tiny_run

pytestmark = pytest.mark.gpu

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]

OPTIMIZER_LRS = {"sgd": 0.3, "sgd_cclip": 0.3, "signsgd": 1e-3, "signum": 1e-3, "lion": 3e-4}
EXTRA = {"sgd_cclip": {"clip_value": 0.01}}
BF16_REL = 2e-2
"""Relative tolerance between two bf16 computations of one loss (bf16 keeps 8 bits of mantissa:
a relative rounding of 2^-8 per operation, and a loss sums many)."""


@needs_cuda
@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_a_bf16_training_step_per_optimizer_on_cuda(prepared_data, optimizer: str) -> None:
    run = tiny_run(
        prepared_data,
        optimizer=optimizer,
        lr=OPTIMIZER_LRS.get(optimizer, 3e-3),
        precision="bf16",
        compile="off",
        tokens=8 * 32 * 2,
        log_every=1,
        **EXTRA.get(optimizer, {}),
    )
    result = train(run, data_root=prepared_data, log=None)
    assert result.status == "completed", result.error
    assert result.device is not None and result.device.startswith("cuda:"), result.device
    assert result.steps_done == 2 and [p["step"] for p in result.curve] == [1, 2]
    assert all(math.isfinite(p["train_loss"]) for p in result.curve), result.curve
    assert math.isfinite(result.metrics["val_loss"])
    peak = place(run.execution.precision, run.execution.compile).peak_flops()
    assert (result.metrics["mfu"] is None) == (peak is None), (result.metrics["mfu"], peak)


@needs_cuda
def test_compiled_and_eager_losses_agree_in_bf16_on_cuda(prepared_data) -> None:
    runs = {
        c: tiny_run(prepared_data, precision="bf16", compile=c, log_every=1) for c in ("off", "on")
    }
    eager, compiled = (train(runs[c], data_root=prepared_data, log=None) for c in ("off", "on"))
    assert eager.status == compiled.status == "completed", (eager.error, compiled.error)
    assert eager.metrics["compile_s"] is None and compiled.metrics["compile_s"] > 0
    assert [p["step"] for p in eager.curve] == [p["step"] for p in compiled.curve]
    for a, b in zip(eager.curve, compiled.curve, strict=True):
        assert b["train_loss"] == pytest.approx(a["train_loss"], rel=BF16_REL), (a, b)
    assert compiled.metrics["val_loss"] == pytest.approx(eager.metrics["val_loss"], rel=BF16_REL)


@needs_cuda
@pytest.mark.parametrize("compiled", [False, True])
def test_the_chunked_loss_agrees_with_the_one_piece_loss_in_bf16_on_cuda(
    compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43: the training loss of a micro-batch larger than a chunk (16 x 256 tokens, chunks
    of 1000: the last one short) under bf16 autocast, eager and compiled: its value and gradients
    are the one-piece computation's to bf16 rounding."""
    run = tiny_run_arch()
    torch.manual_seed(0)
    model = GPT(run.arch, 256).cuda()
    gen = torch.Generator().manual_seed(1)
    idx, tgt = (torch.randint(0, 512, (16, 256), generator=gen).cuda() for _ in range(2))
    forward = torch.compile(model) if compiled else model
    out = {}
    for rows in (None, 1000):
        monkeypatch.setattr(GPT, "loss_chunk_rows", rows)
        model.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = forward(idx, tgt)
        loss.backward()
        out[rows] = (loss.detach().float(), [p.grad.clone() for p in model.parameters()])
    (l0, g0), (l1, g1) = out[None], out[1000]
    assert loss.dtype == torch.float32
    assert l1.item() == pytest.approx(l0.item(), rel=BF16_REL)
    for a, b in zip(g1, g0, strict=True):
        assert (a - b).norm() <= BF16_REL * b.norm() + 1e-6, ((a - b).norm(), b.norm())


def _gpt_params(device: str) -> tuple[nn.Module, list[torch.Tensor]]:
    """A tiny GPT on ``device`` and fixed random gradients for 5 steps of it (fp32)."""
    run = tiny_run_arch()
    torch.manual_seed(0)
    model = GPT(run.arch, run.data.seq_len).to(device)
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn((5, *p.shape), generator=gen).to(device) for p in model.parameters()]
    return model, grads


def tiny_run_arch():
    """The tiny GPT's run (architecture only; no dataset is read)."""
    from harness.grid.resolve import Resolver

    point = {
        "model": "tiny",
        "dataset": "synthetic",
        "vocab_size": 512,
        "seq_len": 32,
        "batch_size": 1,
        "steps": 1,
        "optimizer": "adamw",
        "lr": 1e-3,
    }
    return Resolver("gpu", "full", lambda _: 512, "test").resolve(point, "tiny")


def _trajectory(device: str, make) -> list[torch.Tensor]:
    """The parameters after 5 steps of ``make(param_groups)`` with a warming-up lr."""
    model, grads = _gpt_params(device)
    opt = make(param_groups(model, 0.1))
    for step in range(5):
        for g in opt.param_groups:
            g["lr"] = 1e-3 * (step + 1)
        for p, g in zip(model.parameters(), grads, strict=True):
            p.grad = g[step]
        opt.step()
    return [p.detach().cpu() for p in model.parameters()]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    ("ours", "fused"), [("adamw", torch.optim.AdamW), ("adam", torch.optim.Adam)]
)
def test_fused_torch_optimizer_and_the_harness_agree(device: str, ours: str, fused) -> None:
    """The bare loop of ``benchmarks/throughput.py`` steps torch's fused AdamW; the harness steps
    its own (multi-tensor) one: the same update, to float32 rounding."""
    betas = (0.9, 0.95)
    mine = _trajectory(device, lambda g: OPTIMIZERS[ours].load()(g, lr=1e-3, betas=betas))
    ref = _trajectory(device, lambda g: fused(g, lr=1e-3, betas=betas, fused=True))
    start = [p.detach().cpu() for p in _gpt_params(device)[0].parameters()]
    for a, b, w0 in zip(mine, ref, start, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
        assert not torch.equal(a, w0)  # they moved: 5 steps of lr ~1e-3


@needs_cuda
@pytest.mark.parametrize("name", ["adamw", "adam", "coupled_adam"])
def test_on_cuda_the_harness_takes_the_fused_kernel_and_equals_its_multi_tensor_math(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43: on CUDA the Adam family steps torch's fused kernel (``kernel="auto"``), equal to
    its own multi-tensor path (the reference math) to float32 rounding over 5 steps."""
    calls: list[str] = []
    for op in ("_fused_adamw_", "_fused_adam_"):
        real = getattr(torch, op)

        def spy(*a, _real=real, _op=op, **kw):
            calls.append(_op)
            return _real(*a, **kw)

        monkeypatch.setattr(torch, op, spy)

    def make(kernel: str):
        def build(groups):
            opt = OPTIMIZERS[name].load()(groups, lr=1e-3, betas=(0.9, 0.95))
            opt.kernel = kernel
            return opt

        return build

    fused = _trajectory("cuda", make("auto"))
    assert calls and set(calls) == {"_fused_adam_" if name == "adam" else "_fused_adamw_"}
    calls.clear()
    foreach = _trajectory("cuda", make("foreach"))
    assert not calls
    start = [p.detach().cpu() for p in _gpt_params("cuda")[0].parameters()]
    for a, b, w0 in zip(fused, foreach, start, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
        assert not torch.equal(a, w0)


@needs_cuda
def test_a_checkpoint_written_on_the_gpu_resumes_to_the_same_curve(prepared_data, tmp_path):
    run = tiny_run(prepared_data, precision="bf16", compile="off", log_every=1)
    whole = train(run, data_root=prepared_data, log=None)
    trained: list[int] = []  # the steps the resumed process logs: 4, 5, 6 if it resumed

    def log(line: str) -> None:  # "[run_id] step k/n loss ..."
        trained.append(int(line.split(" step ")[1].split("/")[0]))

    ckpt = Checkpointing(tmp_path / "run.pt", every_s=600.0)
    resumed = interrupt_then_resume(run, prepared_data, ckpt, after=3, log=log)
    assert trained == [4, 5, 6], trained
    assert resumed.steps_done == whole.steps_done == 6
    assert [p["step"] for p in resumed.curve] == [p["step"] for p in whole.curve]
    for a, b in zip(whole.curve, resumed.curve, strict=True):  # GPU kernels (SDPA's backward)
        assert b["train_loss"] == pytest.approx(a["train_loss"], rel=BF16_REL), (a, b)
    assert resumed.metrics["val_loss"] == pytest.approx(whole.metrics["val_loss"], rel=BF16_REL)
