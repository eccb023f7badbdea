"""Dry-run summaries of a grid: run count, preview table, estimated compute; or every planned
run's resolved config as CSV or JSON (one row per run: run_id and every field).

Parameter counts come from a counting function the caller hands in (the preset formula by
default; a user's model is measured by ``harness.model.build.count_params``, which needs torch).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from typing import Any

from harness.core.catalogue import CATALOGUE, FIELD_NAMES, flat
from harness.core.config import Architecture, RunConfig
from harness.core.fields import is_absent
from harness.model.architecture import param_count

#: Assumed model-FLOPs utilisation and device for GPU-hour estimates (stated in the output).
ASSUMED_MFU = 0.40
ASSUMED_PEAK_FLOPS = 312e12  # A100 bf16 dense
ASSUMED_DEVICE = "A100 (bf16 312 TFLOP/s)"


#: CPU cost of a run on a laptop core, for CPU-hour estimates (stated as an estimate): seconds
#: outside training (its build, evaluation and row, in a warm worker) plus its training and
#: evaluation FLOPs at a sustained rate; measured on the tiny GPT (2.5M parameters, seq_len 32,
#: one torch thread) by the laptop bench on an idle 2-core machine: each run's wall time is
#: 2.2 s + 2.88e-4 s per training token (96 runs, 51 GFLOP/s), 16.9 s of CPU per run in all
#: (benchmarks/RESULTS.md section 9, issue 38; 2e11 before, a 3x underestimate).
CPU_RUN_S = 1.5
CPU_FLOPS = 5.0e10
CPU_DEVICE = "CPU core"


ParamCount = Callable[[Architecture, int], int]
"""(architecture, sequence length) -> parameters of the model."""


def _arch(run: RunConfig) -> tuple[Architecture, int]:
    return run.arch, run.data.seq_len


def compute_estimate(
    runs: Sequence[RunConfig], params: ParamCount = param_count
) -> tuple[float, float]:
    """(total training FLOPs = sum 6 * params * tokens, GPU-hours at ``ASSUMED_MFU``)."""
    tokens: dict[tuple[Architecture, int], int] = {}
    for r in runs:  # one parameter count per architecture, not per run
        key = _arch(r)
        tokens[key] = tokens.get(key, 0) + r.data.tokens
    flops = sum(6.0 * params(*k) * n for k, n in tokens.items())
    return flops, flops / (ASSUMED_MFU * ASSUMED_PEAK_FLOPS) / 3600.0


def cpu_hours(runs: Sequence[RunConfig], params: ParamCount = param_count) -> float:
    """CPU-hours of ``runs`` on a laptop core (:data:`CPU_RUN_S` per run, training FLOPs and
    2 x params x eval tokens at :data:`CPU_FLOPS`): an estimate."""
    flops, _ = compute_estimate(runs, params)
    sizes = {k: params(*k) for k in {_arch(r) for r in runs}}
    flops += sum(2.0 * sizes[_arch(r)] * r.data.eval_tokens for r in runs)
    return (len(runs) * CPU_RUN_S + flops / CPU_FLOPS) / 3600.0


def preview(runs: Sequence[RunConfig], axes: Sequence[str], limit: int = 12) -> str:
    """A text table of the first ``limit`` runs over the columns that vary."""
    cols = ["run_id", *[a for a in axes if a != "run_id"]]
    cols = cols[:10]
    rows = [[r.run_id] + [_fmt(flat(r).get(c)) for c in cols[1:]] for r in runs[:limit]]
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in rows]
    if len(runs) > limit:
        lines.append(f"... and {len(runs) - limit} more")
    return "\n".join(lines)


def _firsts(runs: Sequence[RunConfig]) -> list[RunConfig]:
    return list({_arch(r): r for r in runs}.values())


def _fmt(v: object) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def describe(
    runs: Sequence[RunConfig], axes: Sequence[str], params: ParamCount = param_count
) -> str:
    """The dry-run report: count, preview, compute."""
    flops, gpu_h = compute_estimate(runs, params)
    models = sorted(
        {f"{r.arch.model} ({params(*_arch(r)) / 1e6:.1f}M params)" for r in _firsts(runs)}
    )
    return "\n".join(
        [
            f"runs: {len(runs)}",
            f"models: {', '.join(models)}",
            preview(runs, axes),
            f"estimated compute: {flops:.3g} FLOPs (6 x params x tokens), "
            f"{gpu_h:,.1f} GPU-hours at {ASSUMED_MFU:.0%} MFU on {ASSUMED_DEVICE}",
        ]
    )


PLAN_FORMATS = ("table", "csv", "json")
"""Formats of a dry run: the summary (``table``) or every run's resolved config."""


def plan_columns(table: Sequence[dict[str, Any]]) -> list[str]:
    """The run fields a plan of these flat runs lists, in column order: every field but a
    sparse one (:func:`harness.core.fields.spec`) that no run sets, then the optimizers' own
    hyperparameters."""
    fields = [
        f.name
        for f in CATALOGUE
        if not f.meta.sparse or any(not is_absent(row[f.name], f.meta.absent) for row in table)
    ]
    extra = sorted({k for row in table for k in row} - set(FIELD_NAMES))
    return [*fields, *extra]


def plan_rows(runs: Sequence[RunConfig]) -> list[dict[str, Any]]:
    """One dict per run: ``run_id``, the run fields of :func:`plan_columns` (None where one
    does not apply), then the optimizers' own hyperparameters, the same keys in every row."""
    table = [flat(r) for r in runs]
    columns = plan_columns(table)
    return [
        {"run_id": r.run_id, **{k: row.get(k) for k in columns}}
        for r, row in zip(runs, table, strict=True)
    ]


def plan_text(runs: Sequence[RunConfig], fmt: str) -> str:
    """Every planned run's resolved config as ``csv`` (NULL: empty) or ``json`` (a list)."""
    rows = plan_rows(runs)
    if fmt == "json":
        return json.dumps(rows, indent=1)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["run_id"])
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue().rstrip("\n")
