"""The harness as a Python library: what the ``harness`` commands do, as functions.

The CLI, the example notebook (``analysis/example.ipynb``) and the study scripts
(``analysis/studies/``) call these; internal modules may move, these names stay. Each function
raises :class:`harness.core.errors.UserError` for bad input (the CLI prints it and exits 2).

Example::

    from harness import api

    api.submit("grids/adam_betas.yaml", local=True)            # train what has no result
    runs = api.plan("grids/adam_betas.yaml", local=True).run_ids  # the runs it plans today
    best = api.analyze("best", "adam_betas", by=["beta1", "beta2"])
    print(best.table, *best.notes, sep="\\n")
    api.figures("adam_betas", names=["lr_sensitivity"])         # PNG, PDF, sidecar JSON
    api.report("adam_betas", output="report.html")
    con = api.connect("adam_betas")                              # DuckDB: runs, curves, manifest
    rows = api.rows("adam_betas", metric="val_loss")              # one row per run, with value
    print(api.tuned(rows.frame, rows.goal).best)                  # each cell's selection
    top = api.query("SELECT lr, val_loss FROM runs ORDER BY val_loss LIMIT 5", "adam_betas")
    print(api.status("grids/adam_betas.yaml").text())             # runs by state

The grid's housekeeping (:func:`status`, :func:`cancel`, :func:`compact`, :func:`clean`) is in
:mod:`harness.api.grids`, SQL (:func:`query`, :func:`export`) in :mod:`harness.api.sql`, the
other commands (:func:`evaluate`, :func:`prepare_data`, :func:`datasets`, :func:`watch`) in
:mod:`harness.api.tasks`; all are names of this module.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from harness.api.grids import Status, cancel, clean, compact, status
from harness.api.sql import QUERY_FORMATS, export, query, query_text
from harness.api.sql import QueryFormat as QueryFormat  # a type, for callers' annotations
from harness.api.tasks import Prepared, datasets, evaluate, prepare_data, watch
from harness.core import paths
from harness.metrics.catalogue import DEFAULT_METRIC

if TYPE_CHECKING:
    import pandas as pd

    from harness.analysis.present.figures.render import Drawn, Rendered
    from harness.analysis.questions.answer import Answer
    from harness.analysis.rows.direction import GoalChoice
    from harness.analysis.rows.selectors import Selector
    from harness.core.config import RunConfig
    from harness.followup.rounds import Submitted
    from harness.followup.selected import Tuned as Tuned  # the type of tuned(), for callers
    from harness.grid.load import Grid
    from harness.metrics.catalogue import Goal
    from harness.store.importing import Imported
    from harness.store.reading import ReadingConnection

__all__ = [
    "QUERY_FORMATS",
    "Compute",
    "Figures",
    "Plan",
    "Prepared",
    "Rows",
    "Status",
    "analyze",
    "cancel",
    "cells",
    "clean",
    "compact",
    "connect",
    "datasets",
    "evaluate",
    "export",
    "figures",
    "import_problem",
    "import_results",
    "one_progress",
    "plan",
    "prepare_data",
    "query",
    "query_text",
    "report",
    "rows",
    "status",
    "submit",
    "text",
    "tuned",
    "watch",
]

Grids = str | Path | Sequence[str | Path] | None
"""A grid YAML path or a grid name in the results, several (arms compared across grids), or
None (every grid under the results root)."""


def _grid_args(grid: Grids) -> list[str]:
    if grid is None:
        return []
    if isinstance(grid, str | Path):
        return [str(grid)]
    return [str(g) for g in grid]


def _results(results: str | Path | None) -> str | None:
    return str(results) if results is not None else None


def connect(grid: Grids = None, *, results: str | Path | None = None) -> ReadingConnection:
    """A DuckDB connection with the views ``runs``, ``curves``, ``manifest`` and ``evals`` over
    the results of ``grid`` (as ``harness query`` reads them; confined to the results folder).
    It runs only SQL that reads, and its relations cannot be written
    (:mod:`harness.store.reading`): ``.df()`` hands the rows to pandas."""
    from harness.analysis.rows.load import views
    from harness.store.confine import Confinement
    from harness.store.reading import ReadingConnection

    how = Confinement.from_env()
    return ReadingConnection(views(_grid_args(grid) or None, results=results), how)


@dataclass(frozen=True, slots=True)
class Rows:
    """A grid's result rows as the analysis reads them (:func:`rows`)."""

    frame: pd.DataFrame
    """One row per run with a result (completed or diverged; failed runs dropped): its config
    columns, its metrics, and ``value``: ``metric`` (the worst value for a diverged run)."""
    metric: str
    """The metric in ``value`` (the one asked for, or its fallback: ``notes``)."""
    goal: Goal
    """Which direction of ``metric`` is better."""
    select_by: str
    """The metric that selects each cell's configuration (in ``select_value`` when it is not
    ``metric``)."""
    notes: tuple[str, ...] = ()
    """Why the metric is not the one asked for, for the reader."""


