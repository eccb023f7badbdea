"""The one registry idiom: named entries of a kind (optimizers, launchers, figures, datasets, CLI
commands), looked up by name, whose code is imported only when used.

An entry is plain data - a spec naming its code by import path (``"module:attribute"``) - so
creating a registry imports nothing and has no side effect. Entries are given when the registry
is made, added by an explicit :meth:`Registry.register` call, or found by ``discover`` (e.g.
Python entry points of installed packages) the first time a name is missing. An unknown name is a
:class:`~harness.core.errors.UserError` listing the known ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from harness.core.errors import UserError, unknown_choice

T = TypeVar("T")


def load_object(path: str) -> Any:
    """The object at ``"module:attribute"`` (importing the module).

    Raises:
        UserError: the module cannot be imported or has no such attribute.
    """
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise UserError(f"{path!r}: expected 'module:attribute'")
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise UserError(f"{path!r}: cannot import module {module!r} ({e})") from None
    try:
        return getattr(mod, attr)
    except AttributeError:
        raise UserError(f"{path!r}: module {module!r} has no attribute {attr!r}") from None


class Registry(Generic[T]):
    """Named entries of one kind.

    Args:
        what: What an entry is, for messages (``"optimizer"``, ``"figure"``).
        entries: The built-in entries.
        discover: Called once, on the first lookup of an unknown name (or a listing), for entries
            contributed from outside (installed packages); they never replace built-ins.
    """

    def __init__(
        self,
        what: str,
        entries: Mapping[str, T],
        *,
        discover: Callable[[], Mapping[str, T]] | None = None,
    ) -> None:
        self.what = what
        self._entries: dict[str, T] = dict(entries)
        self._discover = discover

    def register(self, name: str, entry: T) -> None:
        """Add ``entry`` under ``name``.

        Raises:
            ValueError: ``name`` is taken.
        """
        if name in self._entries:
            raise ValueError(f"{self.what} {name!r} is registered already")
        self._entries[name] = entry

    @contextmanager
    def temporarily(self, name: str, entry: T) -> Iterator[None]:
        """``entry`` registered under ``name`` for the ``with`` block (tests, notebooks)."""
        self.register(name, entry)
        try:
            yield
        finally:
            del self._entries[name]

    def _discovered(self) -> None:
        if self._discover is not None:
            found, self._discover = self._discover(), None
            for name, entry in found.items():
                self._entries.setdefault(name, entry)

    def __getitem__(self, name: str) -> T:
        """The entry ``name``; UserError listing the known names otherwise."""
        if name not in self._entries:
            self._discovered()
        if name not in self._entries:
            raise unknown_choice(self.what, name, self._entries)
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        if name not in self._entries:
            self._discovered()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        self._discovered()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self._discovered()
        return len(self._entries)

    def names(self) -> list[str]:
        """Every name, in registration order."""
        return list(self)

    def items(self) -> list[tuple[str, T]]:
        """(name, entry) pairs, in registration order."""
        self._discovered()
        return list(self._entries.items())
