"""Step time of every optimizer of the zoo as a ratio to torch's AdamW (``--reference``: its
``foreach`` implementation, the default on CPU, or its ``fused`` one, the default on CUDA).

The parameters are those of a real ``harness.model.gpt.GPT`` (the talk's 160M recipe by default,
scaled down so that the whole benchmark takes about a minute on 2 CPU cores), routed into the
harness's param groups (weight decay on matrices; ``coupled``/``muon`` flags as
``build_optimizer`` sets them), with fixed random gradients. Each optimizer is timed in
alternation with the reference AdamW on an identical copy of the parameters, so drifts of the
machine hit both; the ratio is the median over rounds of (optimizer step / reference step).

On CPU the default is one thread timed by its CPU time (``time.process_time``): on a small shared
machine wall-clock times of multi-threaded steps swing by 2-5x with other load, CPU time of one
thread does not (``--threads 2 --clock wall`` measures the other way). On CUDA: wall-clock time
between ``torch.cuda.synchronize()`` calls.

``--ns-dtypes float32,bfloat16`` adds a row per Newton-Schulz compute dtype of Muon
(``muon[ns=float32]``; plain ``muon`` is its default, bfloat16).

Example:
    python benchmarks/optim_step.py                    # CPU, 12 layers, d 512, vocab 32768
    python benchmarks/optim_step.py --device cuda --d-model 768 --vocab 50304 --rounds 30
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from common import parse_args_quick  # benchmarks/common.py
from torch import nn

from harness.core.config import RunConfig
from harness.grid.resolve import Resolver
from harness.model.gpt import GPT
from harness.optim.build import build_optimizer
from harness.optim.registry import OPTIMIZERS
from harness.optim.routing import param_groups

#: Grid values the specs leave to the grid (no default).
EXTRA: dict[str, dict[str, Any]] = {"sgd_cclip": {"clip_value": 1.0}}

SEQ_LEN = 1024
"""Only sizes the (unused) position tables; the step does not depend on it."""


def optimizer_run(
    args: argparse.Namespace, optimizer: str, extra: dict[str, Any] | None = None
) -> RunConfig:
    """The run a grid would resolve for ``optimizer`` (with the grid values ``extra``) on the
    benchmark's model, with the spec's defaults for every hyperparameter the grid does not set."""
    point: dict[str, Any] = {
        "model": args.preset,
        "n_layer": args.layers,
        "d_model": args.d_model,
        "n_head": args.d_model // 64,
        "dataset": "synthetic",
        "vocab_size": args.vocab,
        "seq_len": SEQ_LEN,
        "batch_size": 1,
        "steps": 1,
        "optimizer": optimizer,
        "lr": 1e-3,
        "weight_decay": 0.1,
        **EXTRA.get(optimizer, {}),
        **(extra or {}),
    }
    if args.tied is not None:
        point["tie_weights"] = args.tied
    resolver = Resolver("optim_step", "full", lambda _: args.vocab, "benchmark")
    return resolver.resolve(point, optimizer)


def model_copy(run: RunConfig, state: dict[str, torch.Tensor], device: str) -> nn.Module:
    """A GPT of ``run``'s architecture holding ``state`` (the same values every call)."""
    with torch.device("meta"):
        model = GPT(run.arch, run.data.seq_len)
    model.to_empty(device=device)
    model.load_state_dict(state)
    return model


def attach_grads(model: nn.Module, grads: list[torch.Tensor]) -> None:
    for p, g in zip(model.parameters(), grads, strict=True):
        p.grad = g