def rows(
    grid: Grids = None,
    *,
    results: str | Path | None = None,
    where: str | None = None,
    scale: str | None = None,
    metric: str = DEFAULT_METRIC,
    goal: GoalChoice = "auto",
    select_by: str | None = None,
) -> Rows:
    """``grid``'s result rows (``runs`` of :func:`connect`, newest attempt per run), with the
    metric chosen as ``harness analyze`` chooses it (``--metric``, ``--goal``,
    ``--select-by``) and ``value`` attached.

    Raises:
        UserError: no results (at ``scale``), a bad ``where``, a metric no run has.
    """
    from harness.analysis.rows.load import select
    from harness.analysis.rows.metric_choice import choose_metric
    from harness.analysis.rows.preparation import prepare

    df = select(_grid_args(grid), results=results, scale=scale, where=where).frame("runs")
    c = choose_metric(df, metric, goal, select_by)
    prepared = prepare(df, c.metric, c.goal, c.select_by, c.select_goal)
    return Rows(prepared.rows, c.metric, c.goal, c.select_by, c.notes)


def cells(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(cell keys, tuned columns) of result rows, as ``submit --extend``/``--confirm`` read
    them: the experiment columns that are not hyperparameters define a cell (optimizer, batch
    size, budget, ...); the hyperparameters that vary inside one are tuned."""
    from harness.followup.selected import cells as found

    return found(frame)


def tuned(
    frame: pd.DataFrame,
    goal: Goal,
    *,
    keys: Sequence[str] | None = None,
    over: Sequence[str] | None = None,
) -> Tuned:
    """Each cell's selected configuration over tuning rows (``frame``: :attr:`Rows.frame` of
    tuning runs), as ``submit --confirm`` selects it: the best per cell by the mean over seeds,
    the side of each tuned axis's searched values it sits on (``<axis>_edge``), and
    :meth:`~harness.followup.selected.Tuned.line` through it. ``keys``, ``over``: the cell
    columns and the tuned ones (None: as :func:`cells` finds them)."""
    from harness.followup.selected import select

    return select(frame, goal, keys, over)


@dataclass(frozen=True, slots=True)
class Compute:
    """The training compute of some runs, as ``harness submit --dry-run`` estimates it."""

    flops: float
    """Training FLOPs: the sum over runs of 6 x parameters x tokens."""
    gpu_hours: float
    """The same in GPU-hours on the dry run's stated device and utilisation (``device``)."""
    device: str
    """The device and utilisation ``gpu_hours`` assumes (an A100 at 40% MFU)."""
    cpu_hours: float = 0.0
    """CPU-hours on a laptop core (:func:`harness.grid.preview.cpu_hours`: an estimate)."""

    def scaled(self, factor: float) -> Compute:
        """This compute ``factor`` times over (runs of the same size added)."""
        return Compute(
            self.flops * factor, self.gpu_hours * factor, self.device, self.cpu_hours * factor
        )


