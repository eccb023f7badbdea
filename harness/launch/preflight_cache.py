"""Preflight configurations that passed, remembered on this machine, so that a configuration of
the harness's own code is built and stepped once, not once per ``submit`` (a child process that
imports torch: about 5 s of CPU per submit; the extension rounds and phases of ``bench`` submit
the same configurations again and again).

Only a configuration whose every part is the harness's own code is remembered: built-in
optimizers (no ``module:Class`` reference, no optimizer an installed package registers), a
preset model and a built-in workload. The key covers everything the outcome depends on: the
configuration (what the optimizer's construction depends on: :mod:`harness.launch.preflight`),
the preflight's limits, the source of every module of the harness package, torch's version,
Python's and the machine's architecture. A user's or a package's code is checked every time (it
may change without the harness knowing, and runs in the sandbox). Failures are never remembered.
A cache folder that cannot be read or written costs the cache, never the preflight: each entry
is an empty file written atomically, named by its key, under ``<cache folder>/preflight``
(:func:`harness.core.env.cache_dir`).
"""

from __future__ import annotations

import functools
import hashlib
import platform
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from harness.core.config import RunConfig
from harness.core.env import cache_dir
from harness.core.files import atomic_write_bytes
from harness.core.provenance import source_digest
from harness.core.registry import is_reference
from harness.optim.builtin import BUILTIN

FOLDER = "preflight"
"""The cache's folder under :func:`harness.core.env.cache_dir`."""


def folder() -> Path:
    """Where passed configurations are remembered."""
    return cache_dir() / FOLDER


def is_own_code(run: RunConfig) -> bool:
    """Whether every part of ``run``'s configuration is the harness's own code (see the module
    docstring): only those are remembered."""
    names = [n for n in (run.optim.optimizer, run.optim.embedding_optimizer) if n]
    parts = [*names, run.arch.model or "", run.arch.workload or ""]
    return all(n in BUILTIN for n in names) and not any(is_reference(p) for p in parts)


@functools.cache
def _environment() -> str:
    """The source of every module of the harness, torch's version, Python's, the machine's."""
    h = hashlib.sha256(source_digest())
    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = "absent"
    h.update(f"{torch}|{sys.version}|{platform.machine()}".encode())
    return h.hexdigest()


def key(configuration: tuple[Any, ...], limits: object) -> str:
    """The cache key of a configuration checked under ``limits`` (their ``repr``: frozen
    dataclasses and tuples)."""
    text = f"{_environment()}|{configuration!r}|{limits!r}"
    return hashlib.sha256(text.encode()).hexdigest()


def passed(keys: Iterable[str]) -> set[str]:
    """The keys among ``keys`` that passed before on this machine."""
    where = folder()
    try:
        return {k for k in keys if (where / k).is_file()}
    except OSError:
        return set()


def remember(keys: Iterable[str]) -> None:
    """Remember ``keys`` as passed (silently not, where the cache folder refuses)."""
    where = folder()
    for k in keys:
        try:
            atomic_write_bytes(where / k, b"")
        except OSError:
            return
