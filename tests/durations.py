"""The seconds each xdist group of the suite took when last measured, for handing the longest
groups to the workers first (tests/conftest.py).

``tests/durations.json`` maps a group (a test file's path, or ``slurm``) to its seconds, summed
over its tests' setup, call and teardown; it is written from a suite's ``--durations=0`` output:

    python -m tests.durations LOG > tests/durations.json

A group it does not know (a new file) is given ``UNKNOWN_PER_TEST`` seconds per test. Stale
numbers only cost balance, never a result: every test runs whatever the order.

Where the suite's CPU goes (its wall time on 2 cores is bound by it): with ``HARNESS_TEST_CPU=F``
each test appends a line to ``F`` (:func:`cpu_line`: the CPU seconds of the worker and of the
processes it reaped, and the wall seconds), summed per group by

    python -m tests.durations --cpu F

(processes nobody reaps, as SLURM's jobs, are not counted).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

RECORD = Path(__file__).with_name("durations.json")
# another record's path (tests/system/test_suite_order.py)
RECORD_VARIABLE = "HARNESS_TEST_DURATIONS"
CPU_VARIABLE = "HARNESS_TEST_CPU"  # the file of CPU lines (module docstring)
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


def _cpu_s() -> float:
    own, reaped = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


@contextlib.contextmanager
def cpu_line(where: Path, nodeid: str, group: str) -> Iterator[None]:
    """Append the CPU and wall seconds of the ``with`` block (a test) to ``where``, one JSON
    line (a write of one line: workers append to one file)."""
    cpu, wall = _cpu_s(), time.monotonic()
    try:
        yield
    finally:
        line = {"id": nodeid, "group": group, "cpu": round(_cpu_s() - cpu, 2)}
        line["wall"] = round(time.monotonic() - wall, 2)
        with open(where, "a") as fh:
            fh.write(json.dumps(line) + "\n")


def cpu_by_group(lines: Iterable[str]) -> dict[str, tuple[float, float]]:
    """(CPU, wall) seconds per group from :func:`cpu_line`'s lines, the most CPU first."""
    cpu: Counter[str] = Counter()
    wall: Counter[str] = Counter()
    for line in lines:
        d = json.loads(line)
        cpu[d["group"]] += d["cpu"]
        wall[d["group"]] += d["wall"]
    return {g: (round(c, 1), round(wall[g], 1)) for g, c in cpu.most_common()}


if __name__ == "__main__":
    if sys.argv[1] == "--cpu":
        with open(sys.argv[2]) as fh:
            found = cpu_by_group(fh)
        print(f"{sum(c for c, _ in found.values()):.0f} s CPU in all")
        for group, (c, w) in found.items():
            print(f"{c:8.1f} s CPU {w:8.1f} s wall  {group}")
    else:
        with open(sys.argv[1]) as log:
            json.dump(measured(log), sys.stdout, indent=0)
        sys.stdout.write("\n")
