"""One run's final weights evaluated on downstream tasks: the model and tokenizer it was
trained with (:class:`~harness.downstream.lm.HarnessLM`) handed to ``lm_eval.simple_evaluate``;
its results as :class:`~harness.core.scores.Score` values."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from harness.core.config import RunConfig
from harness.core.scores import Score
from harness.data.catalogue import resolve_dataset
from harness.data.prepare import dataset_encoder
from harness.downstream.tasks import task_manager
from harness.model.build import build_model


def load_lm(run: RunConfig, weights: Path, data_root: Path, device: str | None = None) -> Any:
    """The :class:`~harness.downstream.lm.HarnessLM` of ``run`` with the state dict in
    ``weights`` (float32, on ``device``: default the first GPU, else the CPU)."""
    from harness.downstream.lm import HarnessLM

    where = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model = build_model(run.arch, run.data.seq_len)
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True)["model"])
    encoder = dataset_encoder(resolve_dataset(run.data.dataset, data_root))
    return HarnessLM(model.to(where), encoder, run.data.seq_len, device=where)


def evaluate(
    lm: Any,
    tasks: Sequence[str],
    include: Sequence[Path] = (),
    *,
    limit: int | None = None,
    bootstrap_iters: int = 1000,
) -> dict[str, list[Score]]:
    """Scores of ``lm`` on each of ``tasks`` (a group: each subtask's and the group's), by task.

    Args:
        lm: an lm-eval ``LM`` (:func:`load_lm`).
        tasks: task, group or tag names lm-eval knows (with the YAML under ``include``).
        include: folders of task YAML files.
        limit: documents per task (None: all).
        bootstrap_iters: resamples for the standard errors lm-eval bootstraps.
    """
    from lm_eval import simple_evaluate

    manager = task_manager(include, tasks)
    scores: dict[str, list[Score]] = {}
    for task in tasks:  # one at a time: which subtask belongs to which requested task
        out = simple_evaluate(
            model=lm,
            tasks=[task],
            task_manager=manager,
            limit=limit,
            log_samples=False,
            bootstrap_iters=bootstrap_iters,
        )
        scores[task] = _scores(task, out)
    return scores


def _scores(task: str, out: dict[str, Any]) -> list[Score]:
    """lm-eval's ``results`` (``{subtask: {"acc,none": v, "acc_stderr,none": s, ...}}``) as
    scores."""
    found = []
    for subtask, metrics in sorted(out["results"].items()):
        samples = (out.get("n-samples") or {}).get(subtask) or {}
        for key, value in sorted(metrics.items()):
            name, sep, filt = key.partition(",")
            if not sep or name.endswith("_stderr") or not _number(value):
                continue
            stderr = metrics.get(f"{name}_stderr,{filt}")
            found.append(
                Score(
                    task=task,
                    subtask=subtask,
                    metric=name,
                    filter=filt,
                    value=float(value),
                    stderr=float(stderr) if _number(stderr) else None,
                    version=_text(out.get("versions", {}).get(subtask)),
                    num_fewshot=_int(out.get("n-shot", {}).get(subtask)),
                    samples=_int(samples.get("effective")),
                )
            )
    return found


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
