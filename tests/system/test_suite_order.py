"""The suite hands its longest xdist groups to the workers first (tests/conftest.py,
tests/durations.py): a long group started last leaves one worker alone at the end."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.durations import RECORD_VARIABLE, UNKNOWN_PER_TEST, expected_seconds, measured

ROOT = Path(__file__).resolve().parents[2]


def test_measured_sums_each_groups_phases_from_xdist_durations_lines() -> None:
    lines = [
        "============ slowest durations ============",
        "12.50s call     tests/a/test_x.py::test_one@slurm",
        "2.00s setup    tests/a/test_x.py::test_one@slurm",
        "3.25s call     tests/b/test_y.py::test_two[p]@tests/b/test_y.py",
        "0.50s teardown tests/b/test_y.py::test_two[p]@tests/b/test_y.py",
        "1.00s call     tests/c/test_z.py::test_three",  # without xdist: the file
        "(12 durations < 0.005s hidden.)",
    ]
    assert measured(lines) == {"slurm": 14.5, "tests/b/test_y.py": 3.8, "tests/c/test_z.py": 1.0}


def test_a_group_the_record_does_not_know_is_estimated_per_test() -> None:
    cost = expected_seconds(["tests/new/test_never_measured.py"] * 3)
    assert cost == {"tests/new/test_never_measured.py": 3 * UNKNOWN_PER_TEST}


def test_the_collection_hands_the_longest_group_first_and_keeps_each_groups_order(
    tmp_path: Path,
) -> None:
    first, heavy = "tests/system/test_suite_order.py", "tests/core/test_env.py"
    record = tmp_path / "durations.json"
    record.write_text(json.dumps({first: 1.0, heavy: 100.0}))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            first,
            heavy,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, RECORD_VARIABLE: str(record)},
    ).stdout
    ids = [line for line in out.splitlines() if "::" in line]
    files = [i.partition("::")[0] for i in ids]
    assert list(dict.fromkeys(files)) == [heavy, first], files  # the longest first
    assert files == sorted(files, key=[heavy, first].index)  # each group's tests together
    mine = [i.partition("::")[2] for i in ids if i.startswith(first)]
    written = re.findall(r"^def (test_\w+)", Path(__file__).read_text(), re.MULTILINE)
    assert mine == written  # this file's tests in the order written


def test_the_suite_has_a_record_of_its_groups() -> None:
    record = json.loads((ROOT / "tests/durations.json").read_text())
    assert "slurm" in record and all(v >= 0 for v in record.values())


def test_a_tests_cpu_line_counts_the_processes_it_reaped_and_sums_by_group(tmp_path) -> None:
    """``HARNESS_TEST_CPU``'s lines: a child that burns 0.3 s of CPU is counted in its test's
    line (the suite's CPU is mostly in processes its tests start), and lines sum per group."""
    from tests.durations import cpu_by_group, cpu_line

    where = tmp_path / "cpu.jsonl"
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    with cpu_line(where, "tests/a.py::test_burns", "tests/a.py"):
        subprocess.run([sys.executable, "-c", burn], check=True)
    with cpu_line(where, "tests/a.py::test_idles", "tests/a.py"):
        pass
    with cpu_line(where, "tests/b.py::test_idles", "slurm"):
        pass
    lines = where.read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["cpu"] >= 0.3
    found = cpu_by_group(lines)
    assert list(found) == ["tests/a.py", "slurm"]
    assert found["tests/a.py"][0] >= 0.3 and found["slurm"][0] < 0.1
