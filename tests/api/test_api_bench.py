"""``harness.api.bench`` (issue 40, item 4): a whole bench as one library function returning a
typed result, the command a thin wrapper over it; the bench hands its grid to ``submit`` in
memory (``api.expand``), the same runs as the grid file it writes for the user.

Training is simulated where the runs do not matter (:mod:`tests.simulated_bench`).
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from harness import api, services
from harness.cli import main
from harness.core.config import RunConfig
from harness.core.errors import UserError
from tests.simulated_bench import fake_submit


def _loss(r: RunConfig) -> float:
    """A quadratic in log lr with its best at 5.5e-3, the candidate (not AdamW) 0.5 worse, and
    each run's own noise (sd 0.01, seeded by the run's seed, cell and arm)."""
    assert r.label is not None
    key = [r.execution.seed, r.data.batch_size, int(r.data.tokens), zlib.crc32(r.label.encode())]
    worse = 0.0 if r.label == "AdamW" else 0.5
    noise = 0.01 * np.random.default_rng(key).normal()
    return 5.0 + math.log10(r.optim.lr / 5.5e-3) ** 2 + worse + noise


def test_api_bench_is_public_and_a_dry_run_returns_the_plan_and_the_preflight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: no ``api.bench``; the command sequenced the bench itself."""
    import harness.bench.session
    from harness.api import BenchResult, bench  # the facade's names

    checked: list[int] = []

    def preflight(derived: Any, root: Path, data_root: Path) -> str:
        checked.append(len(derived.arms))
        return "2 optimizer configuration(s) built and stepped"

    monkeypatch.setattr(harness.bench.session, "preflight", preflight)
    root = tmp_path / "r"
    done = bench("torch.optim:SGD", scale="ci", dry_run=True, results=root, data=tmp_path / "d")
    assert isinstance(done, BenchResult) and done.dry_run and checked == [2]
    assert (done.verdict, done.progress, done.faults, done.queued) == (None, None, 0, False)
    assert done.plan.grid == "bench_ci" and done.plan.to_train_max > 0
    assert done.scale == "ci scale"
    assert done.derived.path.is_file()  # the grid file, for the user to read
    text = done.text()
    assert "phase 3, confirm" in text, text
    assert text.endswith("preflight: 2 optimizer configuration(s) built and stepped")
    with pytest.raises(dataclasses.FrozenInstanceError):
        done.verdict = None  # type: ignore[misc]
    with pytest.raises(UserError, match="unknown --format 'html'; valid choices: json, table"):
        done.text("html")


