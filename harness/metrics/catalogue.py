"""The metric catalogue: every measured value a result row carries, declared once.

A metric is a float column of the result rows (NULL where not measured). Its declaration says
its unit, whether lower or higher is better (analysis tunes and compares by it), the label
figures put on an axis, and which part of the harness produces it. Producers fill
``RunResult.metrics`` with these names; the store refuses a name that is not declared here, and
analysis and figures read goals and labels from here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from harness.core.errors import UserError


class Goal(StrEnum):
    """Which direction of a metric is better."""

    MIN = "min"
    """Lower is better."""
    MAX = "max"
    """Higher is better."""


class Producer(StrEnum):
    """The part of the harness that measures a metric."""

    TRAINING = "training"
    """The training loop (``harness.train.loop``): losses, time, throughput, utilisation."""
    EMBEDDING = "embedding"
    """The embedding metrics of the input embedding (``harness.metrics.embedding.embedding``)."""
    HEAD = "head"
    """The same metrics of an untied output head (``head_`` + the embedding metric's name)."""
    PROBE = "probe"
    """The second-moment probe of the embedding's optimizer state (paper App. D.2)."""
    WORKLOAD = "workload"
    """A workload's own evaluation (``harness.workloads``) beyond ``val_loss`` and the bucket
    losses it shares with the GPT."""


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric column."""

    name: str
    """Column name."""
    unit: str
    """Unit of the value (empty for ratios and counts)."""
    goal: Goal | None
    """Which direction is better; None when neither is (a descriptive quantity)."""
    label: str
    """Axis label in figures."""
    producer: Producer
    """Who measures it."""


def _embedding(name: str, unit: str, goal: Goal | None, label: str) -> tuple[Metric, Metric]:
    """An embedding metric and its ``head_`` twin for an untied output head."""
    return (
        Metric(name, unit, goal, label, Producer.EMBEDDING),
        Metric(f"head_{name}", unit, goal, f"head {label}", Producer.HEAD),
    )


_EMBEDDING = (
    # iso is the paper's convention (comparable with its Tables 1, 3, 4, 7); rows written before
    # it existed hold iso_sym's value in iso (harness.analysis.rows.preparation reads them as
    # iso_sym).
    _embedding("iso", "", Goal.MAX, "isotropy Iso(E)"),
    _embedding("mu_norm", "", Goal.MIN, "mean embedding norm ||mu||"),
    _embedding("mean_norm", "", None, "mean row norm (1/V) sum ||e_i||"),
    _embedding("mu_norm_ratio", "", Goal.MIN, "||mu|| / mean ||e_i||"),
    _embedding("rho", "%", Goal.MAX, "rho (norm-frequency corr., %)"),
    _embedding("kappa", "%", Goal.MAX, "kappa (condition, %)"),
    _embedding("iso_sym", "", Goal.MAX, "isotropy Iso(E), both signs"),
)

FREQUENCY_BUCKETS = 4
"""Token-frequency buckets of the validation loss, ``val_loss_q1`` (the most frequent token
types, together a quarter of the training tokens) .. ``val_loss_q4`` (the rarest types, with
those never seen in training): see :mod:`harness.metrics.frequency`."""

METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("val_loss", "nats/token", Goal.MIN, "validation loss", Producer.TRAINING),
        Metric("val_ppl", "", Goal.MIN, "validation perplexity", Producer.TRAINING),
        Metric("train_loss", "nats/token", Goal.MIN, "training loss", Producer.TRAINING),
        Metric("wall_s", "s", Goal.MIN, "wall-clock time (s)", Producer.TRAINING),
        Metric("tokens_per_s", "tokens/s", Goal.MAX, "throughput (tokens/s)", Producer.TRAINING),
        *(m for pair in _EMBEDDING for m in pair if m.producer is Producer.EMBEDDING),
        *(m for pair in _EMBEDDING for m in pair if m.producer is Producer.HEAD),
        Metric("v_unigram_r2", "", Goal.MAX, "R^2 of v_i against p_i", Producer.PROBE),
        Metric("v_unigram_slope", "", None, "slope of v_i against p_i", Producer.PROBE),
        Metric("mfu", "", Goal.MAX, "model-FLOPs utilisation", Producer.TRAINING),
        Metric("train_flops", "FLOPs", None, "training FLOPs", Producer.TRAINING),
        Metric("passes_per_step", "", None, "forward-backward passes per step", Producer.TRAINING),
        Metric("peak_mem_gb", "GB", Goal.MIN, "peak memory (GB)", Producer.TRAINING),
        Metric("compile_s", "s", Goal.MIN, "compile time (s)", Producer.TRAINING),
        Metric("data_wait_s", "s", Goal.MIN, "data wait (s)", Producer.TRAINING),
        Metric("optimizer_step_frac", "", Goal.MIN, "optimizer share of a step", Producer.TRAINING),
        Metric("max_loss_rise", "nats", None, "largest loss spike (nats)", Producer.TRAINING),
        *(
            Metric(
                f"val_loss_q{k + 1}",
                "nats/token",
                Goal.MIN,
                f"validation loss, frequency bucket {k + 1} (1: most frequent)",
                Producer.TRAINING,
            )
            for k in range(FREQUENCY_BUCKETS)
        ),
        Metric("log10_gap", "log10", Goal.MIN, "log10 suboptimality f(x) - f*", Producer.WORKLOAD),
    )
}
"""Every metric, by name, in column order."""


def produced_by(producer: Producer) -> tuple[str, ...]:
    """Names of the metrics one producer measures, in column order."""
    return tuple(m.name for m in METRICS.values() if m.producer is producer)


DEFAULT_METRIC = "val_ppl"
"""The metric analysis and figures use when none is named."""


TRACK_GROUPS: dict[str, tuple[str, ...]] = {
    "embedding": produced_by(Producer.EMBEDDING),
    "head": produced_by(Producer.HEAD),
    "buckets": tuple(f"val_loss_q{k + 1}" for k in range(FREQUENCY_BUCKETS)),
}
"""Metrics a run can record at every evaluation point (``track:``), by group: the embedding
metrics of the input embedding, those of an untied output head (None for a tied one), and the
validation loss by token-frequency bucket. A grid names groups or single metrics."""

TRACKABLE: tuple[str, ...] = tuple(n for names in TRACK_GROUPS.values() for n in names)
"""Every metric ``track:`` may name; each becomes a curve column when tracked."""


def track_names(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """The metrics ``value`` names (a list, or a comma-separated string, of metric or group
    names), without repeats, in catalogue order; empty for None or nothing.

    Raises:
        UserError: a name that is neither a trackable metric nor a group, listing the choices.
    """
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    wanted: set[str] = set()
    for item in (str(i).strip() for i in items):
        if item in TRACK_GROUPS:
            wanted.update(TRACK_GROUPS[item])
        elif item in TRACKABLE:
            wanted.add(item)
        elif item:
            choices = ", ".join([*TRACK_GROUPS, *TRACKABLE])
            raise UserError(f"track: unknown metric {item!r}; valid: {choices}")
    return tuple(n for n in TRACKABLE if n in wanted)
