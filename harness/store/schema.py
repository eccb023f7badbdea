"""Arrow schemas of the files the store writes, derived from the catalogues: the run fields
(:mod:`harness.core.catalogue`), the outcome (:class:`harness.core.result.RunResult`), the
metrics (:mod:`harness.metrics.catalogue`) and provenance (declared here)."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from harness.core.catalogue import CATALOGUE, OWN_HYPERPARAMETERS, WORKLOAD_PARAMETERS
from harness.core.config import RunConfig
from harness.core.provenance import ATTEMPT, ATTEMPT_ABSENT, INPUTS, PROVENANCE, THREADS
from harness.core.result import CURVE_COLUMNS, OUTCOME
from harness.metrics.catalogue import METRICS

ARROW_TYPES: dict[type, pa.DataType] = {
    int: pa.int64(),
    float: pa.float64(),
    str: pa.string(),
    bool: pa.bool_(),
}
"""Python type of a field -> its column type."""

OUTCOME_COLUMNS: dict[str, pa.DataType] = {name: ARROW_TYPES[t] for name, t in OUTCOME.items()}
"""Columns of :class:`~harness.core.result.RunResult` besides its metrics (NULL where they do not
apply)."""

_NOT_STRINGS = {
    "created_at": pa.timestamp("us", tz="UTC"),
    ATTEMPT: pa.int64(),
    **dict.fromkeys(THREADS, pa.int64()),
}

PROVENANCE_COLUMNS: dict[str, pa.DataType] = {
    name: _NOT_STRINGS.get(name, pa.string()) for name in (*PROVENANCE, *INPUTS, *THREADS)
}
"""Provenance columns (declared in ``harness.core.provenance``): where and when the row was made,
which attempt of its run it is, from which inputs, with how many threads."""

NEWEST_KEY = f"(coalesce({ATTEMPT}, {ATTEMPT_ABSENT}), created_at)"
"""SQL ordering a run's rows, the newest last: by attempt, then (between rows of one attempt, or
rows written before attempts were recorded) by time."""

CURVE_SCHEMA = pa.schema(
    [pa.field("grid", pa.string()), pa.field("run_id", pa.string())]
    + [pa.field(c, pa.int64() if c in ("step", "tokens") else pa.float64()) for c in CURVE_COLUMNS]
)
"""Schema of a loss-curve file of a run that tracks nothing (and of every older one)."""


def curve_schema(run: RunConfig) -> pa.Schema:
    """Schema of ``run``'s loss-curve file: :data:`CURVE_SCHEMA`, then one float column per
    metric it tracks (``track:``, :mod:`harness.workloads.tracking`)."""
    return pa.schema([*CURVE_SCHEMA, *(pa.field(n, pa.float64()) for n in run.execution.tracked)])


def hyperparameter_fields(runs: Iterable[RunConfig]) -> list[pa.Field]:
    """Columns of the optimizers' own hyperparameters of ``runs`` (typed by their values)."""
    seen: dict[str, pa.DataType] = {}
    for run in runs:
        for name, value in run.optim.hyperparameters.items:
            seen.setdefault(name, ARROW_TYPES[type(value)])
    return [pa.field(n, t) for n, t in sorted(seen.items())]


def config_schema(runs: Iterable[RunConfig] = ()) -> pa.Schema:
    """Schema of the config columns: ``run_id``, every run field, then the own hyperparameters of
    the optimizers of ``runs``."""
    cols = [pa.field("run_id", pa.string())]
    cols += [pa.field(f.name, ARROW_TYPES[f.type]) for f in CATALOGUE]
    return pa.schema(cols + hyperparameter_fields(runs))


def row_schema(runs: Iterable[RunConfig] = (), extra_metrics: Iterable[str] = ()) -> pa.Schema:
    """Schema of result rows: config, outcome, every catalogued metric (then ``extra_metrics``,
    columns an import declares), provenance."""
    runs = list(runs)
    fields = [*config_schema(runs), pa.field(OWN_HYPERPARAMETERS, pa.string())]
    if any(run.arch.workload is not None for run in runs):  # GPT rows keep their schema
        fields.append(pa.field(WORKLOAD_PARAMETERS, pa.string()))
    fields += [pa.field(k, t) for k, t in OUTCOME_COLUMNS.items()]
    names = list(METRICS) + sorted(set(extra_metrics) - set(METRICS))
    fields += [pa.field(k, pa.float64()) for k in names]
    fields += [pa.field(k, t) for k, t in PROVENANCE_COLUMNS.items()]
    return pa.schema(fields)


EVAL_SCHEMA = pa.schema(
    [
        pa.field("grid", pa.string()),
        pa.field("run_id", pa.string()),
        pa.field("task", pa.string()),
        pa.field("subtask", pa.string()),
        pa.field("metric", pa.string()),
        pa.field("filter", pa.string()),
        pa.field("value", pa.float64()),
        pa.field("stderr", pa.float64()),
        pa.field("version", pa.string()),
        pa.field("num_fewshot", pa.int64()),
        pa.field("samples", pa.int64()),
        pa.field("doc_limit", pa.int64()),
        pa.field("weights_sha256", pa.string()),
        pa.field("lm_eval_version", pa.string()),
        pa.field("hostname", pa.string()),
        pa.field("git_commit", pa.string()),
        pa.field("torch_version", pa.string()),
        pa.field("job_id", pa.string()),
        pa.field("created_at", pa.timestamp("us", tz="UTC")),
    ]
)
"""Columns of the ``evals`` view: the run, the task as requested and the (sub)task scored, the
metric (:class:`~harness.core.scores.Score`), the digest of the weights evaluated, and
provenance (lm-eval's version, where and when)."""
