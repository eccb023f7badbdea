"""Values read from files, kept per process while each file is as it was read: by path, with the
file's stamp (modification time in ns and size) when read, the least recently used dropped past
a limit (the store's covered lists and part indexes: a writer asks them at every row)."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Generic, TypeVar

V = TypeVar("V")

Stamp = tuple[int, int]
"""A file's modification time (ns) and size when it was read."""


class StampedCache(Generic[V]):
    """At most ``limit`` values, by path, each valid while its file has the stamp it was read
    with; the least recently used goes first (a cache cleared when full made every value be
    read again: the spike windows of RESULTS §10.4)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._items: OrderedDict[Path, tuple[Stamp, V]] = OrderedDict()

    def get(self, path: Path, stamp: Stamp) -> V | None:
        """The value read from ``path`` when it had ``stamp``; None when none is kept."""
        found = self._items.get(path)
        if found is None or found[0] != stamp:
            return None
        self._items.move_to_end(path)
        return found[1]

    def put(self, path: Path, stamp: Stamp, value: V) -> V:
        """Keep ``value``, read from ``path`` with ``stamp``; returns it."""
        self._items[path] = (stamp, value)
        self._items.move_to_end(path)
        while len(self._items) > self.limit:
            self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