def timer(opt: torch.optim.Optimizer, device: str, clock: str) -> Callable[[], float]:
    """A function that takes one step of ``opt`` and returns its duration in seconds."""
    now = time.process_time if clock == "cpu" else time.perf_counter
    cuda = device.startswith("cuda")

    def one_step() -> float:
        if cuda:
            torch.cuda.synchronize()
        t = now()
        opt.step()
        if cuda:
            torch.cuda.synchronize()
        return now() - t

    return one_step


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--preset", default="160m", help="harness.model.architecture preset for the recipe"
    )
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--tied", action=argparse.BooleanOptionalAction, default=None)
    ap.add_argument("--rounds", type=int, default=7, help="timed steps per optimizer")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads (default 1 on CPU)")
    ap.add_argument("--clock", choices=["cpu", "wall"], default=None, help="default: cpu on CPU")
    ap.add_argument("--only", nargs="*", default=sorted(OPTIMIZERS))
    ap.add_argument(
        "--reference",
        choices=["foreach", "fused"],
        default=None,
        help="torch AdamW implementation to compare with (default: fused on CUDA, foreach on CPU)",
    )
    ap.add_argument(
        "--ns-dtypes", default="", help="comma-separated Newton-Schulz dtypes for extra Muon rows"
    )
    args = parse_args_quick(ap, {"layers": 2, "d_model": 128, "vocab": 1024, "rounds": 3})
    on_cpu = args.device == "cpu"
    args.reference = args.reference or ("foreach" if on_cpu else "fused")
    unknown = [n for n in args.only if n not in OPTIMIZERS]
    if unknown:
        ap.error(f"--only: unknown optimizer(s) {unknown}; known: {sorted(OPTIMIZERS)}")
    args.clock = args.clock or ("cpu" if on_cpu else "wall")
    if args.clock == "cpu" and not on_cpu:
        ap.error("--clock cpu measures host CPU time; use --clock wall on an accelerator")
    torch.set_num_threads(args.threads or (1 if on_cpu else torch.get_num_threads()))
    return args


def main() -> None:
    args = parse_args()
    run = optimizer_run(args, "adamw")
    torch.manual_seed(0)
    state = {k: v.to(args.device) for k, v in GPT(run.arch, SEQ_LEN).state_dict().items()}
    gen = torch.Generator().manual_seed(1)
    shapes = [p.shape for p in model_copy(run, state, "cpu").parameters()]
    grads = [torch.randn(s, generator=gen).to(args.device) for s in shapes]
    n_params = sum(g.numel() for g in grads)
    print(
        f"torch {torch.__version__}, device {args.device}, threads {torch.get_num_threads()}, "
        f"clock {args.clock}, reference torch.optim.AdamW({args.reference}=True)"
    )
    print(f"{n_params / 1e6:.1f}M params in {len(grads)} tensors; {args.rounds} timed steps each")
    ref_model = model_copy(run, state, args.device)
    attach_grads(ref_model, grads)
    reference = torch.optim.AdamW(
        param_groups(ref_model, 0.1), lr=1e-3, betas=(0.9, 0.95), **{args.reference: True}
    )
    ref_step = timer(reference, args.device, args.clock)
    for _ in range(3):  # warm-up of the reference alone: allocator and page-fault pattern
        ref_step()
    print(f"{'optimizer':<18}{'ms/step':>10}{'ref ms':>10}{'ratio':>8}")
    rows = [(name, name, {}) for name in args.only]
    rows += [(f"muon[ns={d}]", "muon", {"ns_dtype": d}) for d in args.ns_dtypes.split(",") if d]
    for label, name, extra in rows:
        opt_run = optimizer_run(args, name, extra)
        model = model_copy(opt_run, state, args.device)
        attach_grads(model, grads)
        opt = build_optimizer(model, opt_run)  # as a run builds it: routing, group options
        step = timer(opt, args.device, args.clock)
        for _ in range(3):  # warm-up: state allocation, kernels
            step(), ref_step()
        pairs = [(step(), ref_step()) for _ in range(args.rounds)]
        mine, ref = (statistics.median(x) for x in zip(*pairs, strict=True))
        ratio = statistics.median(a / b for a, b in pairs)
        print(f"{label:<18}{mine * 1e3:>10.2f}{ref * 1e3:>10.2f}{ratio:>8.2f}", flush=True)
        del opt, step, model


if __name__ == "__main__":
    main()