@dataclass(frozen=True, slots=True)
class Plan:
    """What ``submit`` would run (``harness submit --dry-run``)."""

    grid: Grid
    """The expanded grid (its name, axes, notes, runs before follow-ups)."""
    runs: tuple[RunConfig, ...]
    """Every run planned: the grid's, then the follow-ups ``extend``/``confirm`` add."""
    lines: tuple[str, ...] = ()
    """What the follow-up planning says (edges, confirmations, why nothing is planned)."""
    done: frozenset[str] = frozenset()
    """run_ids of the grid (at its scale) with a result already (completed or diverged):
    ``submit`` skips those of ``runs``."""

    @property
    def run_ids(self) -> list[str]:
        """The planned runs' ids, in plan order."""
        return [r.run_id for r in self.runs]

    def compute(self, runs: Sequence[RunConfig] | None = None) -> Compute:
        """The training compute of ``runs`` (None: every planned run; ``plan.grid.runs``: the
        grid's own), whether or not they have a result."""
        from harness.grid.preview import ASSUMED_DEVICE, ASSUMED_MFU, compute_estimate, cpu_hours
        from harness.launch.sizes import count_params

        chosen = self.runs if runs is None else runs
        flops, hours = compute_estimate(chosen, count_params)
        device = f"{ASSUMED_DEVICE} at {ASSUMED_MFU:.0%} MFU"
        return Compute(flops, hours, device, cpu_hours(chosen, count_params))


def plan(
    grid: str | Path,
    *,
    local: bool = False,
    extend: bool = False,
    confirm: bool = False,
    per_arm: bool = False,
    results: str | Path | None = None,
    data: str | Path | None = None,
) -> Plan:
    """The runs ``submit`` would plan for ``grid`` today (writes and launches nothing): the
    grid's own (``local``: its ``local:`` overrides), then with ``extend``/``confirm`` those
    planned from the results so far (:mod:`harness.followup.planning`; ``per_arm``: each arm
    label planned on its own rows and rounds, as :func:`submit`), and which have a result."""
    from harness.data.catalogue import data_root, vocab_lookup
    from harness.followup.planning import finished, follow_up
    from harness.grid.load import load_grid

    g = load_grid(grid, vocab=vocab_lookup(data_root(_path(data))), local=local)
    root = paths.results_root(results)
    done = finished(root, g)
    if not (extend or confirm):
        return Plan(g, g.runs, done=done)
    found = follow_up(g, root, extend=extend, confirm=confirm, per_arm=per_arm)
    runs = {r.run_id: r for r in g.runs}
    runs |= {r.run_id: r for r in found.runs if r.run_id not in runs}
    return Plan(g, tuple(runs.values()), tuple(found.lines), done)


def preflight(runs: Sequence[RunConfig], where: str) -> str:
    """Build each distinct optimizer configuration of ``runs`` and take one step on the CPU, in
    a child process (:mod:`harness.launch.preflight`, as ``submit --dry-run --check``): the
    line saying what was checked, then each configuration's (what tells it from the others).

    Raises:
        UserError: every configuration that failed, one line each.
    """
    from harness.launch.preflight import outcomes, report

    return report(*outcomes(runs, where), where)


@contextlib.contextmanager
def one_progress(name: str, most: int) -> Iterator[None]:
    """Inside, every batch's progress line (``submit``'s rounds) also counts toward one whole
    of at most ``most`` runs called ``name``, with its ETA (``harness bench``: one ETA for every
    phase)."""
    from harness.launch.progress import whole

    with whole(name, most):
        yield


@dataclass(frozen=True, slots=True)
class Probed:
    """What a few steps of an optimizer on a small tensor say (:mod:`harness.launch.probe`)."""

    lr: float | None
    """Its constructor's default lr (None: none)."""
    decay: str
    """Its weight-decay convention by default: ``decoupled``, ``independent``, ``coupled`` or
    ``none``."""
    flags: Mapping[str, Mapping[bool, str]]
    """Each boolean argument that switches the decay -> value -> the convention it gives."""
    multipliers: tuple[str, ...]
    """Hyperparameters that multiply the lr (doubled: the step of the lr doubled)."""
    bounded: Mapping[str, tuple[float, float]]
    """Each range asked -> the part of it the constructor accepts."""


