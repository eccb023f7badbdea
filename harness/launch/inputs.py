"""What a result depends on beyond its config: the code of its optimizers and model, and the
contents of its data. A row records their fingerprints; ``submit`` compares them with today's
before it skips a run as done, so that a result whose inputs changed never passes as current.

Code fingerprints cover the code an optimizer class (or a model builder) runs: the class, its
bases, and the module-level code they name (:mod:`harness.core.codegrain` says exactly what),
ignoring comments, docstrings and formatting; a row recorded when they covered whole files
(:func:`harness.core.provenance.code_fingerprint`) is current while its files are unchanged. A
dataset's covers what decides its tokens (:mod:`harness.data.fingerprint`, which says what it
covers; a row of an earlier version that recorded the legacy form is recognised).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.core.provenance import (
    INPUTS,
    STALE_INPUTS,
    class_fingerprint,
    code_fingerprint,
    distribution_version,
)
from harness.core.registry import load_object
from harness.data.catalogue import resolve_dataset
from harness.data.fingerprint import Fingerprints, fingerprints
from harness.model.build import model_code
from harness.optim.registry import get_spec
from harness.workloads.registry import get_workload

COMPARED = STALE_INPUTS
"""The inputs whose change makes a result stale (:data:`harness.core.provenance.STALE_INPUTS`)."""
FILE_GRAINED = ("optimizer_fingerprint", "model_fingerprint")
"""The code fingerprints earlier versions recorded over whole files."""
STALE_CHOICES = ("refuse", "rerun", "keep")
"""What ``submit --stale`` does with runs whose inputs changed since their row was written."""


def _optimizer_inputs(names: tuple[str, ...]) -> tuple[str, str | None, str]:
    classes = [get_spec(n).load() for n in names]
    source = " + ".join(get_spec(n).cls for n in names)
    versions = {v for c in classes if (v := distribution_version(c))}
    return source, ", ".join(sorted(versions)) or None, class_fingerprint(classes)


def _model_code(run: RunConfig) -> object:
    """The code that builds the run's model: the GPT class, a user's builder, or the workload's
    class (its data and loss too: a workload is one class)."""
    if run.arch.workload is not None:
        return load_object(get_workload(run.arch.workload).cls)
    return model_code(run.arch)


class Inputs:
    """Reads runs' inputs as they are now (the files on disk), each distinct optimizer, model
    and dataset once per reader: make one per check, not one per process."""

    def __init__(self, data_root: Path) -> None:
        self.data_root = data_root
        self._optimizers: dict[tuple[str, ...], tuple[str, str | None, str]] = {}
        self._models: dict[str, str] = {}
        self._data: dict[str, Fingerprints] = {}
        self._file_grained: dict[tuple[tuple[str, ...], str], dict[str, str]] = {}

    def of(self, run: RunConfig) -> dict[str, str | None]:
        """The run's input columns (``harness.core.provenance.INPUTS``); imports its optimizer
        and model code."""
        names = tuple(n for n in (run.optim.optimizer, run.optim.embedding_optimizer) if n)
        if names not in self._optimizers:
            self._optimizers[names] = _optimizer_inputs(names)
        source, version, optimizer = self._optimizers[names]
        model, dataset = run.arch.model, run.data.dataset
        if model not in self._models:
            self._models[model] = class_fingerprint([_model_code(run)])
        if run.arch.workload is None and dataset not in self._data:
            self._data[dataset] = fingerprints(resolve_dataset(dataset, self.data_root))
        data = self._data[dataset].current if run.arch.workload is None else None
        out = {
            "optimizer_source": source,
            "optimizer_version": version,
            "optimizer_fingerprint": optimizer,
            "model_fingerprint": self._models[model],
            "data_fingerprint": data,
        }
        assert out.keys() == INPUTS.keys()
        return out

    def unchanged(self, run: RunConfig, column: str, recorded: str) -> bool:
        """Whether the input ``column`` of ``run`` is today what a row recorded (a dataset's
        legacy fingerprint, and code fingerprints of whole files, recorded by earlier versions,
        count too)."""
        now = self.of(run)[column]
        if recorded == now:
            return True
        if column == "data_fingerprint" and run.arch.workload is None:
            return self._data[run.data.dataset].matches(recorded)
        return column in FILE_GRAINED and recorded == self.file_grained(run)[column]

    def file_grained(self, run: RunConfig) -> dict[str, str]:
        """The optimizer and model fingerprints as rows recorded them when they covered whole
        files (before :func:`~harness.core.provenance.class_fingerprint`)."""
        names = tuple(n for n in (run.optim.optimizer, run.optim.embedding_optimizer) if n)
        key = (names, run.arch.workload or run.arch.model)
        found = self._file_grained.get(key)
        if found is None:  # once per optimizer and model: it reads and hashes their files
            found = {
                "optimizer_fingerprint": code_fingerprint([get_spec(n).load() for n in names]),
                "model_fingerprint": code_fingerprint([_model_code(run)]),
            }
            self._file_grained[key] = found
        return found


def inputs_of(run: RunConfig, data_root: Path) -> dict[str, str | None]:
    """The input columns of one run as of now."""
    return Inputs(data_root).of(run)


@dataclass(frozen=True, slots=True)
class Stale:
    """A run whose row was computed from other inputs than today's."""

    run_id: str
    """The run."""
    changed: tuple[str, ...]
    """Which inputs differ (``optimizer_fingerprint``, ...)."""


def stale_runs(
    runs: Sequence[RunConfig], recorded: Mapping[str, Mapping[str, str | None]], data_root: Path
) -> list[Stale]:
    """The runs among ``runs`` whose recorded inputs (run_id -> column -> value, from their
    newest rows) differ from today's. A row that recorded no inputs (written before inputs were
    recorded) is trusted."""
    out = []
    reader = Inputs(data_root)
    for run in runs:
        row = recorded.get(run.run_id)
        if not row or all(row.get(c) is None for c in COMPARED):
            continue
        kept = {c: v for c in COMPARED if (v := row.get(c)) is not None}
        changed = tuple(c for c, v in kept.items() if not reader.unchanged(run, c, v))
        if changed:
            out.append(Stale(run.run_id, changed))
    return out


def stale_error(grid: str, stale: Sequence[Stale]) -> UserError:
    """The one-line refusal naming how many runs are stale, why, and the two explicit choices."""
    why = sorted({c.removesuffix("_fingerprint") for s in stale for c in s.changed})
    return UserError(
        f"{len(stale)} run(s) of {grid!r} have results computed with other {'/'.join(why)} "
        f"{'code' if 'data' not in why else 'inputs'} than today's (e.g. {stale[0].run_id}); "
        "train them again with --stale rerun, or keep their results with --stale keep"
    )
