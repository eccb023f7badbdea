"""Downstream scores: what evaluating a run's final weights on a task (``harness eval``) gives,
one :class:`Score` per metric. The evaluator (:mod:`harness.downstream`) makes them, the store
(:mod:`harness.store.evals`) writes them as rows of the ``evals`` view."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class Score:
    """One metric of one (sub)task, as lm-evaluation-harness reports it."""

    task: str
    """The task as requested (``--tasks``): a task, or a group whose subtasks it ran."""
    subtask: str
    """The task this score is of: ``task`` itself, or one of the group's subtasks."""
    metric: str
    """lm-eval's metric name (``acc``, ``acc_norm``, ``exact_match``, ``word_perplexity``)."""
    filter: str
    """lm-eval's filter the metric was computed after (``none`` for loglikelihood tasks)."""
    value: float | None
    """The metric's value (None when lm-eval reports none)."""
    stderr: float | None
    """Its standard error when lm-eval computes one (bootstrap or analytic), else None."""
    version: str | None
    """The task's version (its YAML's ``metadata.version``)."""
    num_fewshot: int | None
    """Few-shot examples in each prompt."""
    samples: int | None
    """Documents evaluated."""