def probe_optimizer(optimizer: str, ranges: Mapping[str, tuple[float, float]]) -> Probed:
    """Probe ``optimizer`` (:class:`Probed`) in the preflight's child process, with ``ranges``
    (hyperparameter -> (low, high)) checked against its constructor.

    Raises:
        UserError: the probe failed (the optimizer cannot be built or stepped), in a line.
    """
    import json

    from harness.core.errors import UserError
    from harness.launch.sandbox import Limits, run_isolated

    [answer] = run_isolated(
        "harness.launch.probe:probe", [(optimizer, dict(ranges))], Limits.from_env()
    )
    try:
        got = json.loads(answer or "")
    except ValueError:
        raise UserError(f"{optimizer}: probing its steps failed: {answer}") from None
    return Probed(
        got["lr"],
        got["decay"],
        {k: {v == "True": c for v, c in m.items()} for k, m in got["flags"].items()},
        tuple(got["multipliers"]),
        {k: (float(lo), float(hi)) for k, (lo, hi) in got["bounded"].items()},
    )


def _path(value: str | Path | None) -> Path | None:
    return Path(value) if value is not None else None


def submit(
    grid: str | Path,
    *,
    local: bool = False,
    launcher: str | None = None,
    dry_run: bool = False,
    retry: Sequence[str] = (),
    stale: str = "refuse",
    wait: bool | None = None,
    plan_format: str = "table",
    check: bool = False,
    extend: bool = False,
    confirm: bool = False,
    per_arm: bool = False,
    more: Sequence[RunConfig] = (),
    results: str | Path | None = None,
    data: str | Path | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> Submitted:
    """Launch ``grid``'s runs that have no result yet, and with ``extend``/``confirm`` the
    follow-up rounds planned from their results until nothing is added (``harness submit``).

    Args:
        grid: the grid YAML.
        local: apply the grid's ``local:`` overrides and use the ``local`` launcher.
        launcher: a launcher profile name (overrides the grid's and ``local``'s).
        dry_run: print the plan (``plan_format``: table, csv or json); launch nothing.
        retry: statuses whose runs run again (never ``completed``).
        stale: runs whose result came from other code or data: ``refuse``, ``rerun``, ``keep``.
        wait: block until the runs finish (None: local runs block, SLURM returns once queued).
        check: with ``dry_run``, build each optimizer and take one CPU step (the preflight).
        extend: add the next value beyond each best on an open edge, round after round.
        confirm: train each cell's selected configuration on the confirmation seeds.
        per_arm: plan ``extend``/``confirm`` for each arm (each ``label`` of the grid's runs) on
            its own rows: its own rounds of extension, whatever runs of other labels the
            results hold (a grid file of the same name with other arms), confirmed once its own
            extension has converged; an arm with a failed tuning run plans nothing until it
            is retried (arms are compared on whole budgets). ``harness bench`` plans so.
        more: runs added to the follow-ups ``extend``/``confirm`` plan (``harness bench``'s
            sequential confirmation seeds); each is written to the grid's manifest when launched.
        results: the results root (None: ``$HARNESS_RESULTS``, then ``./results``).
        data: where datasets are prepared (None: ``$HARNESS_DATA``, then the data home).
        out: where the report goes (None: stdout); ``err``: notes beside a csv/json plan.

    Returns:
        Each round's report and the runs that failed or were lost.
    """
    from harness.data.catalogue import data_root
    from harness.followup.rounds import submit_rounds

    return submit_rounds(
        grid,
        root=paths.results_root(results),
        data_root=data_root(_path(data)),
        local=local,
        launcher=launcher,
        dry_run=dry_run,
        retry=retry,
        wait=wait,
        stale=stale,
        plan_format=plan_format,
        check=check,
        extend=extend,
        confirm=confirm,
        per_arm=per_arm,
        more=more,
        out=out or sys.stdout,
        err=err or sys.stderr,
    )


def analyze(
    question: str,
    grid: Grids = None,
    *,
    results: str | Path | None = None,
    where: str | None = None,
    scale: str | None = None,
    metric: str = DEFAULT_METRIC,
    goal: GoalChoice = "auto",
    select_by: str | None = None,
    by: Sequence[str] = (),
    over: Sequence[str] = (),
    target: float | None = None,
    curve: str | None = None,
    pool: Sequence[str] = (),
    **options: Any,
) -> Answer:
    """Answer one ``harness analyze`` question (``best``, ``gap``, ``compare``, ...) about
    ``grid``'s results: its table and the notes a reader must see with it.

    ``options`` are the question's own (``harness analyze QUESTION --help``), by keyword:
    ``a``/``b``/``baseline``/``reference`` as ``"K=V[,K=V]"`` strings or selectors, the others
    as values (``confidence=0.9``, ``tuned_mode="fit"``); an option not given takes its default.
    A ``target`` question (``targets``, ``profiles``) reads ``target``/``curve`` instead of
    ``metric``/``goal``/``select_by``/``over``. Every condition that varies (batch size, model,
    tokens, ...) is a cell unless named in ``pool`` (``--pool``: tuned over instead).
    """
    from harness.analysis.questions.query import Query
    from harness.analysis.questions.registry import QUESTIONS
    from harness.analysis.questions.target_query import TargetQuery

    q = QUESTIONS[question]  # an unknown name lists the known ones
    rows: dict[str, Any] = {
        "grid": _grid_args(grid) or None,
        "results": _results(results),
        "where": where,
        "scale": scale,
        "pool": tuple(pool),
    }
    if q.inputs == "target":  # by and over, where the question takes them, are its options
        given = {
            **options,
            **({"by": list(by)} if by else {}),
            **({"over": list(over)} if over else {}),
        }
        kw = q.keywords(given)
        return q.answerer()(TargetQuery(**rows, target=target, curve=curve), **kw)
    if target is not None:  # a tuned question's own --target (critical-batch, speedup)
        options = {**options, "target": target}
    if curve is not None:  # and --curve (speedup)
        options = {**options, "curve": curve}
    kw = q.keywords(options)
    query = Query(**rows, metric=metric, goal=goal, select_by=select_by)
    return q.answerer()(query, by=list(by), over=list(over), **kw)


def _figure_request(
    grid: Grids,
    results: str | Path | None,
    where: str | None,
    scale: str | None,
    metric: str,
    goal: GoalChoice,
    select_by: str | None,
    names: Sequence[str],
    runs: str,
    x: str | None,
    baseline: Selector | str | None,
    reference: Selector | str | None,
    target: float | None,
    curve: str | None,
    pool: Sequence[str],
) -> tuple[Any, Any, list[str], str, Any]:
    from harness.analysis.present.figures.choose import plan_figures
    from harness.analysis.present.figures.options import FigureOptions
    from harness.analysis.questions.target_query import TargetQuery, find_target
    from harness.analysis.rows.conditions import check_pool
    from harness.analysis.rows.load import select
    from harness.analysis.rows.metric_choice import choose_metric
    from harness.analysis.rows.selectors import as_selector

    args = _grid_args(grid)
    sel = select(args, results=results, scale=scale, where=where)
    choice = choose_metric(sel.frame("runs"), metric, goal, select_by)
    chosen, why = plan_figures(sel, args, list(names))
    timed = find_target(TargetQuery(args, target, curve), sel.scale)
    check_pool(sel.frame("runs"), pool)
    options = FigureOptions(
        runs=runs,
        x=x,
        baseline=as_selector(baseline, "--baseline"),
        reference=as_selector(reference, "--reference"),
        target=timed,
        pool=tuple(pool),
    )
    return sel, choice, chosen, why, options


@dataclass(frozen=True, slots=True)
class Figures:
    """What :func:`figures` drew."""

    rendered: tuple[Rendered, ...]
    """Per figure: the files written, or why it was skipped."""
    drawn: tuple[Drawn, ...]
    """With ``write=False``: the figures in memory (matplotlib), their notes and data."""
    notes: tuple[str, ...]
    """The metric's fallback, where the figure names came from, where the files went."""


def figures(
    grid: Grids = None,
    *,
    names: Sequence[str] = (),
    results: str | Path | None = None,
    where: str | None = None,
    scale: str | None = None,
    metric: str = DEFAULT_METRIC,
    goal: GoalChoice = "auto",
    select_by: str | None = None,
    runs: str = "best",
    x: str | None = None,
    baseline: Selector | str | None = None,
    reference: Selector | str | None = None,
    target: float | None = None,
    curve: str | None = None,
    write: bool = True,
    pool: Sequence[str] = (),
) -> Figures:
    """Draw ``grid``'s figures (``names``, else those the grid declares, else the defaults for
    the columns that vary): into ``results/<grid>/figures/`` as PNG, PDF and a sidecar JSON each
    (``harness figures``), or with ``write=False`` in memory only.
    """
    from harness.analysis.present.figures.render import draw_figures, render_figures

    sel, choice, chosen, why, options = _figure_request(
        grid,
        results,
        where,
        scale,
        metric,
        goal,
        select_by,
        names,
        runs,
        x,
        baseline,
        reference,
        target,
        curve,
        pool,
    )
    notes = (*choice.notes, why)
    if not write:
        return Figures((), tuple(draw_figures(sel, chosen, choice, options)), notes)
    done = render_figures(sel, chosen, choice, options)
    where_to = f"files in {paths.figures_dir(sel.root, sel.grid)}"
    return Figures(tuple(done), (), (*notes, where_to))


def report(
    grid: Grids = None,
    *,
    output: str | Path | None = None,
    names: Sequence[str] = (),
    results: str | Path | None = None,
    where: str | None = None,
    scale: str | None = None,
    metric: str = DEFAULT_METRIC,
    goal: GoalChoice = "auto",
    select_by: str | None = None,
    baseline: Selector | str | None = None,
    reference: Selector | str | None = None,
    runs: str = "all",
    pool: Sequence[str] = (),
    scale_name: str | None = None,
) -> str:
    """The self-contained HTML report of ``grid`` (``harness report``): figures, toggleable loss
    curves, the best-per-cell and gap tables, provenance. Written to ``output`` when given
    (atomically); returned either way. ``runs``: the ``loss_curves`` figure's (``all`` runs of
    each cell, or each arm's ``best``); ``scale_name``: how the page names the runs' scale
    (``harness bench``'s ``local scale``; None: ``<scale> scale``)."""
    from harness.analysis.present.figures.options import FigureOptions
    from harness.analysis.present.report import ReportRequest, build_report
    from harness.analysis.rows.selectors import as_selector
    from harness.core.files import atomic_write_text

    req = ReportRequest(
        grids=tuple(_grid_args(grid)),
        results=_results(results),
        where=where,
        scale=scale,
        metric=metric,
        goal=goal,
        select_by=select_by,
        figures=tuple(names),
        options=FigureOptions(
            runs=runs,
            baseline=as_selector(baseline, "--baseline"),
            reference=as_selector(reference, "--reference"),
            pool=tuple(pool),
            scale_name=scale_name,
        ),
    )
    html = build_report(req)
    if output is not None:
        atomic_write_text(Path(output), html)
    return html


def text(answer: Answer, fmt: str = "table") -> str:
    """``answer`` as ``harness analyze`` prints it: an aligned table (``fmt`` ``table``), CSV
    or JSON, then its notes, one ``note:`` line each."""
    from harness.analysis.present.table import render

    body, notes = render(answer, fmt)
    return "\n".join([body, *notes])


def import_results(
    csv: str | Path,
    *,
    grid: str,
    results: str | Path | None = None,
    source: str | None = None,
    scale: str = "full",
    extra: Sequence[str] = (),
    curves: str | Path | None = None,
    mapping: Mapping[str, str] | None = None,
) -> Imported:
    """Import published or external results (a CSV, one row per run or seed; ``curves``: a CSV
    of their loss curves) as rows of grid ``grid`` (``harness import``); every command then
    reads them like trained runs. ``mapping``: file column -> harness name (``--map``); W&B's
    export names are read without one."""
    from harness.store.importing import import_csv

    return import_csv(
        csv,
        grid=grid,
        root=paths.results_root(results),
        source=source,
        scale=scale,
        extra=extra,
        curves=curves,
        mapping=mapping,
    )


def import_problem(ref: str) -> str | None:
    """Import the module of a user's ``module:Name`` reference ``ref`` in the sandbox's child
    process, within the preflight's time limit: None when it loads, else the one line that says
    why not (it exited, raised or hung). Every CLI command calls it for the user's modules it
    names before it imports them itself (:func:`harness.core.registry.checked_imports`).

    Raises:
        UserError: a limit set in the environment that is not a positive number.
    """
    from harness.launch.sandbox import import_problem as in_child

    return in_child(ref)
