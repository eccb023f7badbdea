"""The bench's phases, run as ordinary submits: tune (with edge extension), then confirm.

Each round is ``launch.submit`` of the derived grid with the runs the arms' follow-ups add
(:mod:`harness.bench.followups`: extension, then confirmation, arm by arm): runs with a result are
skipped, so a baseline's runs trained by an earlier bench are never trained again, and a
command run again after a stop goes on where it stopped. Locally the rounds run to the end; on
SLURM they run to the end with ``wait=True``, else the command returns once a round is queued
(run it again once it finishes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from harness.bench.derive import Derived, write_grid
from harness.core import paths
from harness.core.config import RunConfig
from harness.core.result import RESULT_STATUSES
from harness.data.catalogue import vocab_lookup
from harness.grid.load import Grid, load_grid


@dataclass(frozen=True, slots=True)
class ArmPlan:
    """What one arm's phases hold."""

    label: str
    """The arm."""
    candidate: bool
    """Whether it is the candidate."""
    tuning: int
    """Tuning runs of the grid's own (before extension)."""
    tuning_done: int
    """Of them, runs with a result already (shared with an earlier bench)."""
    followups_done: int
    """Extension and confirmation runs with a result already."""


@dataclass(frozen=True, slots=True)
class Plan:
    """The bench's plan: runs per phase and arm, and their compute."""

    grid: str
    """The grid's name (``harness status NAME``)."""
    grid_path: Path
    """The derived grid file."""
    arms: tuple[ArmPlan, ...]
    """Per arm."""
    cells: int
    """Cells (batch sizes x budgets)."""
    configs: int
    """Configurations per arm per cell (before extension)."""
    tune_seeds: int
    """Seeds per configuration."""
    confirm_seeds: int
    """Confirmation seeds per arm per cell."""
    extend_rounds: int
    """Most extension rounds."""
    flops: float
    """Training FLOPs of the most runs the phases can hold (6 x params x tokens)."""
    gpu_hours: float
    """The same in A100 hours at the preview's stated utilisation."""

    @property
    def extension_max(self) -> int:
        """Most extension runs: one lr step per arm, cell, round and tuning seed."""
        return self.extend_rounds * self.cells * len(self.arms) * self.tune_seeds

    @property
    def confirmation(self) -> int:
        """Confirmation runs: each arm's selected configuration per cell on each seed."""
        return self.cells * len(self.arms) * self.confirm_seeds

    @property
    def total_max(self) -> int:
        """Most runs of every phase together."""
        return sum(a.tuning for a in self.arms) + self.extension_max + self.confirmation

    @property
    def to_train_max(self) -> int:
        """Most runs still to train (those with a result are skipped)."""
        done = sum(a.tuning_done + a.followups_done for a in self.arms)
        return self.total_max - done


def load(derived: Derived, data_root: Path) -> Grid:
    """The derived grid, written and loaded as ``harness submit`` loads grids."""
    return load_grid(write_grid(derived), vocab=vocab_lookup(data_root))


def _results(root: Path, grid: str) -> set[str]:
    """run_ids of ``grid`` with a result (completed or diverged)."""
    if not paths.grid_dir(root, grid).is_dir():
        return set()
    from harness.store.db import newest_values

    rows = newest_values(root, grid, ["status"])
    return {r for r, v in rows.items() if v[0] in RESULT_STATUSES}


def _followups(root: Path, grid: Grid) -> list[RunConfig]:
    """Extension and confirmation runs earlier rounds added (the manifest's)."""
    if not paths.manifest_path(root, grid.name).exists():
        return []
    from harness.store.manifest import read_manifest

    return [r for r in read_manifest(root, grid.name).values() if r.extend_round or r.confirm]


def plan(derived: Derived, root: Path, data_root: Path) -> Plan:
    """What the bench of ``derived`` will run, and what earlier benches already ran."""
    from harness.grid.preview import compute_estimate
    from harness.launch.sizes import count_params

    grid = load(derived, data_root)
    done = _results(root, grid.name)
    added = _followups(root, grid)
    arms = []
    for arm in derived.arms:
        own = [r for r in grid.runs if r.label == arm.label]
        more = [r for r in added if r.label == arm.label]
        arms.append(ArmPlan(
            arm.label, arm.candidate, len(own), sum(r.run_id in done for r in own),
            sum(r.run_id in done for r in more),
        ))  # fmt: skip
    p = derived.protocol
    n_cells = 1
    for _, values in p.cells:
        n_cells *= len(values)
    # the compute of the most runs: each tuning run's, scaled by the runs the phases can add
    flops, _ = compute_estimate(grid.runs, count_params)
    scale = 1 + (p.budget.extend_rounds + len(p.confirm_seeds) / len(p.tune_seeds)) / max(
        derived.candidate.configs, 1
    )
    from harness.grid.preview import ASSUMED_MFU, ASSUMED_PEAK_FLOPS

    most = flops * scale
    return Plan(
        grid.name, derived.path, tuple(arms), n_cells, derived.candidate.configs,
        len(p.tune_seeds), len(p.confirm_seeds), p.budget.extend_rounds, most,
        most / (ASSUMED_MFU * ASSUMED_PEAK_FLOPS) / 3600.0,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Progress:
    """Where the phases stand after :func:`run`."""

    finished: bool
    """Every phase ran to the end (nothing left to plan or train)."""
    queued: bool
    """Runs are queued on a backend that returned without waiting (run the bench again)."""
    faults: int
    """Runs that failed or were lost."""
    trained: int
    """Runs trained (or queued) by this call."""


def run(
    derived: Derived,
    *,
    root: Path,
    data_root: Path,
    launcher: str | None,
    wait: bool | None,
    say: Callable[[str], None],
    out: TextIO,
) -> Progress:
    """Run the bench's phases (module docstring); ``say`` prints the plan's lines, ``out``
    takes ``submit``'s own report."""
    from harness.bench.followups import plan_followups
    from harness.launch.submit import submit

    path = write_grid(derived)
    labels = [a.label for a in derived.arms]

    def more(g: Grid) -> tuple[RunConfig, ...]:
        found = plan_followups(g, root, labels)
        for line in found.lines:
            say(f"{g.name}: {line}")
        return found.runs

    faults = trained = 0
    while True:
        report = submit(path, root=root, data_root=data_root, launcher=launcher, wait=wait,
                        more=more, out=out)  # fmt: skip
        faults += report.faults
        trained += report.launched
        if not report.launched:
            return Progress(True, False, faults, trained)
        if not report.statuses:  # queued on a backend that detaches
            return Progress(False, True, faults, trained)
