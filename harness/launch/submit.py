"""``submit``: expand a grid, record its manifest, and launch the runs that have no result yet.

Everything that can be wrong with the user's input is checked before anything is written;
re-submitting a grid launches nothing that already has a result (``retry`` names the failure
states to run again). Every backend is driven through the same contract
(:class:`~harness.launch.contract.Launcher`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from harness.core import env, paths
from harness.core.config import RunConfig
from harness.core.errors import UserError, unknown_choice
from harness.core.files import remove_stale_temps
from harness.core.result import RESULT_STATUSES, STATUSES, Status
from harness.data.catalogue import vocab_lookup
from harness.grid import preview
from harness.grid.branches import dependency_order
from harness.grid.load import Grid, GridRefused, load_grid
from harness.grid.plans import PlanCache
from harness.launch import branching
from harness.launch.contract import ExecutionSpec, Launcher, launcher_for, queued_anywhere
from harness.launch.inputs import COMPARED, STALE_CHOICES, stale_error, stale_runs
from harness.launch.moved import moved_ids
from harness.launch.preflight import outcomes, preflight
from harness.launch.preflight import problems as preflight_problems
from harness.launch.preflight import report as preflight_report
from harness.launch.profile import LauncherProfile, load_profile
from harness.launch.sizes import count_params


@dataclass(frozen=True, slots=True)
class SubmitReport:
    """What ``submit`` did."""

    grid: str
    """The grid's name."""
    planned: int
    """Runs in the (expanded) grid."""
    skipped: int
    """Runs not launched because they already have a result (or are queued)."""
    launched: int
    """Runs handed to the launcher."""
    statuses: dict[str, str]
    """run_id -> status of runs that finished while submit waited."""
    lost: tuple[str, ...] = ()
    """Runs submit waited for that ended without a row (their process or job vanished)."""
    waited: bool = False
    """Whether submit waited for the launched runs to end (trained here, or by another process
    that held their run locks: then they are not in ``statuses``)."""

    @property
    def faults(self) -> int:
        """Runs that failed (a status other than ``completed`` or ``diverged``) or were lost:
        ``submit`` exits 1 when there is any."""
        bad = [s for s in self.statuses.values() if s not in RESULT_STATUSES]
        return len(bad) + len(self.lost)


def choose_profile(grid: Grid, local: bool, launcher: str | None) -> LauncherProfile[Any]:
    """``--launcher`` > ``local`` for ``--local`` > the grid's own launcher."""
    name = launcher or ("local" if local else grid.launcher)
    if name is None:
        raise UserError(f"{grid.path}: no launcher; give --launcher NAME or set 'launcher:'")
    try:
        return load_profile(name)
    except UserError as e:
        where = "--launcher" if launcher else f"{grid.path}: launcher"
        raise UserError(f"{where}: {e}") from None


def check_figures(grid: Grid, figure_names: Collection[str]) -> None:
    """Every figure the grid declares is one of ``figure_names``."""
    for name in grid.figures:
        if name not in figure_names:
            raise unknown_choice("figure", name, figure_names, where=f"{grid.path}: figures")


def check_data(grid: Grid, data_root: Path) -> None:
    """Prepare each dataset the grid uses (registered ones on first use) and check that it holds
    every run's evaluation windows, so that no run fails at its end for want of held-out text."""
    from harness.data.batches import TokenData
    from harness.data.prepare import ensure_prepared

    for dataset in sorted({r.data.dataset for r in grid.runs if r.arch.workload is None}):
        data = TokenData(ensure_prepared(dataset, data_root))
        windows = {
            (r.data.seq_len, r.data.eval_tokens) for r in grid.runs if r.data.dataset == dataset
        }
        for seq_len, eval_tokens in sorted(windows):
            try:
                data.eval_windows(eval_tokens, seq_len)
            except UserError as e:
                raise UserError(f"{grid.path}: dataset {dataset}: {e}") from None


def _done(
    grid: Grid, spec: ExecutionSpec, retry: Collection[str], stale: str, out: TextIO
) -> set[str]:
    """The runs with a result to keep: a row whose status is not retried and whose inputs are
    today's (or ``stale`` says to keep it).

    Raises:
        UserError: ``stale`` is ``refuse`` and some results were computed from other inputs.
    """
    from harness.store.db import newest_values  # DuckDB: not needed by a dry run

    rows = newest_values(spec.results_root, grid.name, ["status", *COMPARED])
    renamed = _renamed(spec.results_root, grid, set(rows))  # once: it reads the manifest
    rows = {renamed.get(r, r): v for r, v in rows.items()}
    done = {r for r, v in rows.items() if v[0] not in retry}
    recorded = {r: dict(zip(COMPARED, v[1:], strict=True)) for r, v in rows.items() if r in done}
    old = stale_runs([r for r in grid.runs if r.run_id in done], recorded, spec.data_root)
    if old and stale == "refuse":
        raise stale_error(grid.name, old)
    if old:
        verb = "re-running" if stale == "rerun" else "keeping"
        out.write(f"{grid.name}: {len(old)} results computed from other inputs; {verb} them\n")
    return done - {s.run_id for s in old} if stale == "rerun" else done


