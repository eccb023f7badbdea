"""Downstream scores (``harness eval``): one file per (run, requested task) under
:func:`harness.core.paths.eval_path`, one row per metric of each (sub)task, read by the ``evals``
view (:mod:`harness.store.db`), which joins ``runs`` by ``run_id``. A file is written whole
(atomically) and replaced when its run's weights change; it records the weights' digest and the
document limit, so a later ``eval`` skips the (run, task) pairs already done with the same weights
and limit."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.core import paths
from harness.core.scores import Score
from harness.store.rows import atomic_write_table
from harness.store.schema import EVAL_SCHEMA


def write_scores(
    root: Path,
    grid: str,
    run_id: str,
    task: str,
    scores: Sequence[Score],
    weights_sha256: str,
    doc_limit: int | None,
    provenance: Mapping[str, Any],
) -> Path:
    """Write (replace) the file of ``run_id``'s scores on ``task`` computed from the weights of
    digest ``weights_sha256`` on at most ``doc_limit`` documents (None: all), atomically."""
    where = {
        k: provenance.get(k)
        for k in ("lm_eval_version", "hostname", "git_commit", "torch_version", "job_id")
    }
    rows = [
        {
            "grid": grid,
            "run_id": run_id,
            **dataclasses.asdict(s),
            "weights_sha256": weights_sha256,
            "doc_limit": doc_limit,
            **where,
            "created_at": provenance.get("created_at") or dt.datetime.now(dt.UTC),
        }
        for s in scores
    ]
    path = paths.eval_path(root, grid, run_id, task)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_table(pa.Table.from_pylist(rows, schema=EVAL_SCHEMA), path)
    return path


def scored_with(root: Path, grid: str, run_id: str, task: str) -> tuple[str, int | None] | None:
    """(weights digest, document limit) that ``run_id``'s scores on ``task`` were computed with;
    None when it has none (or an unreadable file, which the next ``eval`` replaces)."""
    path = paths.eval_path(root, grid, run_id, task)
    try:
        table = pq.read_table(path, columns=["weights_sha256", "doc_limit"]).slice(0, 1)
    except (OSError, pa.ArrowException):
        return None
    rows = table.to_pylist()
    if not rows or not rows[0]["weights_sha256"]:
        return None
    return str(rows[0]["weights_sha256"]), rows[0]["doc_limit"]
