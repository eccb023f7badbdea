"""The resolved runs of a grid file, kept under the results root so that planning the same grid
again (a no-op re-submit of 100,000 runs) reads them instead of resolving every point again.

An entry is keyed by everything resolution reads: the grid file's bytes, its path, the scale
(``local``), the Python version and the source of the ``harness`` package itself (every
``.py`` file's bytes). A grid that names code outside the package (a reference such as
``./my_opt.py:Opt`` or ``torch.optim:AdamW``, an optimizer or workload registered by an
installed package) is never cached: its declaration may change without the key changing. The
vocabulary sizes resolution asked for are stored with the entry and asked again on a hit (a
dataset prepared again with another tokenizer is a miss). So an entry is never stale: anything
that could change a run changes the key, or is checked.

The entry is one file per grid, ``<root>/<grid>/.plan``, written atomically; another key
replaces it. It holds the runs (with their run_ids) and the varying axes, pickled; it is read
by an unpickler that builds nothing but ``harness`` classes and plain values, and anything it
cannot read is a miss.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import hashlib
import io
import pickle
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness
from harness.core import paths
from harness.core.config import RunConfig
from harness.core.files import atomic_write_bytes
from harness.core.provenance import source_digest
from harness.core.registry import is_reference

FORMAT = b"harness-plan-1"
"""Changes when the entry's layout changes (older entries are then misses)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """What resolving a grid's points gave: the runs, in the points' order, and the run
    fields that vary across them."""

    runs: tuple[RunConfig, ...]
    axes: tuple[str, ...]
    vocab: dict[str, int]
    """The vocabulary size of each dataset resolution asked for."""


@dataclass(frozen=True, slots=True)
class PlanCache:
    """Where grids' plans are kept (the results root). A plan made while loading a grid waits
    in ``pending`` until :meth:`save`: the caller saves once the command is past its checks (a
    refused or dry-run submit writes nothing)."""

    root: Path
    pending: list[tuple[str, bytes, Plan]] = dataclasses.field(default_factory=list)

    def path(self, grid: str) -> Path:
        """The grid's entry."""
        return paths.grid_dir(self.root, grid) / ".plan"

    def get(self, grid: str, key: bytes) -> Plan | None:
        """The entry of ``grid`` under ``key``, or None (none, another key, unreadable)."""
        try:
            data = self.path(grid).read_bytes()
        except OSError:
            return None
        head = FORMAT + key
        if not data.startswith(head):
            return None
        frozen = gc.isenabled()
        gc.disable()  # 100,000 runs: the collector would traverse them again and again
        try:
            got = _Unpickler(io.BytesIO(data[len(head) :])).load()
        except Exception:  # a damaged or foreign entry is a miss
            return None
        finally:
            if frozen:
                gc.enable()
        return got if isinstance(got, Plan) else None

    def put(self, grid: str, key: bytes, plan: Plan) -> None:
        """Keep ``plan`` as the grid's entry at the next :meth:`save`."""
        self.pending.append((grid, key, plan))

    def save(self) -> None:
        """Write the pending entries (where the disk refuses, nothing: the cache only saves
        time)."""
        while self.pending:
            grid, key, plan = self.pending.pop()
            buffer = io.BytesIO()
            _Pickler(buffer, protocol=5).dump(dataclasses.replace(plan, runs=_interned(plan.runs)))
            try:
                self.path(grid).parent.mkdir(parents=True, exist_ok=True)
                atomic_write_bytes(self.path(grid), FORMAT + key + buffer.getvalue())
            except OSError:
                pass


def key(text: bytes, path: Path, local: bool) -> bytes:
    """The 32-byte key of a grid file's plan: its bytes, where it is, the scale, the Python
    version and the ``harness`` source."""
    h = hashlib.sha256()
    for part in (
        text,
        str(path).encode(),
        str(path.parent.resolve()).encode(),
        b"local" if local else b"full",
        sys.version.encode(),
        harness.__version__.encode(),
        source_digest(),
    ):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.digest()


def names_outside_code(doc: Any) -> bool:
    """Whether no string of a grid's document references code (``module:attribute``,
    ``file.py:attribute``): only then may its plan be cached."""
    return not any(is_reference(s) for s in _strings(doc))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _interned(runs: tuple[RunConfig, ...]) -> tuple[RunConfig, ...]:
    """``runs`` with equal sections shared (seed copies share all but the seed): the entry
    stores each distinct section once, and reading it builds each once."""
    pool: dict[Any, Any] = {}
    out = []
    for run in runs:
        run_id = run.run_id
        same = dataclasses.replace(
            run,
            arch=pool.setdefault(run.arch, run.arch),
            data=pool.setdefault(run.data, run.data),
            optim=pool.setdefault(run.optim, run.optim),
            execution=pool.setdefault(run.execution, run.execution),
        )
        object.__setattr__(same, "_run_id", run_id)  # the cache field, as RunConfig fills it
        out.append(same)
    return tuple(out)


def _build(cls: type, values: tuple[Any, ...]) -> Any:
    """An instance of the dataclass ``cls`` with its fields' ``values`` (its own ``__init__``
    ran when the plan was made; dataclass pickling looks the fields up per instance, 40 us
    each, 4 s for 100,000 runs)."""
    obj: Any = object.__new__(cls)
    for name, value in zip(_field_names(cls), values, strict=True):
        object.__setattr__(obj, name, value)
    return obj


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


class _Pickler(pickle.Pickler):
    """Pickles ``harness``'s dataclasses as :func:`_build` of their field values."""

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        if dataclasses.is_dataclass(cls) and cls.__module__.startswith("harness."):
            return _build, (cls, tuple(getattr(obj, n) for n in _field_names(cls)))
        return NotImplemented


_PLAIN: frozenset[str] = frozenset()
_BUILTINS = frozenset(
    {"tuple", "list", "dict", "set", "frozenset", "int", "float", "complex", "str", "bytes", "bool"}
)


class _Unpickler(pickle.Unpickler):
    """Builds ``harness`` classes and plain values only (an entry is data, never code)."""

    def find_class(self, module: str, name: str) -> Any:
        top = module.partition(".")[0]
        plain = module in _PLAIN or (module == "builtins" and name in _BUILTINS)
        if top != "harness" and not plain:
            raise pickle.UnpicklingError(f"{module}.{name}: not a harness class or a value")
        return super().find_class(module, name)
