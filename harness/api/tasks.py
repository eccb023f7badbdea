"""The commands beside training and analysis: downstream evaluation (``harness eval``), datasets
(``harness data``) and the live view (``harness watch``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core import paths

if TYPE_CHECKING:
    from harness.launch.evals import EvalPlan
    from harness.watch.live_view import Snapshot


def evaluate(
    grid: str | Path,
    tasks: Sequence[str],
    *,
    launcher: str = "local",
    include: Sequence[str | Path] = (),
    limit: int | None = None,
    wait: bool | None = None,
    results: str | Path | None = None,
    data: str | Path | None = None,
) -> EvalPlan:
    """Evaluate ``grid``'s completed runs (they keep their weights: ``keep_weights: true``) on
    downstream ``tasks`` with lm-evaluation-harness, one row per (run, task, metric) in the
    ``evals`` view (``harness eval``); (run, task) pairs scored with the same weights are
    skipped.

    Args:
        tasks: lm-eval task, group or tag names, or those of ``include`` folders of task YAML.
        launcher: the launcher profile that runs them.
        limit: documents per task (None: all).
        wait: block until they finish (None: local ones do, SLURM returns once queued).

    Returns:
        The plan carried out (``evaluated``: pairs scored; None when queued).
    """
    from harness.data.catalogue import data_root
    from harness.grid.load import grid_name
    from harness.launch.evals import eval_grid

    return eval_grid(
        paths.results_root(results),
        grid_name(str(grid)),
        list(tasks),
        data_root=data_root(data),
        launcher=launcher,
        include=[Path(p) for p in include],
        limit=limit,
        wait=wait,
    )


@dataclass(frozen=True, slots=True)
class Prepared:
    """A prepared dataset (``harness data prepare``)."""

    path: Path
    """Its folder (``train.bin``, ``val.bin``, ``meta.json``)."""
    train_tokens: int
    """Tokens of its training split."""
    val_tokens: int
    """Tokens of its validation split."""
    vocab_size: int
    """Its tokenizer's vocabulary."""
    tokenizer: str | None
    """Its tokenizer's name (None: the user's own)."""


def prepare_data(
    name: str | None = None, *, force: bool = False, data: str | Path | None = None
) -> Prepared:
    """Build dataset ``name`` (None: the default dataset) from text shipped in packages, unless
    it is prepared already (``force``: rebuild)."""
    from harness.data.batches import TokenData
    from harness.data.catalogue import DEFAULT_DATASET, data_root
    from harness.data.prepare import prepare

    path = prepare(name or DEFAULT_DATASET, data_root(data), force=force)
    tokens = TokenData(path)
    tokenizer = tokens.meta.get("tokenizer")
    return Prepared(
        path,
        len(tokens.train),
        len(tokens.val),
        tokens.vocab_size,
        None if tokenizer is None else str(tokenizer),
    )


def datasets() -> dict[str, tuple[int, str]]:
    """The registered datasets: name -> (vocabulary size, description)."""
    from harness.data.catalogue import DATASETS

    return {name: (spec.vocab_size, spec.doc) for name, spec in DATASETS.items()}


def watch(
    grids: Sequence[str | Path],
    *,
    every_s: float = 2.0,
    once: bool = False,
    results: str | Path | None = None,
) -> list[Snapshot]:
    """A live view of ``grids`` (grid YAML paths or names), redrawn every ``every_s`` seconds
    until every planned run has its row, or once (``harness watch``); returns the last
    snapshots. Ctrl-C propagates (KeyboardInterrupt)."""
    from harness.grid.load import grid_name
    from harness.watch.live_view import watch as run_watch

    names = [grid_name(str(g)) for g in grids]
    return run_watch(paths.results_root(results), names, every_s=every_s, once=once)
