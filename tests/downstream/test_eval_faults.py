"""``harness eval`` killed mid-write (issue 29, "not yet attacked"): the hidden temp file an eval
row was being written through is removed by the next ``eval`` once an hour old (as ``submit``
does for rows and curves); a younger one, maybe another eval's being written, is kept. Two evals
at once are kept apart by each run's evaluation lock (``test_evals.py``)."""

from __future__ import annotations

import os
import time

import pytest

from harness.core import paths
from harness.core.files import temp_name
from tests.downstream.test_evals import TASK, eval_args, invoke, offline, trained  # noqa: F401  # fixtures

pytestmark = pytest.mark.slow  # test_evals's runs are trained by submit, lm-eval scores them


def test_an_eval_killed_mid_write_leaves_no_temp_file_behind(trained) -> None:  # noqa: F811
    folder = paths.evals_dir(trained.root, trained.grid)
    folder.mkdir(parents=True, exist_ok=True)
    stale = temp_name(folder / f"x.{TASK}.parquet")
    stale.write_bytes(b"PAR1 half a row")
    hour_ago = time.time() - 2 * 3600
    os.utime(stale, (hour_ago, hour_ago))
    fresh = temp_name(folder / f"y.{TASK}.parquet")
    fresh.write_bytes(b"PAR1 being written")

    out = invoke(*eval_args(trained, "--limit", 2))

    assert out.exit_code == 0, out.output
    assert not stale.exists() and fresh.exists()
