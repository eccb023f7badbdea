"""Results that could not be written: kept in a spill file, written by the next ``submit``.

A run that finished training on a full (or read-only) results file system used to lose its
result. :func:`write_or_spill` writes the curve and row as usual; when the file system refuses,
it keeps the run's result (status, metrics, curve, provenance) as one JSON file in the first
spill folder that takes it (:func:`harness.core.paths.spill_dirs`: ``$HARNESS_SPILL``, then
the cache folder's ``spill``, then the system's temp folder) and raises :class:`ResultSpilled`,
whose message says where. ``submit`` calls :func:`recover` before it decides what to run, so the
result lands in the results folder once there is room, with its original time and job id.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.core import paths
from harness.core.config import RunConfig
from harness.core.files import atomic_write_text, os_error_line
from harness.core.provenance import ATTEMPT
from harness.core.result import RunResult, Status
from harness.store.arrivals import arrive
from harness.store.auto import auto_compact
from harness.store.live import retire
from harness.store.rows import next_attempt, write_result


class ResultSpilled(OSError):
    """A run's result was not written to the results folder but kept in a spill file (an
    OSError without an errno: the CLI prints its one line, exit 2)."""

    def __init__(self, line: str, status: Status, spill: Path | None) -> None:
        super().__init__(line)
        self.line = line
        """One line: the file-system error, and where the result is kept (or that it is lost)."""
        self.status = status
        """The run's status (``completed``, ...), as it would have been written."""
        self.spill = spill
        """The spill file; None when no spill folder took it either."""


def write_or_spill(
    root: Path, run: RunConfig, result: RunResult, provenance: Mapping[str, Any]
) -> Path:
    """:func:`~harness.store.rows.write_result`, or a spill file when the file system refuses;
    then the grid is compacted if enough per-run files have piled up
    (:func:`harness.store.auto.auto_compact`).

    Raises:
        ResultSpilled: the result is in a spill file (or, when every spill folder refused too,
            lost; the message says which).
    """
    prov = {**provenance, "created_at": provenance.get("created_at") or dt.datetime.now(dt.UTC)}
    try:
        if prov.get(ATTEMPT) is None:  # kept with a spilled result: it stays this attempt's
            prov[ATTEMPT] = next_attempt(root, run.grid, run.run_id)
        path = write_result(root, run, result, prov)
    except OSError as e:
        cause = os_error_line(e)
    else:
        with contextlib.suppress(OSError):  # the row is written; a live file left is stale
            retire(root, run.grid, run.run_id, writer=True)
        # never raises: the row is written
        auto_compact(root, run.grid, count=arrive(root, run.grid))
        return path
    doc = {
        "results_root": str(Path(root).resolve()),
        "grid": run.grid,
        "run_id": run.run_id,
        "result": dataclasses.asdict(result),
        "provenance": {**prov, "created_at": prov["created_at"].isoformat()},
    }
    for folder in paths.spill_dirs():
        target = folder / _bucket(root, run.grid) / f"{run.run_id}.json"
        try:
            atomic_write_text(target, json.dumps(doc))
        except OSError:
            continue
        line = f"{cause}; the {result.status} result of run {run.run_id} is kept in {target}"
        raise ResultSpilled(line + " (the next submit writes it)", result.status, target)
    line = f"{cause}; the {result.status} result of run {run.run_id} is lost (no spill folder)"
    raise ResultSpilled(line, result.status, None)


def recover(root: Path, grid: str, load: Callable[[str], RunConfig]) -> list[str]:
    """Write ``grid``'s spilled results into ``root`` (unless the run has a newer row since) and
    remove their spill files; returns the run_ids written.

    Args:
        root: the results root.
        grid: the grid's name.
        load: ``load(run_id) -> RunConfig`` (the manifest's config of a run).

    Raises:
        OSError: the results folder still refuses the write (the spill files stay).
    """
    written = []
    for path in _spilled(root, grid):
        try:
            doc = json.loads(path.read_text())
            run = load(doc["run_id"])
            prov = dict(doc["provenance"])
            prov["created_at"] = dt.datetime.fromisoformat(prov["created_at"])
            result = RunResult(**doc["result"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not ours to repair; left for a person to read
        if not _superseded(root, run, prov):
            write_result(root, run, result, prov)
            with contextlib.suppress(OSError):
                retire(root, grid, run.run_id, writer=False)
            written.append(run.run_id)
        path.unlink(missing_ok=True)
    return written


def _superseded(root: Path, run: RunConfig, prov: Mapping[str, Any]) -> bool:
    """Whether the run has a row of the spilled result's attempt or a later one (a retry wrote
    it since); for a result spilled before attempts were recorded, a row written later."""
    attempt = prov.get(ATTEMPT)
    if attempt is not None:
        return next_attempt(root, run.grid, run.run_id) > int(attempt)
    from harness.store.db import newest_time_us  # DuckDB: only for such an old spill file

    newest = newest_time_us(root, run.grid, run.run_id)
    return newest is not None and newest >= prov["created_at"].timestamp() * 1e6


def _spilled(root: Path, grid: str) -> list[Path]:
    found: list[Path] = []
    for folder in paths.spill_dirs():
        bucket = folder / _bucket(root, grid)
        found += sorted(bucket.glob("*.json")) if bucket.is_dir() else []
    return found


def _bucket(root: Path, grid: str) -> str:
    """Spill sub-folder of one grid of one results root: ``<grid>-<hash of the root>``."""
    digest = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:10]
    return f"{grid}-{digest}"