@pytest.mark.slow
def test_api_bench_runs_the_phases_with_the_grid_in_memory_and_reads_the_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the bench wrote its typed arms to YAML and each submit parsed them back; the
    verdict, the card and the exit status were the command's. Now ``api.bench`` returns them,
    the submits get the grid in memory (the same run_ids as the file), and the command prints
    what the library returns."""
    from harness.bench import derive_bench, judge
    from harness.bench.render import verdict_json, verdict_table
    from harness.grid.load import Grid

    given: list[Any] = []
    monkeypatch.setattr(services, "submit", fake_submit(_loss, [], given))
    root, data = tmp_path / "r", tmp_path / "d"
    out = io.StringIO()
    card = tmp_path / "card.html"
    done = api.bench("torch.optim:SGD", scale="ci", results=root, data=data, out=out, html=card)
    assert not done.dry_run and done.progress is not None and done.progress.finished
    assert done.verdict is not None and done.card == card and card.is_file()
    assert [c.reading for c in done.verdict.comparisons] == ["worse"] * 4
    said = out.getvalue()
    assert said.startswith("bench_ci (ci scale): training at most 72 runs"), said
    # the verdict as the command prints it, from the library's result
    d = derive_bench("torch.optim:SGD", root=root, scale="ci")
    v = judge(d, root, data)
    assert done.text() == verdict_table(v, d.candidate.caveats)
    assert json.loads(done.text("json")) == json.loads(verdict_json(v, d.candidate.caveats))
    # every submit got the grid typed, in memory: the runs of the file written beside it
    assert given and all(isinstance(g, Grid) for g in given)
    from_file = api.plan(done.derived.path, results=root, data=data).run_ids
    assert [r.run_id for r in given[0].runs] == from_file
    # the command: one call of api.bench, its text printed, exit 0
    r = CliRunner().invoke(
        main, ["bench", "torch.optim:SGD", "--scale", "ci", "--results", root, "--data", data]
    )
    assert r.exit_code == 0, r.output
    assert r.stdout.endswith("\n" + done.text() + "\n"), r.stdout
    json_args = ["--scale", "ci", "--results", root, "--data", data, "--format", "json"]
    r = CliRunner().invoke(main, ["bench", "torch.optim:SGD", *json_args])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == json.loads(done.text("json"))


def test_the_bench_reports_faults_for_the_command_to_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library says how many runs failed; the command prints the line and exits 1."""
    import harness.bench.session
    from harness.bench.phases import Progress

    def run(*_: object, **__: object) -> Progress:
        return Progress(finished=False, queued=True, faults=2, trained=5)

    monkeypatch.setattr(harness.bench.session.phases, "run", run)
    root = tmp_path / "r"
    out = io.StringIO()
    done = api.bench("torch.optim:SGD", scale="ci", results=root, out=out)
    assert done.queued and done.faults == 2 and done.verdict is None and done.text() == ""
    assert out.getvalue().rstrip().endswith("follow with 'harness status bench_ci'")
    r = CliRunner().invoke(main, ["bench", "torch.optim:SGD", "--scale", "ci", "--results", root])
    assert r.exit_code == 1, r.output
    assert r.output.rstrip().endswith(
        "exit 1: 2 runs failed or were lost; see 'harness status bench_ci' and each run's log"
    )


# --- a grid in memory ----------------------------------------------------------------------

QUADRATIC = {
    "name": "inmem",
    "launcher": "local",
    "base": {"workload": "quadratic", "optimizer": "sgd", "steps": 8, "log_every": 4},
    "grid": {"lr": [0.01, 0.1]},
    "seeds": 2,
}


def test_a_grid_in_memory_plans_the_runs_of_its_file(tmp_path: Path) -> None:
    """Before: ``plan``/``submit`` took a file only."""
    path = tmp_path / "inmem.yaml"
    path.write_text(yaml.safe_dump(QUADRATIC))
    doc = json.loads(json.dumps(QUADRATIC))
    grid = api.expand(doc, path=path, data=tmp_path / "d")
    assert doc == QUADRATIC  # the caller's document is left as it was
    from_file = api.plan(path, results=tmp_path / "r", data=tmp_path / "d")
    in_memory = api.plan(grid, results=tmp_path / "r", data=tmp_path / "d")
    assert len(in_memory.run_ids) == 4 and in_memory.run_ids == from_file.run_ids
    assert in_memory.grid.runs == from_file.grid.runs and grid.name == "inmem"
    with pytest.raises(UserError, match=r"inmem\.yaml.*unknown key 'nope'"):
        api.expand({**QUADRATIC, "nope": 1}, path=path)


@pytest.mark.slow
def test_submit_of_a_grid_in_memory_trains_the_runs_its_file_plans(tmp_path: Path) -> None:
    path = tmp_path / "inmem.yaml"  # never written: the grid lives in memory only
    root, data = tmp_path / "r", tmp_path / "d"
    grid = api.expand(QUADRATIC, path=path, data=data)
    done = api.submit(grid, results=root, data=data, out=io.StringIO())
    assert done.faults == 0 and done.last.launched == 4 and not path.exists()
    frame = api.query("SELECT run_id, status FROM runs", "inmem", results=root)
    assert sorted(frame["run_id"]) == sorted(r.run_id for r in grid.runs)
    assert set(frame["status"]) == {"completed"}
    path.write_text(yaml.safe_dump(QUADRATIC))  # the file: nothing left to train
    again = api.submit(path, results=root, data=data, out=io.StringIO())
    assert again.last.launched == 0 and again.last.skipped == 4
