"""Training throughput of the harness against a bare PyTorch loop doing the same steps.

For each model preset and sequence length, the same run (AdamW, batch ``--batch-size`` sequences
in micro-batches, warmup + cosine, global clip 1.0, weight decay on matrices) is trained

- by the harness: ``harness.train.loop.train(run)``, exactly as a launched job does;
- by a bare loop in the nanoGPT style: the same ``GPT``, ``torch.optim.AdamW`` over the same
  parameter groups, the same batches read from the same memmap, the same autocast, compile, clip
  and lr schedule, and a host sync at the same logging steps; nothing else.

Steady-state tokens/s is timed identically for both, by the host clock at the logging steps
(where both synchronise): the median over the logging intervals after the first one (which holds
the warmup / compile steps), so that a burst of another process on a shared machine does not
decide it; likewise per second of the process's CPU time. The harness's own ``tokens_per_s`` is
printed beside it. ``e2e`` is the whole run's wall time (model build, training, evaluation; the
harness also computes its end-of-run metrics): the harness overhead of issue 2, item 11. Loops
alternate for ``--repeats`` rounds, in ABBA order (on a CPU the loop run second in a process tends
to be a few % slower); medians are printed with [min, max], ratios are medians of the per-round
ratios. Final training losses are printed for both (on CPU in fp32 they agree to
rounding: the same computation).

MFU = tokens/s * FLOPs per token (6 * matmul params + 12 * layers * d_model * seq_len) / the
device's bf16 peak (``harness.train.device.PEAK_BF16_FLOPS``); on CPU it is not defined.

Data are uniform random tokens (``--vocab``): speed does not depend on the ids.

``--profile-below R --profile-out FILE``: when a configuration's harness/bare ratio is under
``R``, one more harness run of three steps is profiled (``torch.profiler``, CPU and CUDA
activity) and its third step's operations, sorted by device time (CPU time on a CPU), are
written to ``FILE`` as text: what the gap is made of, in the same process (compile caches warm).

Example:
    python benchmarks/throughput.py --device cpu --preset tiny
    python benchmarks/throughput.py --device cuda --preset gpt2-124m,160m --seq-len 1024,2048
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from common import (  # benchmarks/common.py
    bench_run,
    machine,
    parse_args_quick,
    summary,
    synthetic_dataset,
)

from harness.core.config import RunConfig
from harness.model.architecture import flops_per_token
from harness.model.gpt import GPT
from harness.optim.routing import param_groups
from harness.optim.schedule import lr_at
from harness.train.device import peak_flops, place
from harness.train.loop import train


@dataclass(frozen=True, slots=True)
class Measure:
    """One timed training run."""

    tokens_per_s: float
    """Steady-state throughput: the median over logging intervals past the first (host clock)."""
    tokens_per_cpu_s: float
    """The same tokens per second of this process's CPU time (all its threads)."""
    wall_s: float
    """The whole run: build, train, evaluate."""
    final_loss: float
    """Mean training loss of the last logging interval."""
    reported_tokens_per_s: float | None = None
    """The harness's own ``tokens_per_s`` (None for the bare loop)."""


class _Clock:
    """Wall and CPU clocks at the logging steps: (step, perf_counter, process_time)."""

    def __init__(self) -> None:
        self.marks: list[tuple[int, float, float]] = []

    def mark(self, step: int) -> None:
        self.marks.append((step, time.perf_counter(), time.process_time()))

    def rates(self, tokens_per_step: int) -> tuple[float, float]:
        """(tokens per wall second, tokens per CPU second): the median over the logging
        intervals after the first mark (robust to another process's burst on a shared host)."""
        assert len(self.marks) >= 2, "need at least two logging steps"
        pairs = list(zip(self.marks, self.marks[1:], strict=False))
        wall = [(s1 - s0) * tokens_per_step / (w1 - w0) for (s0, w0, _), (s1, w1, _) in pairs]
        cpu = [(s1 - s0) * tokens_per_step / (c1 - c0) for (s0, _, c0), (s1, _, c1) in pairs]
        return statistics.median(wall), statistics.median(cpu)


def time_harness(run: RunConfig, data_root: Path) -> Measure:
    """Train ``run`` with the harness; time its logging steps through the ``log`` callback."""
    clock = _Clock()

    def log(line: str) -> None:  # "[run_id] step k/n loss ..." after the interval's sync
        clock.mark(int(line.split(" step ")[1].split("/")[0]))

    start = time.perf_counter()
    result = train(run, data_root=data_root, log=log)
    wall = time.perf_counter() - start
    assert result.status == "completed", result.error
    tokens = run.data.batch_size * run.data.seq_len
    final = result.curve[-1]["train_loss"]
    return Measure(*clock.rates(tokens), wall, final, result.metrics["tokens_per_s"])


