"""The sequential confirmation's next stage: more seeds for the comparisons still open.

Where the verdict leaves a comparison inconclusive after a stage of confirmation seeds and the
protocol has more stages (``seeds: stages``, :attr:`harness.bench.protocol.Protocol.stages`),
the verdict reads it ``pending`` at the next stage (:attr:`~harness.bench.verdict.Comparison.
stage`). :func:`next_stage` plans that stage's seeds for both arms of each such comparison: the
arm's selected configuration in the cell (its confirmation run) on each seed the stage adds.
A baseline's runs are content hashes of their configs, so a seed another candidate's bench
already ran for the same cell is reused, not trained again. The phases submit these runs and
read the verdict again (:func:`harness.bench.phases.run`), until no comparison is open.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.bench.protocol import Protocol
from harness.bench.verdict import ArmCell, Comparison, Verdict
from harness.core.catalogue import flat, with_values
from harness.core.config import RunConfig


@dataclass(frozen=True, slots=True)
class Stage:
    """The runs of the next stages of the open comparisons, and what they are."""

    runs: tuple[RunConfig, ...] = ()
    """The runs to train (both arms, each open comparison's cell, the stage's new seeds)."""
    lines: tuple[str, ...] = ()
    """One line per open comparison: its cell, the stage and its seeds."""


def waiting(c: Comparison) -> bool:
    """Whether ``c`` waits for a later stage's seeds (not for its tuning or first seeds)."""
    return c.reading == "pending" and c.stage > 0


def next_stage(protocol: Protocol, verdict: Verdict, confirmed: Sequence[RunConfig]) -> Stage:
    """The runs the open comparisons of ``verdict`` need (module docstring).

    Args:
        protocol: the bench's protocol (its stages and seeds).
        verdict: the verdict read so far.
        confirmed: the bench's confirmation runs so far (each arm's selected configuration per
            cell on the first stage's seeds, at least).
    """
    arms = {(a.label, _key(a.cell)): a for a in verdict.arms}
    runs: dict[str, RunConfig] = {}
    lines = []
    for c in verdict.comparisons:
        if not waiting(c):
            continue
        before = protocol.stages.stages[c.stage - 1]
        seeds = protocol.seeds_at(c.stage)[before:]
        for label in (verdict.candidate, c.baseline):
            arm = arms[(label, _key(c.cell))]
            first = _confirmation_run(arm, confirmed)
            for s in seeds:
                run = with_values(first, seed=s)
                runs.setdefault(run.run_id, run)
        where = ", ".join(f"{k}={v}" for k, v in c.cell.items())
        lines.append(
            f"{where}, {verdict.candidate} against {c.baseline}: inconclusive on {before} "
            f"seeds per arm; stage {c.stage + 1} of {len(protocol.stages.stages)} adds seeds "
            f"{', '.join(map(str, seeds))}"
        )
    return Stage(tuple(runs.values()), tuple(lines))


def _key(cell: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(cell.items()))


def _confirmation_run(arm: ArmCell, confirmed: Sequence[RunConfig]) -> RunConfig:
    """A confirmation run of ``arm``'s selected configuration in its cell.

    Raises:
        LookupError: none (the verdict tests only arms with confirmation rows).
    """
    for run in confirmed:
        values = flat(run)
        if values.get("label") != arm.label or not run.confirm:
            continue
        if any(values.get(k) != v for k, v in arm.cell.items()):
            continue
        if all(_close(values.get(k), x) for k, x in arm.best.items()):
            return run
    raise LookupError(f"{arm.label} in {dict(arm.cell)}: no confirmation run of its selection")


def _close(value: Any, x: float) -> bool:
    return isinstance(value, int | float) and math.isclose(float(value), x, rel_tol=1e-9)
