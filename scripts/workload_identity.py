"""Train a fixed set of tiny runs and write what they produced, timings left out, as JSON.

Run it on two checkouts (``PYTHONPATH=<checkout> python scripts/workload_identity.py OUT``) and
compare the two files byte for byte: a refactor of the training loop that keeps behaviour gives
the same losses, curves, metrics and run_ids. It covers AdamW, SGD, Muon, a schedule-free
optimizer (evaluated in eval mode), a SAM-style closure optimizer, gradient accumulation, tracked
metrics, a run resumed from a checkpoint, and the two toy workloads. About a minute on a CPU.

    D=~/.cache/harness-test-data/v-...   # a data root holding classics-bpe8k prepared
    mkdir /tmp/base && git archive main | tar -x -C /tmp/base
    cp scripts/workload_identity.py /tmp/base/scripts/
    (cd /tmp/base && PYTHONPATH=. python scripts/workload_identity.py /tmp/b.json --data-root $D)
    PYTHONPATH=$PWD python scripts/workload_identity.py /tmp/new.json --data-root $D
    cmp /tmp/b.json /tmp/new.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import torch

from harness.core.result import RunResult
from harness.grid.resolve import Resolver
from harness.train.checkpoint import Checkpointing
from harness.train.loop import TrainingInterrupted, train
from tests.runs import tiny_run

HERE = Path(__file__).resolve().parent.parent / "tests"
TIMING = {
    "wall_s",
    "tokens_per_s",
    "mfu",
    "peak_mem_gb",
    "compile_s",
    "data_wait_s",
    "optimizer_step_frac",
}
"""Metrics measured with a clock (they differ between any two runs)."""

GPT_RUNS: dict[str, dict[str, Any]] = {
    "adamw": {"eval_every": 2},
    "sgd": {"optimizer": "sgd", "lr": 0.3},
    "muon": {"optimizer": "muon", "lr": 0.02},
    "schedule_free": {"optimizer": "schedulefree:AdamWScheduleFree", "eval_every": 2},
    "sam": {"optimizer": f"{HERE / 'user_optimizers.py'}:TwoPassSAM", "lr": 0.05},
    "accumulation": {"micro_batch_size": 2, "eval_every": 2},
    "tracked": {
        "track": ["embedding", "head", "buckets"],
        "eval_every": 2,
        "tie_embeddings": False,
    },
    "diverged": {"lr": 1e4, "optimizer": "sgd", "grad_clip": None},
}
"""Name -> overrides of :data:`tests.runs.TINY`."""

TOY_RUNS: dict[str, dict[str, Any]] = {
    "quadratic": {
        "workload": "quadratic",
        "spectrum": "heterogeneous",
        "optimizer": "adamw",
        "lr": 0.05,
        "steps": 12,
        "batch_size": 4,
        "eval_every": 4,
        "log_every": 2,
    },
    "imbalance": {
        "workload": "imbalance",
        "optimizer": "sgd",
        "lr": 0.5,
        "steps": 12,
        "batch_size": 16,
        "eval_every": 4,
        "log_every": 2,
    },
}


def _plain(x: Any) -> Any:
    if isinstance(x, float):
        return x.hex() if math.isfinite(x) else repr(x)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in sorted(x.items())}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    return x


def _record(run_id: str, r: RunResult) -> dict[str, Any]:
    return _plain(
        {
            "run_id": run_id,
            "status": str(r.status),
            "error": r.error,
            "params": r.params,
            "steps": r.steps_done,
            "tokens": r.tokens_seen,
            "metrics": {k: v for k, v in r.metrics.items() if k not in TIMING},
            "curve": [{k: v for k, v in p.items() if k != "elapsed_s"} for p in r.curve],
        }
    )


def _resumed(data_root: Path) -> tuple[str, RunResult]:
    run = tiny_run(data_root, optimizer="schedulefree:AdamWScheduleFree", eval_every=2)
    with tempfile.TemporaryDirectory() as d:
        ck = Checkpointing(Path(d) / "ck.pt", every_s=1e9)
        calls = iter(range(100))
        with contextlib.suppress(TrainingInterrupted):
            train(
                run,
                data_root=data_root,
                checkpoint=ck,
                log=None,
                should_stop=lambda: next(calls) == 3,
            )
        return run.run_id, train(run, data_root=data_root, checkpoint=ck, log=None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--data-root", type=Path, required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    out: dict[str, Any] = {}
    for name, over in GPT_RUNS.items():
        run = tiny_run(args.data_root, **over)
        out[name] = _record(run.run_id, train(run, data_root=args.data_root, log=None))
    run_id, result = _resumed(args.data_root)
    out["resumed"] = _record(run_id, result)
    for name, point in TOY_RUNS.items():
        run = Resolver("wl", "full", lambda _: 1, "test").resolve(point, "identity run")
        out[name] = _record(run.run_id, train(run, data_root=args.data_root, log=None))
    args.out.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{len(out)} runs -> {args.out}")


if __name__ == "__main__":
    main()
