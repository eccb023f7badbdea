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
    grid = api.expand(document, path="grids/mine.yaml")          # a grid built in memory
    api.submit(grid, local=True)                                  # submitted without a file
    done = api.bench("torch.optim:SGD", scale="local")            # a whole bench
    print(done.text())                                            # its verdict per cell

This module is the facade: the services a bench composes (:func:`plan`, :func:`expand`,
:func:`submit`, :func:`preflight`, :func:`probe_optimizer`, :func:`rows`, :func:`cells`,
:func:`tuned`, :func:`report`) are defined in :mod:`harness.services` and re-exported here;
:func:`bench` and its result are :mod:`harness.bench`'s, imported when first used (the bench
loads the statistics; ``import harness.api`` stays cheap). The grid's housekeeping
(:func:`status`, :func:`cancel`, :func:`compact`, :func:`clean`) is in :mod:`harness.api.grids`,
SQL (:func:`query`, :func:`export`) in :mod:`harness.api.sql`, the other commands
(:func:`evaluate`, :func:`prepare_data`, :func:`datasets`, :func:`watch`) in
:mod:`harness.api.tasks`; all are names of this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack, cast

from harness.api.grids import Status, cancel, clean, compact, status
from harness.api.sql import QUERY_FORMATS, export, query, query_text
from harness.api.sql import QueryFormat as QueryFormat  # a type, for callers' annotations
from harness.api.tasks import Prepared, datasets, evaluate, prepare_data, watch
from harness.core import paths
from harness.services import (
    Compute,
    Grids,
    Plan,
    Probed,
    Rows,
    cells,
    expand,
    one_progress,
    plan,
    preflight,
    probe_optimizer,
    report,
    rows,
    submit,
    tuned,
)
from harness.services.args import SELECTING, Selecting, query_of
from harness.services.args import grid_args as _grid_args

if TYPE_CHECKING:
    from harness.analysis.present.figures.options import FigureOptions
    from harness.analysis.present.figures.render import Drawn, Rendered
    from harness.analysis.questions.answer import Answer
    from harness.analysis.questions.query import Query
    from harness.analysis.questions.target_query import TargetQuery
    from harness.analysis.rows.load import Selection
    from harness.analysis.rows.metric_choice import MetricChoice
    from harness.analysis.rows.selectors import Selector
    from harness.bench import DEFAULT_SCALE as BENCH_DEFAULT_SCALE
    from harness.bench import SCALES as BENCH_SCALES
    from harness.bench.render import FORMATS as BENCH_FORMATS
    from harness.bench.session import BenchResult, bench
    from harness.followup.selected import Tuned as Tuned  # the type of tuned(), for callers
    from harness.grid.load import Grid as Grid  # what expand() gives, plan() and submit() take
    from harness.store.importing import Imported
    from harness.store.reading import ReadingConnection

