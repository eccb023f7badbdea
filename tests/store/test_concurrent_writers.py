"""Read-modify-writes of shared files from several processes at once (issue 11, item 2)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.store.manifest import read_manifest

pytestmark = pytest.mark.slow  # processes that write at once

WRITER = """
import sys, time
from pathlib import Path
from harness.store.manifest import write_manifest
from tests.runs import tiny_run

root, me, n, start = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
runs = [tiny_run(root / "data", grid="race", seed=1000 * me + i) for i in range(n)]
time.sleep(max(0.0, start - time.time()))  # both writers begin together
for run in runs:  # one read-merge-write per run: 2 x n chances to lose an update
    assert write_manifest(root, "race", [run]) == 1
print(",".join(r.run_id for r in runs))
"""


def test_two_processes_merging_into_one_manifest_lose_no_run(tmp_path: Path) -> None:
    import time

    n = 40
    start = f"{time.time() + 3.0:.3f}"  # after both interpreters have imported pyarrow
    code = textwrap.dedent(WRITER)
    repo = Path(__file__).resolve().parents[2]
    argv = [[sys.executable, "-c", code, str(tmp_path), str(me), str(n), start] for me in (1, 2)]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "cwd": repo}
    writers = [subprocess.Popen(a, **pipes) for a in argv]
    written: set[str] = set()
    for w in writers:
        out, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
        written |= set(out.strip().split(","))

    assert len(written) == 2 * n
    assert set(read_manifest(tmp_path, "race")) == written  # every run of both writers