def time_bare(run: RunConfig, data_dir: Path, fused: bool) -> Measure:
    """The same run as a bare loop (see the module docstring)."""
    start = time.perf_counter()
    placement = place(run.execution.precision, run.execution.compile)
    torch.manual_seed(run.execution.seed)  # as the harness seeds before building the model
    model = GPT(run.arch, run.data.seq_len).to(placement.device)
    opt = torch.optim.AdamW(
        param_groups(model, run.optim.weight_decay),
        lr=run.optim.lr,
        betas=(run.optim.beta1, run.optim.beta2),
        eps=run.optim.eps,
        **({"fused": True} if fused else {"foreach": True}),
    )
    forward = torch.compile(model) if placement.compile else model
    train_bin = np.memmap(data_dir / "train.bin", dtype=np.uint16, mode="r")
    to_device = _transfer(placement.device)
    clock, loss_sum = _Clock(), torch.zeros((), device=placement.device)
    accum = run.data.batch_size // run.data.micro_batch_size
    for step in range(run.data.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, run)
        offsets = np.random.default_rng([run.execution.seed, step]).integers(
            0, len(train_bin) - run.data.seq_len, size=run.data.batch_size
        )
        buf = np.stack([train_bin[o : o + run.data.seq_len + 1] for o in offsets]).astype(np.int64)
        x, y = torch.from_numpy(buf[:, :-1].copy()), torch.from_numpy(buf[:, 1:].copy())
        for i in range(0, run.data.batch_size, run.data.micro_batch_size):
            j = slice(i, i + run.data.micro_batch_size)
            xb, yb = to_device(x[j]), to_device(y[j])
            with placement.autocast():
                loss = forward(xb, yb) / accum
            loss.backward()
            loss_sum += loss.detach()
        torch.nn.utils.clip_grad_norm_(model.parameters(), run.optim.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if (step + 1) % run.execution.log_every == 0 or step + 1 == run.data.steps:
            final = loss_sum.item() / run.execution.log_every  # the interval's host sync
            clock.mark(step + 1)
            loss_sum.zero_()
    _bare_eval(forward, run, data_dir, placement, to_device)
    wall = time.perf_counter() - start
    return Measure(*clock.rates(run.data.batch_size * run.data.seq_len), wall, final)


def _transfer(device: torch.device) -> Callable[[torch.Tensor], torch.Tensor]:
    if device.type == "cuda":
        return lambda t: t.pin_memory().to(device, non_blocking=True)
    return lambda t: t


@torch.no_grad()
def _bare_eval(forward, run, data_dir, placement, to_device) -> float:
    """Mean loss over the same held-out windows the harness evaluates."""
    val = np.memmap(data_dir / "val.bin", dtype=np.uint16, mode="r")
    n = run.data.eval_tokens // run.data.seq_len
    total, count = torch.zeros((), device=placement.device, dtype=torch.float64), 0
    for i in range(0, n, run.data.micro_batch_size):
        starts = np.arange(i, min(n, i + run.data.micro_batch_size)) * run.data.seq_len
        buf = np.stack([val[s : s + run.data.seq_len + 1] for s in starts]).astype(np.int64)
        x = to_device(torch.from_numpy(buf[:, :-1].copy()))
        y = to_device(torch.from_numpy(buf[:, 1:].copy()))
        with placement.autocast():
            total += forward(x, y).double() * y.numel()
        count += y.numel()
    return (total / count).item()


def configured(
    args: argparse.Namespace, preset: str, seq_len: int, data_dir: Path, warm: int, steps: int
) -> RunConfig:
    """The run of one configuration: ``warm`` untimed steps (also the logging interval), then
    ``steps`` more."""
    micro = args.micro_batch_size or max(1, min(args.batch_size, args.micro_tokens // seq_len))
    return bench_run(
        data_dir,
        model=preset,
        seq_len=seq_len,
        batch_size=args.batch_size,
        micro_batch_size=micro,
        steps=warm + steps,
        warmup_steps=warm,
        log_every=warm,
        eval_tokens=micro * seq_len,
        compile=args.compile,
        precision=args.precision,
    )


def measure(args: argparse.Namespace, preset: str, seq_len: int, data_dir: Path) -> float:
    """Alternate harness and bare loop ``args.repeats`` times for one configuration; print;
    the median harness/bare ratio of tokens/s."""
    run = configured(args, preset, seq_len, data_dir, args.warmup_steps, args.steps)
    pairs = []
    for i in range(args.repeats):  # ABBA order: the second loop of a round tends to be slower
        loops = [
            lambda: time_harness(run, data_dir.parent),
            lambda: time_bare(run, data_dir, args.fused),
        ]
        order = loops if i % 2 == 0 else loops[::-1]
        done = [_collected(f) for f in order]
        h, b = done if i % 2 == 0 else done[::-1]
        pairs.append((h, b))
        print(
            f"  round: harness {h.tokens_per_s:,.0f} tok/s, bare {b.tokens_per_s:,.0f} tok/s, "
            f"ratio {h.tokens_per_s / b.tokens_per_s:.3f} (CPU-time ratio "
            f"{h.tokens_per_cpu_s / b.tokens_per_cpu_s:.3f}); "
            f"e2e {h.wall_s:.1f}s vs {b.wall_s:.1f}s",
            flush=True,
        )
    return _report(run, pairs)


PROFILED_STEP = 3
"""The step a profile records: the first is compiled, the second warms the profiler."""


def profile_harness(run: RunConfig, data_root: Path, out: Path, rows: int = 30) -> None:
    """Train ``run`` (3 steps, logging each) under ``torch.profiler``, recording only its third
    step; write the step's operations by self and total device time (CPU time on a CPU)."""
    from torch.profiler import ProfilerActivity, profile, schedule

    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
    with profile(
        activities=activities, schedule=schedule(wait=1, warmup=1, active=1, repeat=1)
    ) as prof:
        start = time.perf_counter()
        result = train(run, data_root=data_root, log=lambda _line: prof.step())
    wall = time.perf_counter() - start
    assert result.status == "completed", result.error
    events = prof.key_averages()
    kind = "device" if cuda else "cpu"
    keys = [f"self_{kind}_time_total", f"{kind}_time_total"]
    if cuda and not hasattr(events[0], keys[0]):  # an older torch names the device "cuda"
        keys = ["self_cuda_time_total", "cuda_time_total"]
    header = (
        f"{run.arch.model} seq {run.data.seq_len} batch {run.data.batch_size} (micro "
        f"{run.data.micro_batch_size}), compile {run.execution.compile}, precision "
        f"{run.execution.precision}: harness step {PROFILED_STEP} of {run.data.steps} under "
        f"torch.profiler ({'CPU+CUDA' if cuda else 'CPU'}); the profiled run took {wall:.1f} s\n"
        f"{machine()}\n"
    )
    tables = [f"## top {rows} by {k}\n{events.table(sort_by=k, row_limit=rows)}" for k in keys]
    out.write_text(header + "\n" + "\n\n".join(tables) + "\n")
    print(f"  profile of harness step {PROFILED_STEP}: {out} ({wall:.1f} s)", flush=True)


def _collected(loop: Callable[[], Measure]) -> Measure:
    gc.collect()  # the previous loop's garbage is not collected inside this one's timing
    return loop()


def _report(run: RunConfig, pairs: list[tuple[Measure, Measure]]) -> float:
    h, b = zip(*pairs, strict=True)
    ratio = statistics.median(x.tokens_per_s / y.tokens_per_s for x, y in pairs)
    cpu_ratio = statistics.median(x.tokens_per_cpu_s / y.tokens_per_cpu_s for x, y in pairs)
    e2e = statistics.median(x.wall_s / y.wall_s for x, y in pairs)
    fpt = flops_per_token(run.arch, run.data.seq_len)
    peak = peak_flops(torch.device("cuda")) if torch.cuda.is_available() else None
    mfu = (lambda r: f"{r * fpt / peak:.1%}") if peak else (lambda r: "n/a")
    used = f"{peak / 1e12:,.0f} TFLOP/s (bf16 dense, {machine().split(';')[0]})" if peak else "none"
    hr, br = (statistics.median(m.tokens_per_s for m in ms) for ms in (h, b))
    wall = [statistics.median(m.wall_s for m in ms) for ms in (h, b)]
    print(
        f"{run.arch.model} seq {run.data.seq_len} batch {run.data.batch_size} "
        f"(micro {run.data.micro_batch_size}), "
        f"{run.data.steps - run.optim.warmup_steps} timed steps, compile {run.execution.compile}, "
        f"precision {run.execution.precision}; MFU: {fpt / 1e9:.3f} GFLOP/token over peak {used}\n"
        f"  harness tokens/s {summary([m.tokens_per_s for m in h])}  MFU {mfu(hr)}  "
        f"(harness-reported {summary([m.reported_tokens_per_s for m in h])}; "
        f"per CPU-s {summary([m.tokens_per_cpu_s for m in h])})\n"
        f"  bare    tokens/s {summary([m.tokens_per_s for m in b])}  MFU {mfu(br)}  "
        f"(per CPU-s {summary([m.tokens_per_cpu_s for m in b])})\n"
        f"  ratio harness/bare: tokens/s {ratio:.3f}, tokens per CPU-s {cpu_ratio:.3f}; "
        f"end-to-end wall {wall[0]:.2f}s vs {wall[1]:.2f}s, ratio {e2e:.3f}\n"
        f"  final train loss: harness {h[-1].final_loss:.6f}, bare {b[-1].final_loss:.6f}",
        flush=True,
    )
    return ratio


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--preset", default="tiny", help="comma-separated model presets")
    ap.add_argument("--seq-len", default=None, help="comma-separated (default: cpu 64, cuda 1024)")
    ap.add_argument("--batch-size", type=int, default=None, help="default: cpu 8, cuda 256")
    ap.add_argument(
        "--micro-batch-size", type=int, default=None, help="default: from --micro-tokens"
    )
    ap.add_argument("--micro-tokens", type=int, default=32768, help="tokens per micro-batch")
    ap.add_argument(
        "--steps", type=int, default=None, help="timed steps (default: cpu 40, cuda 20)"
    )
    ap.add_argument(
        "--warmup-steps", type=int, default=None, help="untimed (default: cpu 4, cuda 5)"
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--compile", choices=["auto", "on", "off"], default="auto")
    ap.add_argument("--precision", choices=["auto", "bf16", "fp32"], default="auto")
    ap.add_argument(
        "--fused",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="bare loop: fused AdamW (default on cuda), else foreach",
    )
    ap.add_argument("--vocab", type=int, default=None, help="default: 8192 tiny, 50304 others")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads (default: cpu 1)")
    ap.add_argument(
        "--profile-below",
        type=float,
        default=None,
        help="profile one harness step when harness/bare tokens/s is under this (module doc)",
    )
    ap.add_argument("--profile-out", type=Path, default=None, help="the profile's text file")
    ap.add_argument(
        "--loss-chunk-rows",
        type=int,
        default=None,
        help=f"tokens per chunk of the training loss, both loops (default {GPT.loss_chunk_rows}; "
        "0: the whole micro-batch's logits at once)",
    )
    args = parse_args_quick(ap, {"steps": 4, "warmup_steps": 2, "repeats": 2})
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device visible to torch")
    if not cuda and torch.cuda.is_available():
        ap.error("--device cpu on a CUDA machine: hide the GPUs (CUDA_VISIBLE_DEVICES=)")
    args.seq_len = args.seq_len or ("1024" if cuda else "64")
    args.batch_size = args.batch_size or (256 if cuda else 8)
    args.steps = args.steps or (20 if cuda else 40)
    args.warmup_steps = args.warmup_steps or (5 if cuda else 4)
    args.fused = cuda if args.fused is None else args.fused
    if args.steps % args.warmup_steps:
        ap.error("--steps must be a multiple of --warmup-steps (the logging interval)")
    if (args.profile_below is None) != (args.profile_out is None):
        ap.error("--profile-below and --profile-out go together")
    if args.threads or not cuda:  # one thread: stable timings on a shared CPU
        torch.set_num_threads(args.threads or 1)
    return args


def main() -> None:
    args = parse_args()
    if args.loss_chunk_rows is not None:  # the harness builds its GPT in this process
        GPT.loss_chunk_rows = args.loss_chunk_rows or None
    print(f"{time.strftime('%Y-%m-%d %H:%M')}  {machine()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for preset in args.preset.split(","):
            vocab = args.vocab or (8192 if preset.startswith("tiny") else 50304)
            for seq_len in (int(s) for s in args.seq_len.split(",")):
                tokens = max(1 << 20, 4 * args.batch_size * seq_len)
                data = synthetic_dataset(Path(tmp) / f"v{vocab}", vocab, tokens, 1 << 18)
                ratio = measure(args, preset, seq_len, data)
                if args.profile_below is not None and ratio < args.profile_below:
                    run = configured(args, preset, seq_len, data, 1, PROFILED_STEP - 1)
                    profile_harness(run, data.parent, args.profile_out)
                    args.profile_below = None  # one profile per process (the headline's)


if __name__ == "__main__":
    main()