def _renamed(root: Path, grid: Grid, with_rows: Collection[str]) -> dict[str, str]:
    """Old run_id -> today's, for results written when a file reference entered run_id by its
    absolute path (the manifest holds their configs; :mod:`harness.launch.moved`). Only runs
    among ``with_rows`` (those with a row) that are not today's can have been renamed: only
    their configs are read from the manifest, so a grid whose rows are all today's costs no
    parsing."""
    from harness.store.manifest import read_manifest

    today = {r.run_id for r in grid.runs}
    old = [r for r in with_rows if r not in today]
    if not old:
        return {}
    try:
        planned = read_manifest(root, grid.name, only=old)
    except UserError:  # no manifest yet
        return {}
    return moved_ids(planned, grid.runs)


def submit(
    grid_path: str | Path | Grid,
    *,
    root: Path,
    data_root: Path,
    local: bool = False,
    launcher: str | None = None,
    dry_run: bool = False,
    retry: Collection[str] = (),
    wait: bool | None = None,
    stale: str = "refuse",
    figure_names: Collection[str] | None = None,
    plan_format: str = "table",
    check: bool = False,
    more: Callable[[Grid], Sequence[RunConfig]] | None = None,
    out: TextIO,
) -> SubmitReport:
    """Expand ``grid_path`` and launch its runs that have no result yet (see module doc).

    Args:
        grid_path: the grid YAML, or a grid expanded in memory
            (:func:`harness.grid.load.expand_grid`: submitted as it is, at its scale).
        root: the results root.
        data_root: where registered datasets are prepared.
        local: apply the grid's ``local:`` overrides and use the ``local`` launcher.
        launcher: a launcher profile name (overrides the grid's and ``local``'s).
        dry_run: print the plan; write and launch nothing.
        retry: statuses whose runs are launched again (never ``completed``).
        wait: block until the runs finish; None: the backend's way (local runs block, SLURM
            returns once queued). False with a backend that does not detach is an error.
        stale: what to do with runs whose result was computed from other inputs (optimizer or
            model code, data) than today's: ``refuse`` (an error naming them), ``rerun`` or
            ``keep`` (see :mod:`harness.launch.inputs`).
        figure_names: the valid figure names, to check the grid's ``figures:`` (None: skip).
        plan_format: what a dry run prints: ``table`` (count, preview, compute, the launcher's
            plan) or every run's resolved config as ``csv`` or ``json``.
        check: with ``dry_run``, also run the preflight (:mod:`harness.launch.preflight`), which
            a real submit always runs before queuing.
        out: where the report goes.
    """
    if stale not in STALE_CHOICES:
        raise unknown_choice("--stale", stale, STALE_CHOICES)
    if plan_format not in preview.PLAN_FORMATS:
        raise UserError(f"--format {plan_format!r}: valid: {', '.join(preview.PLAN_FORMATS)}")
    if plan_format != "table" and not dry_run:
        raise UserError(f"--format {plan_format} prints the plan of a --dry-run; add --dry-run")
    bad = set(retry) - set(STATUSES)
    if bad:
        raise UserError(f"--retry: unknown state(s) {sorted(bad)}; valid: {', '.join(STATUSES)}")
    if Status.COMPLETED in retry:
        raise UserError("--retry completed: completed runs are never run again")
    plans: PlanCache | None = None  # a grid in memory has no file to key its plan by
    if isinstance(grid_path, Grid):
        grid = grid_path
    else:
        grid, plans = _load(grid_path, root, data_root, local, preflights=check or not dry_run)
    if figure_names is not None:
        check_figures(grid, figure_names)
    profile = choose_profile(grid, local, launcher)
    runner: Launcher = launcher_for(profile)
    if wait is False and not runner.detaches:
        raise UserError(
            f"--no-wait: launcher {profile.name!r} runs the runs as children of this process "
            "and waits for them; use a SLURM launcher to queue runs and return"
        )
    spec = ExecutionSpec.build(profile, root, grid.name, data_root)
    if more is not None:
        grid = _with_runs(grid, more(grid))
    if dry_run and check:
        where = str(grid.path)
        out.write(f"preflight: {preflight_report(*outcomes(grid.runs, where), where)}\n")
    if dry_run and plan_format != "table":
        out.write(preview.plan_text(grid.runs, plan_format) + "\n")
        return SubmitReport(grid.name, len(grid.runs), 0, 0, {})
    if dry_run:
        out.write(preview.describe(grid.runs, grid.axes, count_params) + "\n")
        out.writelines(f"note: {note}\n" for note in grid.notes)
        out.write(runner.plan(grid.runs) + "\n")
        out.write(branching.plan_for(grid, profile).describe())
        return SubmitReport(grid.name, len(grid.runs), 0, 0, {})
    return _launch(grid, runner, spec, retry, stale, wait, out, plans)


