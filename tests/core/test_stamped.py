"""The cache of values read from files (:mod:`harness.core.stamped`)."""

from __future__ import annotations

from pathlib import Path

from harness.core.stamped import StampedCache


def test_a_value_is_kept_while_its_file_has_its_stamp_and_the_least_recently_used_goes():
    cache: StampedCache[str] = StampedCache(2)
    a, b, c = Path("a"), Path("b"), Path("c")
    cache.put(a, (1, 10), "A")
    cache.put(b, (1, 10), "B")
    assert cache.get(a, (1, 10)) == "A"  # a used last: b goes when c comes
    assert cache.get(a, (2, 10)) is None  # the file changed
    cache.put(c, (1, 10), "C")
    assert len(cache) == 2 and cache.get(b, (1, 10)) is None
    assert (cache.get(a, (1, 10)), cache.get(c, (1, 10))) == ("A", "C")
