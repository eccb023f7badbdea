"""Every command is one function of ``harness.api`` (issue 40, item 4): the library does what
the command does, and the command accepts what the library accepts (a grid YAML path where a
grid name is taken). Over the legacy results fixture: six rows of grid ``legacy``, no training."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from harness import api
from harness.cli import main
from harness.core.errors import UserError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "legacy"
GRID = FIXTURE / "legacy.yaml"
"""The legacy results' grid file (``name: legacy``)."""


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A copy of the legacy results (tests never write into the fixture)."""
    root = tmp_path / "results"
    shutil.copytree(FIXTURE / "results", root)
    return root


def _cli(*args: object) -> str:
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.output


def test_query_accepts_a_grid_file_as_connect_and_analyze_do(results: Path) -> None:
    sql = "SELECT count(*) AS n FROM runs"
    out = _cli("query", sql, "--grid", GRID, "--results", results, "--format", "csv")
    assert out.splitlines() == ["n", "6"]
    frame = api.query(sql, GRID, results=results)
    assert isinstance(frame, pd.DataFrame) and int(frame["n"].iloc[0]) == 6
    assert api.query(sql, "legacy", results=results).equals(frame)  # the name: the same


def test_query_refuses_a_result_over_its_memory_limit(results: Path) -> None:
    with pytest.raises(UserError, match="memory limit"):
        api.query("SELECT * FROM range(200000)", results=results, memory_limit="1MB")


def test_export_writes_parquet_and_text_files(results: Path, tmp_path: Path) -> None:
    sql = "SELECT run_id, status FROM runs ORDER BY run_id"
    parquet = api.export(sql, tmp_path / "rows.parquet", GRID, results=results)
    assert len(pd.read_parquet(parquet)) == 6
    csv = api.export(sql, tmp_path / "rows.csv", GRID, fmt="csv", results=results)
    assert csv.read_text() == api.query_text(api.query(sql, results=results), "csv")
    assert csv.read_text().count("completed") == 6


def test_status_counts_runs_by_state(results: Path) -> None:
    got = api.status(GRID, results=results)
    assert got.rows.grid == "legacy" and got.queued == ()
    assert sum(c["completed"] for c in got.rows.counts.values()) == 6
    assert _cli("status", GRID, "--results", results).strip() == got.text().strip()


def test_compact_then_clean(results: Path) -> None:
    report = api.compact(GRID, results=results)
    assert report.grid == "legacy" and report.rows == 6
    assert "nothing to compact" in _cli("compact", "legacy", "--results", results)  # done
    assert api.query("SELECT count(*) AS n FROM runs", GRID, results=results)["n"][0] == 6
    tidied = api.clean(GRID, results=results)
    assert tidied.grid == "legacy"
    assert "removed" in _cli("clean", GRID, "--results", results)


def test_cancel_without_queued_submissions_names_the_backends(results: Path) -> None:
    with pytest.raises(UserError, match=r"no queued submissions.*slurm"):
        api.cancel(GRID, results=results)


def test_eval_passes_its_arguments_on(results: Path) -> None:
    with pytest.raises(UserError, match="--limit 0"):
        api.evaluate(GRID, ["hellaswag"], limit=0, results=results)


def test_watch_once_and_the_datasets(results: Path, prepared_data: Path) -> None:
    (snap,) = api.watch([GRID], once=True, results=results)
    assert snap is not None
    assert api.datasets()["classics-bpe8k"][0] == 8192
    done = api.prepare_data("classics-bpe8k", data=prepared_data)  # prepared: read, not rebuilt
    assert done.vocab_size == 8192 and done.train_tokens > 0
    assert str(done.path) in _cli("data", "prepare", "classics-bpe8k", "--data", prepared_data)
