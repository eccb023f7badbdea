"""Step time of every optimizer of the zoo as a ratio to ``torch.optim.AdamW(foreach=True)``.

The parameters are those of a real ``harness.model.GPT`` (the talk's 160M recipe by default,
scaled down so that the whole benchmark takes about a minute on 2 CPU cores), routed into the
harness's param groups (weight decay on matrices; ``coupled``/``muon`` flags as
``build_optimizer`` sets them), with fixed random gradients. Each optimizer is timed in
alternation with the reference AdamW on an identical copy of the parameters, so drifts of the
machine hit both; the ratio is median(optimizer) / median(reference).

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

from harness.model import GPT, GPTConfig, preset_fields
from harness.optim import OPTIMIZERS, SPECS
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
    spec = SPECS[name]
    kwargs = {k: v for k, v in spec.kwargs(_Defaults(spec.fields)).items() if v is not None}
    groups = materialize(template, device, spec.group_options)
    return OPTIMIZERS[name](groups, lr=1e-3, **kwargs, **EXTRA.get(name, {}))


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


def timer(opt: torch.optim.Optimizer, device: str) -> Callable[[], float]:
    def one_step() -> float:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter()
        opt.step()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter() - t

    return one_step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--preset", default="160m", help="harness.model preset for the recipe")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--tied", action=argparse.BooleanOptionalAction, default=None)
    ap.add_argument("--rounds", type=int, default=5, help="timed steps per optimizer")
    ap.add_argument("--only", nargs="*", default=sorted(OPTIMIZERS))
    args = ap.parse_args()

    template = template_groups(args)
    n_params = sum(p.numel() for g in template for p in g["params"])
    gen = torch.Generator().manual_seed(1)
    grads = [
        torch.randn(p.shape, generator=gen).to(args.device) for g in template for p in g["params"]
    ]
    print(f"torch {torch.__version__}, device {args.device}, threads {torch.get_num_threads()}")
    print(f"{n_params / 1e6:.1f}M params in {len(grads)} tensors; {args.rounds} timed steps each")
    reference = make("torch_adamw", template, args.device)
    attach_grads(reference, grads)
    ref_step = timer(reference, args.device)
    print(f"{'optimizer':<14}{'ms/step':>10}{'ref ms':>10}{'ratio':>8}")
    for name in args.only:
        opt = make(name, template, args.device)
        attach_grads(opt, grads)
        step = timer(opt, args.device)
        for _ in range(2):  # warm-up: state allocation, kernels
            step(), ref_step()
        mine, ref = [], []
        for _ in range(args.rounds):
            mine.append(step())
            ref.append(ref_step())
        m, r = statistics.median(mine), statistics.median(ref)
        print(f"{name:<14}{m * 1e3:>10.1f}{r * 1e3:>10.1f}{m / r:>8.2f}", flush=True)
        del opt, step


if __name__ == "__main__":
    main()
