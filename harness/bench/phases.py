"""The bench's phases, run as ordinary submits: tune (with edge extension), then confirm.

The phases are :func:`harness.services.submit` of the derived grid (in memory: its typed
runs, :func:`harness.bench.derive.grid_of`) with ``extend``, ``confirm`` and
``per_arm``: round after round, each arm's extension, then its confirmation, planned on its own
rows (a bench's grid is shared by every candidate benched under its protocol: each arm gets the
protocol's rounds of extension whatever earlier candidates used, and a baseline's plan, made
from the same results, is the same plan, the same runs, for every candidate). Runs with a
result are skipped, so a baseline's runs trained by an earlier bench are never trained again,
and a command run again after a stop goes on where it stopped. Locally the rounds run to the
end; on SLURM they run to the end with ``wait=True``, else the command returns once a round is
queued (run it again once it finishes).

Then the sequential confirmation (a protocol with ``seeds: stages``): the verdict is read, each
comparison it leaves inconclusive gets the next stage's seeds (:func:`harness.bench.stages.
next_stage`, both arms, that cell only), submitted with the grid's runs, and the verdict is read
again, until no comparison is open (or the stages' runs end without a result).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from harness import services
from harness.bench.derive import Derived, grid_of, phase_plan, write_grid
from harness.bench.stages import Stage, next_stage
from harness.bench.verdict import judge


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
    """Confirmation seeds per arm per cell (the first stage's)."""
    extend_rounds: int
    """Most extension rounds."""
    flops: float
    """Training FLOPs of the most runs the phases can hold (6 x params x tokens)."""
    gpu_hours: float
    """The same in GPU-hours on ``device``."""
    device: str
    """The device and utilisation ``gpu_hours`` assumes (:class:`harness.services.Compute`)."""
    cpu_hours: float = 0.0
    """The same in CPU-hours on a laptop core (an estimate: :class:`harness.api.Compute`)."""
    confirm_cap: int = 0
    """Most confirmation seeds per arm per cell, at the last stage (0: no stages beyond the
    first)."""

    @property
    def extension_max(self) -> int:
        """Most extension runs: one lr step per arm, cell, round and tuning seed."""
        return self.extend_rounds * self.cells * len(self.arms) * self.tune_seeds

    @property
    def confirmation(self) -> int:
        """Confirmation runs of the first stage: each arm's selected configuration per cell on
        each seed."""
        return self.cells * len(self.arms) * self.confirm_seeds

    @property
    def stages_max(self) -> int:
        """Most runs the later stages of the sequential confirmation add (every cell open to
        the cap)."""
        return self.cells * len(self.arms) * max(self.confirm_cap - self.confirm_seeds, 0)

    @property
    def total_max(self) -> int:
        """Most runs of every phase together."""
        tuning = sum(a.tuning for a in self.arms)
        return tuning + self.extension_max + self.confirmation + self.stages_max

    @property
    def cpu_hours_to_train(self) -> float:
        """:attr:`cpu_hours` of the runs still to train (runs of a bench are of like size)."""
        return self.cpu_hours * self.to_train_max / max(self.total_max, 1)

    @property
    def to_train_max(self) -> int:
        """Most runs still to train (those with a result are skipped)."""
        done = sum(a.tuning_done + a.followups_done for a in self.arms)
        return self.total_max - done


def plan(derived: Derived, root: Path, data_root: Path) -> Plan:
    """What the bench of ``derived`` will run, and what earlier benches already ran."""
    write_grid(derived)
    planned = phase_plan(derived, root, data_root)
    grid, done = planned.grid, planned.done
    added = [r for r in planned.runs if r.extend_round or r.confirm]
    arms = []
    for arm in derived.arms:
        own = [r for r in grid.runs if r.label == arm.label]
        more = [r for r in added if r.label == arm.label]
        arms.append(
            ArmPlan(
                arm.label,
                arm.candidate,
                len(own),
                sum(r.run_id in done for r in own),
                sum(r.run_id in done for r in more),
            )
        )
    p = derived.protocol
    n_cells = 1
    for _, values in p.cells:
        n_cells *= len(values)
    # the compute of the most runs: each tuning run's, scaled by the runs the phases can add
    cap = p.stages.cap
    scale = 1 + (p.budget.extend_rounds + cap / len(p.tune_seeds)) / max(
        derived.candidate.configs, 1
    )
    most = planned.compute(grid.runs).scaled(scale)
    return Plan(
        grid.name,
        derived.path,
        tuple(arms),
        n_cells,
        derived.candidate.configs,
        len(p.tune_seeds),
        len(p.confirm_seeds),
        p.budget.extend_rounds,
        most.flops,
        most.gpu_hours,
        most.device,
        cpu_hours=most.cpu_hours,
        confirm_cap=cap if cap > len(p.confirm_seeds) else 0,
    )


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


@dataclass(frozen=True, slots=True)
class Launching:
    """How the phases' runs are launched and reported (what ``harness bench`` was given)."""

    launcher: str | None
    """A launcher profile that overrides the protocol's (None: the protocol's)."""
    wait: bool | None
    """Block until every phase has run (None: local runs block, SLURM returns once a phase is
    queued)."""
    out: TextIO
    """Where ``submit``'s report, the plan's lines and what backends print go."""


def run(
    derived: Derived, how: Launching, *, root: Path, data_root: Path, most: int | None = None
) -> Progress:
    """Run the bench's phases (module docstring), launched as ``how`` says. ``most``: the most
    runs still to train (:attr:`Plan.to_train_max`), for one ETA of every phase on each progress
    line (None: each batch's own only)."""
    write_grid(derived)  # for the user to read; the submits take the grid in memory
    grid = grid_of(derived, data_root)

    def submit(stage: Stage) -> Progress:
        done = services.submit(
            grid,
            launcher=how.launcher,
            wait=how.wait,
            extend=True,
            confirm=True,
            per_arm=True,
            more=stage.runs,
            results=root,
            data=data_root,
            out=how.out,
            err=how.out,
        )
        finished = not done.last.launched  # the last round found nothing left to train
        return Progress(finished, done.queued, done.faults, sum(r.launched for r in done.reports))

    whole = services.one_progress("bench", most) if most is not None else contextlib.nullcontext()
    with whole:
        got = submit(Stage())
        trained, faults = got.trained, got.faults
        while got.finished and not got.queued:  # the phases ran to the end: the next stage
            stage = _next_stage(derived, root, data_root)
            if not stage.runs:
                break
            how.out.writelines(f"{derived.protocol.name}: {line}\n" for line in stage.lines)
            got = submit(stage)
            trained, faults = trained + got.trained, faults + got.faults
            if not got.trained:  # the stage's runs ended without a result: nothing more to run
                break
    return Progress(got.finished, got.queued, faults, trained)


def _next_stage(derived: Derived, root: Path, data_root: Path) -> Stage:
    """The next stage's runs of the comparisons the verdict leaves open (none without stages)."""
    if len(derived.protocol.stages.stages) == 1:
        return Stage()
    verdict = judge(derived, root, data_root)
    planned = phase_plan(derived, root, data_root)
    return next_stage(derived.protocol, verdict, [r for r in planned.runs if r.confirm])
