"""The ordinary grid a bench runs: a protocol and a candidate written as a grid file.

The grid is named after the protocol, so every candidate benched under one protocol writes to
the same results folder; runs are content hashes of their configs, so a baseline's runs are the
same runs for every candidate and a second bench trains only the new candidate's (skip, retry,
status, watch, report, query and SLURM arrays work as for any grid: ``harness status NAME``).
The file is written under the results root (:func:`harness.core.paths.bench_grid_path`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from harness import services
from harness.bench.protocol import Protocol
from harness.bench.shipped import find_protocol, scale_name
from harness.bench.space import LR, Arm, baseline_arm, candidate_arm
from harness.core import paths
from harness.core.errors import UserError
from harness.core.files import atomic_write_text
from harness.core.registry import is_file_reference
from harness.optim.registry import canonical_name, get_spec

if TYPE_CHECKING:
    from harness.grid.load import Grid

CANDIDATE_SUFFIX = " (candidate)"
"""Added to the candidate's label when a baseline has the same label."""


@dataclass(frozen=True, slots=True)
class Derived:
    """A protocol and a candidate as one grid."""

    protocol: Protocol
    """The protocol."""
    candidate: Arm
    """The candidate's arm."""
    baselines: tuple[Arm, ...]
    """The baselines' arms, in the protocol's order."""
    document: dict[str, Any]
    """The grid file's content."""
    path: Path
    """Where the grid file is written."""
    scale_name: str = ""
    """How output names the bench's scale (:func:`harness.bench.shipped.scale_name`: ``local
    scale``, ``protocol my.yaml``); empty: the runs' own (``full scale``)."""

    @property
    def arms(self) -> tuple[Arm, ...]:
        """Every arm, baselines first."""
        return (*self.baselines, self.candidate)


def candidate_label(name: str) -> str:
    """The candidate's arm label, however its path was typed: a module reference as it is
    (``torch.optim:SGD``), a file reference by its file's name and a short hash of its resolved
    path (``my_opt.py:MyOpt@1a2b3c4d``), so that two ``opt.py:Opt`` in different folders are two
    arms (the phases plan, and the verdict reads, each arm by its label)."""
    if not is_file_reference(name):
        return name
    module, _, attr = name.rpartition(":")
    where = hashlib.sha256(str(Path(module).resolve()).encode()).hexdigest()[:8]
    return f"{Path(module).name}:{attr}@{where}"


def slug(name: str) -> str:
    """A file-name-safe name for a candidate's grid file (``torch.optim:SGD`` ->
    ``torch.optim-SGD``; a file reference keeps its label's hash of its path, so that two
    ``opt.py:Opt`` in different folders do not share a file). A slug longer than
    :data:`SLUG_MAX` is cut and ends in a hash of ``name`` (a file name has 255 bytes at most)."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", candidate_label(name)).strip("-.") or "candidate"
    if len(text) > SLUG_MAX:
        digest = hashlib.sha256(name.encode()).hexdigest()
        text = text[: SLUG_MAX - 17].rstrip("-.") + "-" + digest[:16]
    return text


@functools.cache
def _cached_probe(
    optimizer: str, ranges: tuple[tuple[str, tuple[float, float]], ...]
) -> services.Probed:
    return services.probe_optimizer(optimizer, dict(ranges))


def _probe(optimizer: str, ranges: Mapping[str, tuple[float, float]]) -> services.Probed:
    """:func:`harness.services.probe_optimizer`, once per optimizer and ranges in a process."""
    return _cached_probe(optimizer, tuple(sorted(ranges.items())))


SLUG_MAX = 80
"""Most characters of a candidate's slug (its grid file's name, without ``.yaml``)."""


def derive(protocol: Protocol, candidate: str, root: Path, launcher: str | None = None) -> Derived:
    """The grid of ``candidate`` under ``protocol`` (module docstring).

    Args:
        protocol: the loaded protocol.
        candidate: the optimizer as the user typed it (``torch.optim:AdamW``, ``./f.py:Opt``).
        root: the results root.
        launcher: a launcher profile that overrides the protocol's.

    Raises:
        UserError: an unknown candidate, one that is a baseline, or an unequal budget.
    """
    name = canonical_name(candidate)
    get_spec(name)  # an unknown name or a broken class: one line naming it
    baselines = tuple(baseline_arm(f, protocol) for f in protocol.baselines)
    for b in baselines:
        if b.optimizer == name:
            raise UserError(
                f"candidate {candidate!r} is baseline {b.label!r} of {protocol.path}; "
                f"to bench it against itself (an A/A test) name it another way "
                f"(torch.optim:AdamW for adamw)"
            )
    label = candidate_label(name)
    if label in {b.label for b in baselines}:
        label += CANDIDATE_SUFFIX
    arm = candidate_arm(name, label, protocol, _probe)
    for b in baselines:  # equal budget, by construction: checked, not assumed
        assert b.configs == arm.configs, (b.label, b.configs, arm.configs)
    check_stamp(protocol, root)
    document = _document(protocol, (*baselines, arm), launcher)
    path = paths.bench_grid_path(root, protocol.name, slug(name))
    return Derived(protocol, arm, baselines, document, path)


STAMP = "protocol.json"
"""The file under ``<root>/<grid>/bench/`` that records what the grid's runs were planned with."""


