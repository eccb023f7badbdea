"""``harness eval``: finished runs' final weights evaluated on downstream tasks, through the
grid's launchers (this machine, or a SLURM array over the runs).

Everything is checked before anything runs or is written: lm-eval installed, every task known,
the launcher profile valid and able to run evaluations, and every completed run that keeps its
weights (``keep_weights``) having them, and a tokenizer for each run's dataset. A (run, task)
pair whose scores were computed from the same weights (their digest) and document limit is
skipped; the rest are handed to the backend's evaluator
(:attr:`harness.launch.profile.Backend.evaluator`), which runs :func:`evaluate_run` per run.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from harness.core import paths
from harness.core.errors import UserError
from harness.core.files import remove_stale_temps, try_locked
from harness.core.provenance import provenance
from harness.core.registry import load_object
from harness.core.result import Status
from harness.data.catalogue import resolve_dataset
from harness.data.prepare import dataset_encoder
from harness.launch.profile import LauncherProfile, backend, load_profile
from harness.store.evals import scored_with, write_scores
from harness.store.manifest import load_run, read_manifest


@dataclass(frozen=True, kw_only=True, slots=True)
class EvalSpec:
    """How one ``harness eval`` evaluates runs of one grid, whatever the backend."""

    results_root: Path
    """The results root (absolute: jobs may start elsewhere)."""
    grid: str
    """The grid whose runs are evaluated."""
    data_root: Path
    """Where the runs' datasets (and their tokenizers) are prepared (absolute)."""
    include: tuple[Path, ...] = ()
    """Folders of task YAML files besides lm-eval's own (absolute)."""
    limit: int | None = None
    """Documents per task (None: all)."""
    threads: int | None = None
    """torch CPU threads (None: torch's default)."""


@dataclass(frozen=True, slots=True)
class EvalJob:
    """One run and the tasks it is to be evaluated on."""

    run_id: str
    """The run."""
    tasks: tuple[str, ...]
    """Tasks not yet scored with its current weights."""


@dataclass(frozen=True, slots=True)
class EvalPlan:
    """What ``harness eval`` will do."""

    jobs: tuple[EvalJob, ...]
    """Runs with tasks to evaluate."""
    skipped: int
    """(run, task) pairs already scored with the same weights."""
    without_weights: tuple[str, ...] = field(default=())
    """Completed runs whose grid does not keep weights (not evaluated)."""
    evaluated: int | None = 0
    """(run, task) pairs evaluated; None: queued, on a backend that detaches (``--no-wait``)."""