def _load(
    path: str | Path, root: Path, data_root: Path, local: bool, *, preflights: bool
) -> tuple[Grid, PlanCache]:
    """The grid file ``path`` expanded (its plan cache beside it, saved with the manifest: a dry
    run writes nothing). A refused grid's runs that resolved are preflighted too where the
    submit would preflight them (``preflights``): one refusal says every problem."""
    plans = PlanCache(root)
    try:
        return load_grid(path, vocab=vocab_lookup(data_root), local=local, cache=plans), plans
    except GridRefused as refused:
        if not refused.runs or not preflights:
            raise
        found, _ = preflight_problems(refused.runs, str(path))
        raise refused.adding([f"preflight: {p}" for p in found]) from None


def _with_runs(grid: Grid, extra: Sequence[RunConfig]) -> Grid:
    """``grid`` with the runs of ``extra`` it does not hold yet appended."""
    runs = {r.run_id: r for r in extra}
    for r in grid.runs:
        runs.pop(r.run_id, None)
    return dataclasses.replace(grid, runs=(*grid.runs, *runs.values()))


def _written_folders(root: Path, grid: str) -> list[Path]:
    """The folders ``atomic_write`` writes ``grid``'s files into, but the checkpoints' (a run
    removes its own temp files when it starts): the store's, and the folders backends keep
    under ``submissions/`` (SLURM's records, the local logs)."""
    own = paths.submissions_dir(root, grid)
    backends = [d for d in own.iterdir() if d.is_dir()] if own.is_dir() else []
    return [
        paths.grid_dir(root, grid),  # the manifest
        paths.runs_dir(root, grid),
        paths.curves_dir(root, grid),
        paths.compact_dir(root, grid),
        paths.figures_dir(root, grid),
        own,
        *backends,
    ]


GONE_GRACE_S = 30.0
"""Seconds a run must be in no queue and under no lock, without a row, before ``--wait`` calls
it ended: a queue's answer lags (a task that starts or ends may be missing from it a moment)."""

WAIT_POLL_S = 5.0
"""How often ``--wait`` looks at the rows and queues of runs queued by others (seconds), unless
``HARNESS_WAIT_POLL_S`` says otherwise (:func:`harness.core.env.wait_poll_s`)."""


def wait_for_others(
    root: Path,
    grid: str,
    run_ids: Collection[str],
    seen: dict[str, Any],
    out: TextIO,
    poll_s: float | None = None,
) -> tuple[dict[str, str], tuple[str, ...]]:
    """Block until each of ``run_ids`` (queued or being trained by another submit or machine)
    has a row newer than ``seen`` says, or has left every queue and every run lock without one.

    Returns:
        run_id -> status of those with a row; the run_ids that ended without one.
    """
    from harness.store.db import result_statuses
    from harness.store.rows import row_marks
    from harness.store.status import training_now

    poll = env.wait_poll_s(WAIT_POLL_S) if poll_s is None else poll_s
    pending = set(run_ids)
    out.write(
        f"{grid}: waiting for {len(pending)} runs queued or being trained by another submit "
        "(each until it has a row or has ended)\n"
    )
    out.flush()
    ended: set[str] = set()
    gone: dict[str, float] = {}  # run_id -> when it was first seen in no queue and no lock
    while pending:
        # the queues and locks before the rows: a run leaves them only once its row is written
        still = queued_anywhere(root, grid, pending) | training_now(root, grid, pending)
        marks = row_marks(root, grid)
        pending -= {r for r in pending if marks.get(r) != seen.get(r)}
        now = time.monotonic()
        for r in pending:
            if r in still:
                gone.pop(r, None)
            else:
                gone.setdefault(r, now)
        left = {r for r in pending if r in gone and now - gone[r] >= GONE_GRACE_S}
        # a run that left every queue with the row it had when this submit looked (a queue's
        # answer that lagged its task's end, or a re-run that wrote nothing new) has a row
        ended |= {r for r in left if marks.get(r) is None}
        pending -= left
        if pending:
            time.sleep(poll)
    rowed = set(run_ids) - ended
    statuses = {r: s for r, s in result_statuses(root, grid).items() if r in rowed}
    out.write(
        f"{grid}: waited for {len(rowed) + len(ended)} runs queued by another submit: "
        f"{len(rowed)} have a row, {len(ended)} ended without one\n"
    )
    return statuses, tuple(sorted(ended))