def runs_of(protocol: Protocol) -> dict[str, Any]:
    """What in a protocol decides its runs (not its description, launcher or verdict rules),
    as plain data."""
    plain: dict[str, Any] = json.loads(
        json.dumps(
            {
                "base": dict(protocol.base),
                "cells": [[a, list(v)] for a, v in protocol.cells],
                "seeds": {"tune": protocol.tune_seeds, "confirm": protocol.confirm_seeds},
                "budget": dataclasses.asdict(protocol.budget),
                "weight_decay": protocol.weight_decay,
                "baselines": [dataclasses.asdict(b) for b in protocol.baselines],
                "candidate": dataclasses.asdict(protocol.candidate),
                **_stages_of(protocol),
            },
            sort_keys=True,
            default=str,
        )
    )
    return plain


def _stages_of(protocol: Protocol) -> dict[str, Any]:
    """The sequential stages, where the protocol has more than one (a protocol of one stage
    stamps as before they were declared)."""
    stages = protocol.stages.stages
    return {"stages": list(stages)} if len(stages) > 1 else {}


def check_stamp(protocol: Protocol, root: Path) -> None:
    """Refuse a protocol edited under the name of one whose runs its grid already holds.

    Raises:
        UserError: one line naming the protocol, what changed and the fix (a new name).
    """
    stamp = paths.grid_dir(root, protocol.name) / "bench" / STAMP
    if not stamp.is_file():
        return
    before = json.loads(stamp.read_text())
    now = runs_of(protocol)
    changed = sorted(k for k in {*before, *now} if before.get(k) != now.get(k))
    if changed:
        raise UserError(
            f"{protocol.path}: protocol {protocol.name!r} was edited ({', '.join(changed)}) "
            f"since its runs under {stamp.parent.parent} were planned; give the edited "
            f"protocol a new name (name: {protocol.name}_v2) so that its verdict reads only "
            "its own runs"
        )


def _document(protocol: Protocol, arms: tuple[Arm, ...], launcher: str | None) -> dict[str, Any]:
    budget = protocol.budget
    optimizers: dict[str, Any] = {}
    for a in arms:
        block: dict[str, Any] = {"label": [a.label], LR: list(a.lrs)}
        block |= {k: [v] for k, v in a.schedule.items()}  # its own schedule (protocol's word)
        keys = sorted({k for s in a.settings for k in s})
        if keys:
            block["zip"] = {k: [s[k] for s in a.settings] for k in keys}
        optimizers[a.optimizer] = block
    return {
        "name": protocol.name,
        "description": protocol.description or f"harness bench under {protocol.path.name}",
        "launcher": launcher or protocol.launcher,
        "base": dict(protocol.base),
        "grid": {
            **{axis: list(values) for axis, values in protocol.cells},
            "optimizer": optimizers,
        },
        "seeds": {"tune": list(protocol.tune_seeds), "confirm": list(protocol.confirm_seeds)},
        "extend": {
            "axes": [LR],
            "rounds": budget.extend_rounds,
            "bounds": {LR: [budget.lr_bounds.low, budget.lr_bounds.high]},
        },
    }


def write_grid(derived: Derived) -> Path:
    """Write the derived grid file (atomically); returns its path."""
    derived.path.parent.mkdir(parents=True, exist_ok=True)
    header = (
        f"# Derived by harness bench from {derived.protocol.path} for candidate "
        f"{derived.candidate.label}; edit the protocol, not this file.\n"
    )
    atomic_write_text(derived.path, header + yaml.safe_dump(derived.document, sort_keys=False))
    stamp = derived.path.parent / STAMP
    if not stamp.is_file():  # the first bench under this name records its protocol
        atomic_write_text(stamp, json.dumps(runs_of(derived.protocol), indent=2, sort_keys=True))
    if derived.scale_name:  # for harness status (its runs' scale field says full)
        root = derived.path.parents[2]  # paths.bench_grid_path: <root>/<grid>/bench/<file>
        named = paths.scale_name_path(root, derived.protocol.name)
        atomic_write_text(named, derived.scale_name + "\n")
    return derived.path


def grid_of(derived: Derived, data_root: Path | None = None) -> Grid:
    """The derived grid in memory (:func:`harness.services.expand` of its document, named by its
    file's path): what the phases submit and the verdict plans from, the same runs as its file
    (:func:`write_grid`, written for the user to read) but never read back from it."""
    grid = services.expand(derived.document, path=derived.path, data=data_root)
    return dataclasses.replace(grid, scale_name=derived.scale_name or None)


def phase_plan(derived: Derived, root: Path, data_root: Path | None) -> services.Plan:
    """The derived grid planned as the bench's submits plan it: its own runs, then the
    extension and confirmation runs each arm's results so far add (``extend``, ``confirm``,
    ``per_arm``: :func:`harness.services.plan`), and which have a result."""
    return services.plan(
        grid_of(derived, data_root),
        extend=True,
        confirm=True,
        per_arm=True,
        results=root,
        data=data_root,
    )


def preflight(derived: Derived, root: Path, data_root: Path) -> str:
    """Build every configuration of every arm and take one step on the CPU, as a submit does
    before it queues (:func:`harness.services.preflight`): what was checked, then each
    configuration's line.

    Raises:
        UserError: every configuration that failed, one line each.
    """
    write_grid(derived)
    planned = services.plan(grid_of(derived, data_root), results=root, data=data_root)
    return services.preflight(planned.grid.runs, str(derived.path))


def derive_bench(
    candidate: str,
    *,
    root: Path,
    scale: str | None = None,
    protocol: str | Path | None = None,
    launcher: str | None = None,
) -> Derived:
    """The grid of ``candidate`` under a protocol (:func:`harness.bench.shipped.find_protocol`,
    :func:`derive`)."""
    derived = derive(find_protocol(scale, protocol), candidate, root, launcher)
    return dataclasses.replace(derived, scale_name=scale_name(scale, protocol))
