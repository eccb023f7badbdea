"""Step time of every optimizer of the zoo as a ratio to ``torch.optim.AdamW(foreach=True)``.

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

Example:
    python benchmarks/optim_step.py                    # CPU, 12 layers, d 512, vocab 32768
    python benchmarks/optim_step.py --device cuda --d-model 768 --vocab 50304 --rounds 30
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn

from harness.model.architecture import GPTConfig, preset_fields
from harness.model.gpt import GPT
from harness.optim.registry import OPTIMIZERS
from harness.optim.routing import param_groups

#: Constructor arguments the specs leave to the grid.
EXTRA = {"sgd_cclip": {"clip_value": 1.0}}


def template_groups(args: argparse.Namespace) -> list[dict]:
    """Routed param groups of the model, on the meta device (shapes only)."""
    fields = preset_fields(args.preset) | {"n_layer": args.layers, "d_model": args.d_model}
    fields |= {"n_head": args.d_model // 64, "vocab_size": args.vocab, "seq_len": 1024}
    if args.tied is not None:
        fields["tie_weights"] = args.tied
    with torch.device("meta"):
        model = GPT(GPTConfig(**fields))
    return param_groups(model, weight_decay=0.1)


def materialize(template: list[dict], device: str, extra: dict[str, dict]) -> list[dict]:
    """Fresh parameters (same values every call) in groups shaped like ``template``."""
    gen = torch.Generator(device="cpu").manual_seed(0)
    out = []
    for g in template:
        params = [nn.Parameter(torch.randn(p.shape, generator=gen).to(device)) for p in g["params"]]
        out.append({**g, "params": params, **extra.get(g["name"], {})})
    return out


def make(name: str, template: list[dict], device: str) -> torch.optim.Optimizer:
    """The optimizer ``name`` with its spec's defaults over a fresh copy of the parameters."""
    if name == "torch_adamw":
        groups = materialize(template, device, {})
        return torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.95), weight_decay=0.0, foreach=True)
    spec = OPTIMIZERS[name]
    kwargs = spec.kwargs(_Defaults(spec.fields)) | EXTRA.get(name, {})
    groups = materialize(template, device, spec.group_options)
    return OPTIMIZERS[name](groups, lr=1e-3, **kwargs)


class _Defaults:
    """A stand-in run whose optimizer fields are the spec's defaults."""

    def __init__(self, fields: dict) -> None:
        self.__dict__.update(fields)

    def __getattr__(self, name: str) -> None:
        return None


def attach_grads(opt: torch.optim.Optimizer, grads: list[torch.Tensor]) -> None:
    params = [p for g in opt.param_groups for p in g["params"]]
    for p, g in zip(params, grads, strict=True):
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
    args = ap.parse_args()
    on_cpu = args.device == "cpu"
    args.clock = args.clock or ("cpu" if on_cpu else "wall")
    if args.clock == "cpu" and not on_cpu:
        ap.error("--clock cpu measures host CPU time; use --clock wall on an accelerator")
    torch.set_num_threads(args.threads or (1 if on_cpu else torch.get_num_threads()))
    return args


def main() -> None:
    args = parse_args()
    template = template_groups(args)
    n_params = sum(p.numel() for g in template for p in g["params"])
    gen = torch.Generator().manual_seed(1)
    grads = [
        torch.randn(p.shape, generator=gen).to(args.device) for g in template for p in g["params"]
    ]
    print(
        f"torch {torch.__version__}, device {args.device}, threads {torch.get_num_threads()}, "
        f"clock {args.clock}"
    )
    print(f"{n_params / 1e6:.1f}M params in {len(grads)} tensors; {args.rounds} timed steps each")
    reference = make("torch_adamw", template, args.device)
    attach_grads(reference, grads)
    ref_step = timer(reference, args.device, args.clock)
    for _ in range(3):  # warm-up of the reference alone: allocator and page-fault pattern
        ref_step()
    print(f"{'optimizer':<14}{'ms/step':>10}{'ref ms':>10}{'ratio':>8}")
    for name in args.only:
        opt = make(name, template, args.device)
        attach_grads(opt, grads)
        step = timer(opt, args.device, args.clock)
        for _ in range(3):  # warm-up: state allocation, kernels
            step(), ref_step()
        pairs = [(step(), ref_step()) for _ in range(args.rounds)]
        mine, ref = (statistics.median(x) for x in zip(*pairs, strict=True))
        ratio = statistics.median(a / b for a, b in pairs)
        print(f"{name:<14}{mine * 1e3:>10.1f}{ref * 1e3:>10.1f}{ratio:>8.2f}", flush=True)
        del opt, step


if __name__ == "__main__":
    main()