def _launch(
    grid: Grid,
    runner: Launcher,
    spec: ExecutionSpec,
    retry: Collection[str],
    stale: str,
    wait: bool | None,
    out: TextIO,
    plans: PlanCache | None = None,
) -> SubmitReport:
    from harness.store.integrity import check_grid  # DuckDB and Arrow: not for a dry run
    from harness.store.manifest import load_run, write_manifest
    from harness.store.rows import row_marks
    from harness.store.spill import recover
    from harness.store.status import training_now

    root = spec.results_root
    check_data(grid, spec.data_root)
    check_grid(root, grid.name)  # corrupt files moved aside: their runs run again
    remove_stale_temps(_written_folders(root, grid.name))  # left by writers killed mid-write
    recovered = recover(root, grid.name, lambda run_id: load_run(root, grid.name, run_id))
    if recovered:  # results of earlier submits the disk refused (their runs are in the manifest)
        out.write(f"{grid.name}: wrote {len(recovered)} results kept in spill files\n")
    runner.reconcile(root, grid.name)  # rows for runs whose job died without one
    marks = row_marks(root, grid.name)
    seen = {r.run_id: marks.get(r.run_id) for r in grid.runs}
    # The queue before the rows: a task that ends in between wrote its rows before it left the
    # queue, so each of its runs is in one set or the other (read the other way round, a run
    # could be in neither, and be queued twice). The rows are read once: a run that gets a row
    # after this read was queued or being trained (its lock held) at the queue's answer, or is
    # trained by a submit that raced this one, and whoever trains it checks under its lock that
    # its rows are still as ``seen`` says.
    queued = queued_anywhere(root, grid.name, [r.run_id for r in grid.runs])
    done = _done(grid, spec, retry, stale, out)  # refuses stale results before any write
    todo = [r for r in grid.runs if r.run_id not in done and r.run_id not in queued]
    preflight(todo, str(grid.path))  # nothing queued yet
    write_manifest(root, grid.name, grid.runs)
    if plans is not None:
        plans.save()  # the grid's resolved runs, for the next submit of the same file
    plan = branching.plan_for(grid, runner.profile)
    branching.write_plan(root, grid.name, plan)
    todo = dependency_order(todo, plan)  # a parent before the branches that start from it
    busy = training_now(root, grid.name, [r.run_id for r in todo])
    if runner.detaches:  # its runs start later, elsewhere: a run being trained is left to it
        todo = [r for r in todo if r.run_id not in busy]
    skipped = len(grid.runs) - len(todo)
    out.write(
        f"{grid.name}: {len(grid.runs)} runs planned ({grid.scale_name or f'{grid.scale} scale'}); "
        f"skipped {skipped} with a result or already queued; launching {len(todo)} "
        f"on '{runner.profile.name}'\n"
    )
    if busy and runner.detaches:
        out.write(
            f"{grid.name}: {len(busy)} of the skipped runs are being trained by another "
            "process now (their run locks are held)\n"
        )
    elif busy:
        out.write(
            f"{grid.name}: {len(busy)} runs are being trained by another process now "
            "(their run locks are held); each starts once its lock is free, unless it "
            "has a row by then\n"
        )
    waits = wait if wait is not None else not runner.detaches
    # runs queued or being trained by others (an earlier submit, another machine): an explicit
    # --wait waits for them too, whoever queued them; a local submit's own waiting (no --wait)
    # covers only what it launched (another backend's queue may hold runs for days)
    others = {r.run_id for r in grid.runs if r.run_id in queued or r.run_id in busy}
    others -= {r.run_id for r in todo}
    if wait is not True:
        others = set()
    if not todo:
        if not waits or not others:
            return SubmitReport(grid.name, len(grid.runs), skipped, 0, {})
        statuses, lost = wait_for_others(root, grid.name, others, seen, out)
        return SubmitReport(grid.name, len(grid.runs), skipped, 0, statuses, lost, waited=True)
    launched = runner.launch(todo, spec, seen)  # a run whose row changed since is not trained
    if waits:
        report = runner.wait(launched, spec)
        marks = row_marks(root, grid.name)
        lost = tuple(
            r.run_id
            for r in todo
            if r.run_id not in report.statuses and marks.get(r.run_id) == seen[r.run_id]
        )
        statuses = dict(report.statuses)
        if others:
            theirs, gone = wait_for_others(root, grid.name, others, seen, out)
            statuses |= theirs
            lost += gone
        return SubmitReport(
            grid.name, len(grid.runs), skipped, report.launched, statuses, lost, waited=True
        )
    out.write(f"follow with 'harness status {grid.name}'; stop with 'harness cancel {grid.name}'\n")
    return SubmitReport(grid.name, len(grid.runs), skipped, launched.runs, {})