def weights_digest(path: Path) -> str:
    """sha256 of a weights file (hex)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def plan_evals(
    root: Path, grid: str, tasks: Sequence[str], data_root: Path, limit: int | None = None
) -> EvalPlan:
    """The (run, task) pairs of ``grid`` to evaluate on at most ``limit`` documents per task.

    Raises:
        UserError: the grid has no completed run keeping its weights; a run that should keep
            them has none (named); a run's dataset has no tokenizer to load.
    """
    from harness.store.db import result_statuses  # DuckDB: imported when used

    remove_stale_temps([paths.evals_dir(root, grid)])  # left by an eval killed mid-write
    runs = read_manifest(root, grid)
    completed = [
        r for r, s in result_statuses(root, grid).items() if s == Status.COMPLETED and r in runs
    ]
    keeping = [r for r in completed if runs[r].execution.keep_weights]
    if not keeping:
        raise UserError(
            f"grid {grid!r}: no completed run kept its weights ({len(completed)} completed); "
            "set keep_weights: true in the grid and submit it (its runs train again, keeping them)"
        )
    missing = [r for r in keeping if not paths.weights_path(root, grid, r).is_file()]
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise UserError(
            f"grid {grid!r}: {len(missing)} completed runs that keep their weights have none "
            f"({shown}; expected {paths.weights_path(root, grid, missing[0])})"
        )
    for dataset in sorted({runs[r].data.dataset for r in keeping}):  # each has its tokenizer
        dataset_encoder(resolve_dataset(dataset, data_root))
    jobs, skipped = [], 0
    for run_id in keeping:
        digest = weights_digest(paths.weights_path(root, grid, run_id))
        todo = tuple(t for t in tasks if scored_with(root, grid, run_id, t) != (digest, limit))
        skipped += len(tasks) - len(todo)
        if todo:
            jobs.append(EvalJob(run_id, todo))
    without = tuple(r for r in completed if r not in keeping)
    return EvalPlan(tuple(jobs), skipped, without)


def evaluate_run(spec: EvalSpec, job: EvalJob, job_id: str | None = None) -> int:
    """Evaluate one run's kept weights on those of its tasks not yet scored with them (another
    process may have since), writing each task's scores as soon as they are computed, under the
    run's evaluation lock; returns the tasks written (0 when another process holds the lock)."""
    import torch

    from harness.downstream.evaluate import evaluate, load_lm

    if spec.threads:
        torch.set_num_threads(spec.threads)
    root, grid = spec.results_root, spec.grid
    lock = paths.eval_lock_path(root, grid, job.run_id)
    with try_locked(lock) as held:
        if not held:
            print(
                f"harness: run {job.run_id} is being evaluated by another process ({lock} is "
                "held): left to it",
                flush=True,
            )
            return 0
        weights = paths.weights_path(root, grid, job.run_id)
        digest = weights_digest(weights)
        todo = [
            t for t in job.tasks if scored_with(root, grid, job.run_id, t) != (digest, spec.limit)
        ]
        if not todo:
            return 0
        lm = load_lm(load_run(root, grid, job.run_id), weights, spec.data_root)
        where = provenance(job_id) | {"lm_eval_version": metadata.version("lm_eval")}
        for task in todo:
            scores = evaluate(lm, [task], spec.include, limit=spec.limit)[task]
            write_scores(root, grid, job.run_id, task, scores, digest, spec.limit, where)
            shown = ", ".join(
                f"{s.metric}={s.value:.4g}"
                for s in scores
                if s.subtask == task and s.value is not None
            )
            print(f"[{job.run_id}] {task}: {shown}", flush=True)
        return len(todo)


def evaluator_of(profile: LauncherProfile[Any]) -> Any:
    """The evaluator function of the profile's backend.

    Raises:
        UserError: the backend runs no evaluations (names the kinds that do).
    """
    from harness.launch.registry import LAUNCHERS

    made = backend(profile.kind).evaluator
    if made is None:
        able = [k for k in sorted(LAUNCHERS.names()) if backend(k).evaluator]
        raise UserError(
            f"--launcher {profile.name}: kind {profile.kind!r} cannot run evaluations; "
            f"valid kinds: {', '.join(able)}"
        )
    return load_object(made)


def eval_grid(
    root: Path,
    grid: str,
    tasks: Sequence[str],
    *,
    data_root: Path,
    launcher: str = "local",
    include: Sequence[Path] = (),
    limit: int | None = None,
    wait: bool | None = None,
) -> EvalPlan:
    """Evaluate ``grid``'s completed runs on ``tasks`` through the launcher profile ``launcher``
    (see the module docstring); returns the plan it carried out (or queued).

    Raises:
        UserError: bad input (see the module docstring); nothing was written.
    """
    from harness.downstream.tasks import check_tasks

    if limit is not None and limit < 1:
        raise UserError(f"--limit {limit}: must be at least 1")
    profile = load_profile(launcher)
    run_evals = evaluator_of(profile)
    check_tasks(tasks, include)
    if not paths.manifest_path(root, grid).is_file():
        known = ", ".join(paths.grids_in(root)) or "none"
        raise UserError(f"no results for grid {grid!r} under {root}; grids there: {known}")
    plan = plan_evals(root, grid, tasks, data_root, limit)
    spec = EvalSpec(
        results_root=root.resolve(),
        grid=grid,
        data_root=data_root.resolve(),
        include=tuple(Path(p).resolve() for p in include),
        limit=limit,
    )
    if plan.jobs:
        return dataclasses.replace(plan, evaluated=run_evals(profile, spec, plan.jobs, wait))
    return plan
