"""``harness watch``: a live terminal view of grids being trained, redrawn until every planned run
has its row.

It only reads the results folder (rows, manifest, live curves: :mod:`harness.store.live`), so it
works wherever that folder is mounted, beside a local ``submit`` or a SLURM one. Per grid it shows
the counts by status, the compute used against the dry-run estimate, the running runs (step,
loss, throughput, ETA), the best run so far per arm with edge flags
(:func:`harness.analysis.rows.edges.edge_note`) and a sparkline of the leading runs' losses.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from harness.analysis.rows.edges import edge_note
from harness.analysis.rows.load import progress
from harness.core.config import RunConfig
from harness.core.result import STATUSES
from harness.grid.preview import compute_estimate, cpu_hours
from harness.launch.sizes import count_params
from harness.store.live import Heartbeat, duration
from harness.store.manifest import read_manifest
from harness.store.status import grid_status

SPARKS = "▁▂▃▄▅▆▇█"
"""Sparkline levels, lowest first."""

LEADERS = 3
"""Runs whose losses get a sparkline."""


@dataclass(frozen=True, slots=True)
class ArmBest:
    """The best run so far of one arm (optimizer)."""

    arm: str
    """The optimizer, as the grid names it (a file's path shortened to its name)."""
    run_id: str
    """Its best run."""
    lr: float | None
    """That run's learning rate."""
    val_loss: float
    """That run's validation loss."""
    edge: str
    """An edge note (:func:`~harness.analysis.rows.edges.edge_note` over the arm's searched lrs)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One grid as the results folder shows it now."""

    grid: str
    """The grid's name."""
    planned: int
    """Planned runs."""
    counts: Counter[str]
    """Runs by the status of their newest row, plus ``missing`` (no row)."""
    live: tuple[Heartbeat, ...]
    """Runs with a live curve."""
    used_h: float
    """Hours trained so far (rows' wall time plus running runs' elapsed time)."""
    estimate_h: float
    """The dry run's estimate of every planned run, in the unit of ``used_h`` (GPU-hours on
    GPUs, else CPU-hours: :func:`harness.grid.preview.cpu_hours`)."""
    on_gpu: bool
    """Whether the rows were trained on GPUs (else the hours are CPU-hours)."""
    best: tuple[ArmBest, ...]
    """The best completed run per arm."""
    leaders: tuple[tuple[str, tuple[float, ...]], ...]
    """(run_id, training losses in step order) of the runs with the lowest last loss."""
    about: Mapping[str, tuple[str, str, str]] = field(default_factory=dict)
    """run_id -> (arm, lr, cell) of each live run (the cell: batch size x tokens)."""

    @property
    def finished(self) -> bool:
        """Every planned run has its row and none is training."""
        return self.counts.get("missing", 0) == 0 and not any(h.running for h in self.live)


def snapshot(root: Path, grid: str) -> Snapshot:
    """What ``grid``'s results say now."""
    status = grid_status(root, grid)
    counts: Counter[str] = Counter()
    for per_scale in status.counts.values():
        counts.update(per_scale)
    runs = read_manifest(root, grid)
    now = progress(root, grid, LEADERS)
    best = tuple(
        ArmBest(
            _arm(b.optimizer), b.run_id, b.lr, b.val_loss, edge_note("lr", b.searched_lrs, b.lr)
        )
        for b in now.best
    )
    planned = list(runs.values())
    if not planned:
        estimate = 0.0
    else:
        estimate = (
            compute_estimate(planned, count_params)[1]
            if now.on_gpu
            else cpu_hours(planned, count_params)
        )
    about = {h.run_id: _about(runs[h.run_id]) for h in status.live if h.run_id in runs}
    return Snapshot(
        grid,
        len(runs),
        counts,
        status.live,
        now.used_s / 3600.0,
        estimate,
        now.on_gpu,
        best,
        now.leaders,
        about,
    )


def _about(run: RunConfig) -> tuple[str, str, str]:
    """A live run's arm, lr and cell, as the view shows them."""
    arm = run.label or _arm(run.optim.optimizer)
    return arm, f"{run.optim.lr:.3g}", f"{run.data.batch_size}x{_short(run.data.tokens)}"


def _short(n: float) -> str:
    """``1048576`` -> ``1.05M``, ``16384`` -> ``16.4k``."""
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return f"{n:g}"


def _arm(optimizer: str) -> str:
    """``adamw``, or ``my_opt.py:Adam`` for ``/abs/path/my_opt.py:Adam``."""
    return optimizer.rsplit("/", 1)[-1]


def sparkline(values: Sequence[float], width: int = 40) -> str:
    """``values`` as block characters, the lowest ``▁``, the highest ``█`` (the last ``width``
    values; a non-finite one is ``!``)."""
    values = list(values)[-width:]
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return "!" * len(values)
    lo, hi = min(finite), max(finite)
    span = hi - lo or 1.0
    top = len(SPARKS) - 1
    return "".join(
        SPARKS[round((v - lo) / span * top)] if math.isfinite(v) else "!" for v in values
    )


def render(snaps: Sequence[Snapshot]) -> RenderableType:
    """The view of ``snaps``: one block per grid."""
    return Group(*(_grid_view(s) for s in snaps))


def _grid_view(s: Snapshot) -> RenderableType:
    done = s.planned - s.counts.get("missing", 0)
    head = Text(f"grid {s.grid}: {done}/{s.planned} runs with a row", style="bold")
    counts = Table(box=None, pad_edge=False)
    states = [st for st in [*STATUSES, "missing"] if s.counts.get(st)]
    running = sum(h.running for h in s.live)
    for st in [*states, "running"]:
        counts.add_column(st, justify="right")
    counts.add_row(*(str(s.counts[st]) for st in states), str(running))
    unit = "GPU" if s.on_gpu else "CPU"
    how = "dry run" if s.on_gpu else "dry run's per-run CPU cost"
    hours = Text(
        f"{unit}-hours used {s.used_h:.3g} of an estimated {s.estimate_h:.3g} {unit}-hours ({how})"
    )
    parts: list[RenderableType] = [head, counts, hours]
    if s.live:
        live = Table(title="live runs", title_justify="left", box=None)
        live.add_column("run", no_wrap=True, min_width=16)  # a run_id whole
        for col in ("arm", "lr", "cell", "state", "step", "loss", "tok/s", "ETA"):
            live.add_column(col)
        for h in s.live:
            eta = duration(h.eta_s) if h.eta_s is not None and h.running else "?"
            rate = f"{h.tokens_per_s:,.0f}" if h.tokens_per_s else "?"
            live.add_row(
                h.run_id,
                *s.about.get(h.run_id, ("?", "?", "?")),
                "running" if h.running else "stopped",
                f"{h.step}/{h.steps}",
                f"{h.loss:.4f}",
                rate,
                eta,
            )
        parts.append(live)
    if s.best:
        best = Table(title="best so far per arm", title_justify="left", box=None)
        for col in ("arm", "lr", "val_loss", "run", "edge"):
            best.add_column(col)
        for b in s.best:
            lr = f"{b.lr:.3g}" if b.lr is not None else "-"
            edge = Text(b.edge or "-", style="yellow" if b.edge else "")
            best.add_row(b.arm, lr, f"{b.val_loss:.4f}", b.run_id, edge)
        parts.append(best)
    if s.leaders:
        lead = Table(title="leading runs: training loss", title_justify="left", box=None)
        for col in ("run", "loss", "curve"):
            lead.add_column(col)
        for run_id, losses in s.leaders:
            lead.add_row(run_id, f"{losses[-1]:.4f}", sparkline(losses))
        parts.append(lead)
    return Group(*parts, Text(""))


def watch(
    root: Path,
    grids: Sequence[str],
    *,
    every_s: float = 2.0,
    once: bool = False,
    console: Console | None = None,
) -> list[Snapshot]:
    """Redraw the view of ``grids`` every ``every_s`` seconds until every planned run has its
    row (or once, with ``once``); returns the last snapshots. Ctrl-C propagates
    (KeyboardInterrupt) after the last view is left on the screen."""
    console = console or Console()
    snaps = [snapshot(root, g) for g in grids]
    if once:
        console.print(render(snaps))
        return snaps
    with Live(render(snaps), console=console, auto_refresh=False) as live:
        while not all(s.finished for s in snaps):
            time.sleep(every_s)
            snaps = [snapshot(root, g) for g in grids]
            live.update(render(snaps), refresh=True)
    return snaps
