"""A grid's housekeeping (``harness status``, ``cancel``, ``compact``, ``clean``): each takes a
grid YAML path or a grid name in the results."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core import paths
from harness.core.errors import UserError

if TYPE_CHECKING:
    from harness.launch.contract import CancelReport, QueueView
    from harness.store.compact import CompactReport
    from harness.store.status import GridStatus
    from harness.store.tidy import Tidied


def _where(grid: str | Path, results: str | Path | None) -> tuple[Path, str]:
    """(results root, grid name) of a grid YAML path or name."""
    from harness.grid.load import grid_name

    return paths.results_root(results), grid_name(str(grid))


@dataclass(frozen=True, slots=True)
class Status:
    """A grid's runs by state (``harness status``)."""

    rows: GridStatus
    """Its planned runs by the status of their rows (``missing``: no row yet), per scale."""
    queued: tuple[QueueView, ...]
    """Each queueing backend's view of its submitted runs (SLURM: by job state)."""

    def text(self) -> str:
        """As ``harness status`` prints it: the table of counts, then a line per backend."""
        from harness.store.status import format_status

        return "\n".join([format_status(self.rows), *(v.line() for v in self.queued)])


def status(grid: str | Path, *, results: str | Path | None = None) -> Status:
    """Counts of ``grid``'s runs by state, and of its submitted runs by job state on every
    backend that queues (``harness status``).

    Example::

        print(api.status("grids/adam_betas.yaml").text())
    """
    from harness.launch.contract import queues
    from harness.store.status import grid_status

    root, name = _where(grid, results)
    views = (q.view(root, name) for q in queues().values())
    return Status(grid_status(root, name), tuple(v for v in views if v is not None))


def cancel(
    grid: str | Path, *, wait_s: float = 60.0, results: str | Path | None = None
) -> list[CancelReport]:
    """Stop ``grid``'s queued and running jobs on every backend that queues (SLURM: scancel);
    their runs get status ``cancelled`` (``harness cancel``). Checkpoints are kept.

    Args:
        wait_s: seconds to wait for running jobs to end before recording the rest.

    Raises:
        UserError: no backend has submissions of ``grid`` (names the backends asked).
    """
    from harness.launch.contract import queues

    root, name = _where(grid, results)
    found = queues()
    reports = [r for q in found.values() if (r := q.cancel(root, name, wait_s)) is not None]
    if not reports:
        raise UserError(
            f"grid {name!r} has no queued submissions under {root} (backends "
            f"asked: {', '.join(found)}); nothing to cancel"
        )
    return reports


def compact(grid: str | Path, *, results: str | Path | None = None) -> CompactReport:
    """Merge ``grid``'s per-run rows and curves into consolidated Parquet files, keeping every
    row (``harness compact``); waits for another compaction of it."""
    from harness.store.compact import compact as compact_grid

    report = compact_grid(*_where(grid, results))
    assert report is not None  # None only without waiting (wait=False)
    return report


def clean(grid: str | Path, *, results: str | Path | None = None) -> Tidied:
    """Tidy ``grid``'s folder (``harness clean``): lock files no process holds, logs of runs
    with a result, per-run files compactions consolidated. Results are never removed."""
    from harness.store.tidy import clean as clean_grid

    return clean_grid(*_where(grid, results))