__all__ = [
    "BENCH_DEFAULT_SCALE",
    "BENCH_FORMATS",
    "BENCH_SCALES",
    "QUERY_FORMATS",
    "BenchResult",
    "Compute",
    "Figures",
    "Plan",
    "Prepared",
    "Probed",
    "Rows",
    "Selecting",
    "Status",
    "analyze",
    "bench",
    "cancel",
    "cells",
    "clean",
    "compact",
    "connect",
    "datasets",
    "evaluate",
    "expand",
    "export",
    "figures",
    "import_problem",
    "import_results",
    "one_progress",
    "plan",
    "preflight",
    "prepare_data",
    "probe_optimizer",
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

_BENCH: dict[str, tuple[str, str]] = {
    "bench": ("harness.bench.session", "bench"),
    "BenchResult": ("harness.bench.session", "BenchResult"),
    "BENCH_SCALES": ("harness.bench", "SCALES"),
    "BENCH_DEFAULT_SCALE": ("harness.bench", "DEFAULT_SCALE"),
    "BENCH_FORMATS": ("harness.bench.render", "FORMATS"),
}
"""Public name -> (module, name) of the bench's, imported on first use (:func:`__getattr__`)."""


def __getattr__(name: str) -> Any:
    """The bench's public ``name`` (:data:`_BENCH`), imported from its module on first use."""
    if name not in _BENCH:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _BENCH[name]
    value = getattr(import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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


def analyze(
    question: str,
    grid: Grids = None,
    *,
    by: Sequence[str] = (),
    over: Sequence[str] = (),
    target: float | None = None,
    curve: str | None = None,
    pool: Sequence[str] = (),
    **options: Any,
) -> Answer:
    """Answer one ``harness analyze`` question (``best``, ``gap``, ``compare``, ...) about
    ``grid``'s results: its table and the notes a reader must see with it.

    ``options`` are the keywords of :class:`Selecting` (``results``, ``where``, ``scale``,
    ``metric``, ``goal``, ``select_by``: which rows, which metric) and the question's own
    (``harness analyze QUESTION --help``): ``a``/``b``/``baseline``/``reference`` as
    ``"K=V[,K=V]"`` strings or selectors, the others as values (``confidence=0.9``,
    ``tuned_mode="fit"``); an option not given takes its default. A ``target`` question
    (``targets``, ``profiles``) reads ``target``/``curve`` instead of ``metric``/``goal``/
    ``select_by``/``over``. Every condition that varies (batch size, model, tokens, ...) is a
    cell unless named in ``pool`` (``--pool``: tuned over instead).
    """
    from harness.analysis.questions.registry import QUESTIONS
    from harness.analysis.questions.target_query import TargetQuery

    q = QUESTIONS[question]  # an unknown name lists the known ones
    given = {k: options.pop(k) for k in SELECTING if k in options}
    selecting = cast("Selecting", given)  # (Selecting's keys, by construction)
    query = query_of(grid, selecting, pool)
    if q.inputs == "target":  # by and over, where the question takes them, are its options
        given = {
            **options,
            **({"by": list(by)} if by else {}),
            **({"over": list(over)} if over else {}),
        }
        q_ = query
        rows = TargetQuery(q_.grid, target, curve, q_.results, q_.where, q_.scale, q_.pool)
        return q.answerer()(rows, **q.keywords(given))
    if target is not None:  # a tuned question's own --target (critical-batch, speedup)
        options = {**options, "target": target}
    if curve is not None:  # and --curve (speedup)
        options = {**options, "curve": curve}
    return q.answerer()(query, by=list(by), over=list(over), **q.keywords(options))


def _figure_request(
    query: Query,
    names: Sequence[str],
    options: FigureOptions,
    timed: TargetQuery,
) -> tuple[Selection, MetricChoice, list[str], str, FigureOptions]:
    """The rows ``query`` selects, its metric, the figures drawn (``names``, else the grid's,
    else the defaults) and why, and ``options`` with the target found in the rows."""
    import dataclasses

    from harness.analysis.present.figures.choose import plan_figures
    from harness.analysis.questions.target_query import find_target
    from harness.analysis.rows.conditions import check_pool
    from harness.analysis.rows.load import select
    from harness.analysis.rows.metric_choice import choose_metric

    sel = select(query.grid, results=query.results, scale=query.scale, where=query.where)
    choice = choose_metric(sel.frame("runs"), query.metric, query.goal, query.select_by)
    chosen, why = plan_figures(sel, query.grid or [], list(names))
    target = find_target(timed, sel.scale)
    check_pool(sel.frame("runs"), query.pool)
    return sel, choice, chosen, why, dataclasses.replace(options, target=target)


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
    runs: str = "best",
    x: str | None = None,
    baseline: Selector | str | None = None,
    reference: Selector | str | None = None,
    target: float | None = None,
    curve: str | None = None,
    write: bool = True,
    pool: Sequence[str] = (),
    **selecting: Unpack[Selecting],
) -> Figures:
    """Draw ``grid``'s figures (``names``, else those the grid declares, else the defaults for
    the columns that vary): into ``results/<grid>/figures/`` as PNG, PDF and a sidecar JSON each
    (``harness figures``), or with ``write=False`` in memory only. ``selecting``: the keywords of
    :class:`Selecting` (which rows, which metric).
    """
    from harness.analysis.present.figures.options import FigureOptions
    from harness.analysis.present.figures.render import draw_figures, render_figures
    from harness.analysis.questions.target_query import TargetQuery
    from harness.analysis.rows.selectors import as_selector

    query = query_of(grid, selecting, pool)
    options = FigureOptions(
        runs=runs,
        x=x,
        baseline=as_selector(baseline, "--baseline"),
        reference=as_selector(reference, "--reference"),
        pool=query.pool,
    )
    timed = TargetQuery(query.grid or [], target=target, curve=curve)
    sel, choice, chosen, why, options = _figure_request(query, names, options, timed)
    notes = (*choice.notes, why)
    if not write:
        return Figures((), tuple(draw_figures(sel, chosen, choice, options)), notes)
    done = render_figures(sel, chosen, choice, options)
    where_to = f"files in {paths.figures_dir(sel.root, sel.grid)}"
    return Figures(tuple(done), (), (*notes, where_to))


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
