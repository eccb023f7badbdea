"""Which parts of a generation a compaction merges: size tiers, so that a row's cost does not
grow with the store.

A compaction by itself (:func:`harness.store.auto.auto_compact`) writes the per-run files that
piled up as a new *part* (:class:`harness.store.layout.Part`) and keeps the older parts as they
are, merging only when :data:`FANOUT` parts of one size tier sit at the end of the list: then
they become one part of the next tier (a log-structured merge, as LevelDB and Lucene do). A row
is thus rewritten about ``log_FANOUT(rows / AUTO_COMPACT_FILES)`` times in all, 2 to 3 times at
100,000 runs, instead of once per compaction (the whole store each time: a sweep's compaction
cost was quadratic), and a generation has at most ``FANOUT - 1`` parts per tier (about 20 at
100,000 runs) for readers to open. ``harness compact`` merges every part into one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

FANOUT = 8
"""Parts of one size tier merged into one of the next."""

TIER_ROWS = 256
"""Rows of a part of the lowest tier (about what a compaction by itself consolidates:
:data:`harness.store.auto.AUTO_COMPACT_FILES`)."""


def tier(rows: int) -> int:
    """The size tier of a part of ``rows`` result rows: 0 up to ``TIER_ROWS * FANOUT`` rows,
    then one more per factor of :data:`FANOUT`."""
    return max(0, math.floor(math.log(max(rows, 1) / TIER_ROWS, FANOUT)))


def merge_from(sizes: Sequence[int], new_rows: int) -> int:
    """Index of the first of the parts (of ``sizes`` rows each, oldest first) that a compaction
    of ``new_rows`` new rows merges with them: ``len(sizes)`` to merge none.

    The new rows join the trailing parts while :data:`FANOUT` parts of the tier they reach (or
    a lower one) sit at the end, the new one included."""
    end, rows = len(sizes), new_rows
    while end > 0:
        level = tier(rows)
        start = end
        while start > 0 and tier(sizes[start - 1]) <= level:
            start -= 1
        if end - start + 1 < FANOUT:
            break
        rows += sum(sizes[start:end])
        end = start
    return end
