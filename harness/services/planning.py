"""What a submit would run: a grid expanded (from its file or in memory), its plan with the
follow-ups planned from the results so far, their compute, and the preflight of their
optimizers."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core import paths
from harness.services.args import data_dir

if TYPE_CHECKING:
    from harness.core.config import RunConfig
    from harness.grid.load import Grid


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


def expand(
    document: Mapping[str, Any],
    *,
    path: str | Path,
    local: bool = False,
    data: str | Path | None = None,
) -> Grid:
    """A grid in memory: ``document`` (the mapping a grid YAML holds) expanded into its runs as
    loading a file ``path`` with that content would, without writing or reading one (``path``
    names the grid in messages; relative references such as ``./my_opt.py:MyOpt`` are found
    from its folder). :func:`plan` and :func:`submit` take the result where they take a file,
    and plan the same runs (the same run_ids): a program that builds its grid (``harness
    bench``) hands it over typed.

    Raises:
        UserError: anything wrong with the document, naming ``path``, the key and the choices.
    """
    from harness.data.catalogue import vocab_lookup
    from harness.grid.load import expand_grid

    doc = copy.deepcopy(dict(document))  # the caller's document stays as it is
    return expand_grid(doc, Path(path), vocab=vocab_lookup(data_dir(data)), local=local)


def plan(
    grid: str | Path | Grid,
    *,
    local: bool = False,
    extend: bool = False,
    confirm: bool = False,
    per_arm: bool = False,
    results: str | Path | None = None,
    data: str | Path | None = None,
) -> Plan:
    """The runs ``submit`` would plan for ``grid`` today (writes and launches nothing): the
    grid's own (a file, ``local``: its ``local:`` overrides; or a grid from :func:`expand`, as
    expanded), then with ``extend``/``confirm`` those planned from the results so far
    (:mod:`harness.followup.planning`; ``per_arm``: each arm label planned on its own rows and
    rounds, as :func:`submit`), and which have a result."""
    from harness.data.catalogue import vocab_lookup
    from harness.followup.planning import finished, follow_up
    from harness.grid.load import Grid, load_grid

    if isinstance(grid, Grid):
        g = grid
    else:
        g = load_grid(grid, vocab=vocab_lookup(data_dir(data)), local=local)
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
