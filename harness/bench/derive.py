"""The ordinary grid a bench runs: a protocol and a candidate written as a grid file.

The grid is named after the protocol, so every candidate benched under one protocol writes to
the same results folder; runs are content hashes of their configs, so a baseline's runs are the
same runs for every candidate and a second bench trains only the new candidate's (skip, retry,
status, watch, report, query and SLURM arrays work as for any grid: ``harness status NAME``).
The file is written under the results root (:func:`harness.core.paths.bench_grid_path`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.bench.protocol import Protocol
from harness.bench.space import LR, Arm, baseline_arm, candidate_arm
from harness.core import paths
from harness.core.errors import UserError
from harness.core.files import atomic_write_text
from harness.core.registry import is_file_reference
from harness.optim.registry import canonical_name, get_spec

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

    @property
    def arms(self) -> tuple[Arm, ...]:
        """Every arm, baselines first."""
        return (*self.baselines, self.candidate)


def candidate_label(name: str) -> str:
    """The candidate's arm label, however its path was typed: a module reference as it is
    (``torch.optim:SGD``), a file reference by its file's name (``my_opt.py:MyOpt``)."""
    if not is_file_reference(name):
        return name
    module, _, attr = name.rpartition(":")
    return f"{Path(module).name}:{attr}"


def slug(name: str) -> str:
    """A file-name-safe name for a candidate's grid file (``torch.optim:SGD`` ->
    ``torch.optim-SGD``); a file reference also gets a hash of its absolute path, so that two
    ``opt.py:Opt`` in different folders do not share a file. A slug longer than
    :data:`SLUG_MAX` is cut and ends in a hash of ``name`` (a file name has 255 bytes at most)."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", candidate_label(name)).strip("-.") or "candidate"
    digest = hashlib.sha256(name.encode()).hexdigest()
    if is_file_reference(name):
        text += "-" + digest[:8]
    if len(text) > SLUG_MAX:
        text = text[: SLUG_MAX - 17].rstrip("-.") + "-" + digest[:16]
    return text


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
    arm = candidate_arm(name, label, protocol)
    for b in baselines:  # equal budget, by construction: checked, not assumed
        assert b.configs == arm.configs, (b.label, b.configs, arm.configs)
    document = _document(protocol, (*baselines, arm), launcher)
    path = paths.bench_grid_path(root, protocol.name, slug(name))
    return Derived(protocol, arm, baselines, document, path)


def _document(protocol: Protocol, arms: tuple[Arm, ...], launcher: str | None) -> dict[str, Any]:
    budget = protocol.budget
    optimizers: dict[str, Any] = {}
    for a in arms:
        block: dict[str, Any] = {"label": [a.label], LR: list(a.lrs)}
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
    return derived.path
