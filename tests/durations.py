"""The seconds each xdist group of the suite took when last measured, for handing the longest
groups to the workers first (tests/conftest.py).

``tests/durations.json`` maps a group (a test file's path, or ``slurm``) to its seconds, summed
over its tests' setup, call and teardown; it is written from a suite's ``--durations=0`` output:

    python -m tests.durations LOG > tests/durations.json

A group it does not know (a new file) is given ``UNKNOWN_PER_TEST`` seconds per test. Stale
numbers only cost balance, never a result: every test runs whatever the order.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

RECORD = Path(__file__).with_name("durations.json")
# another record's path (tests/system/test_suite_order.py)
RECORD_VARIABLE = "HARNESS_TEST_DURATIONS"
UNKNOWN_PER_TEST = 1.0  # seconds; most tests of the fast lane take well under a second
_LINE = re.compile(r"^\s*(?P<s>[\d.]+)s\s+(?:setup|call|teardown)\s+(?P<id>\S+)$")


def expected_seconds(groups: Iterable[str]) -> dict[str, float]:
    """Each group's expected seconds: the record's, or ``UNKNOWN_PER_TEST`` per test (one entry
    in ``groups`` per test)."""
    counts = Counter(groups)
    record = Path(os.environ.get(RECORD_VARIABLE) or RECORD)
    known: dict[str, float] = json.loads(record.read_text()) if record.exists() else {}
    return {g: known.get(g, UNKNOWN_PER_TEST * n) for g, n in counts.items()}


def measured(lines: Iterable[str]) -> dict[str, float]:
    """Seconds per group from pytest's ``--durations=0`` lines; under xdist's loadgroup each
    test id ends in ``@group``."""
    total: Counter[str] = Counter()
    for line in lines:
        m = _LINE.match(line)
        if m:
            nodeid, _, group = m["id"].partition("@")
            total[group or nodeid.partition("::")[0]] += float(m["s"])
    return {g: round(s, 1) for g, s in sorted(total.items(), key=lambda kv: -kv[1])}


if __name__ == "__main__":
    with open(sys.argv[1]) as log:
        json.dump(measured(log), sys.stdout, indent=0)
    sys.stdout.write("\n")
