"""The plan cache (issue 41: a no-op re-submit of 100,000 runs resolved every point again, about
13 s of CPU): the runs of a grid file are kept under the results root, keyed by the file's
bytes, the scale and the harness source, and the vocabularies it asked for are asked again, so
that a second plan resolves nothing and an entry is never stale. Asserted on work done (points
resolved), never on time; ``benchmarks/scale.py`` times it."""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import pytest

import harness.grid.plans as plans
from harness.core.errors import UserError
from harness.core.provenance import provenance
from harness.core.result import RunResult, Status
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.grid.plans import PlanCache
from harness.grid.resolve import Resolver
from harness.launch.inputs import Inputs
from harness.launch.submit import submit
from harness.store.manifest import write_manifest
from harness.store.rows import write_result
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name

pytestmark = pytest.mark.usefixtures("runs_in_process")  # runs train in the test's process

QUADRATIC = """name: q
base: {workload: quadratic, steps: 4}
grid: {optimizer: {sgd: {lr: [0.001, 0.01]}, adamw: {lr: [0.001]}}, condition: [1.0, 10.0]}
seeds: 3
"""

GPT = """name: t
base: {model: tiny, optimizer: adamw, seq_len: 64, batch_size: 16, tokens: 102400,
       eval_tokens: 4096, dataset: mine}
grid: {lr: [0.001, 0.002]}
seeds: 2
"""


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the points resolved (one entry per call of ``Resolver.resolve``)."""
    calls: list[int] = []
    real = Resolver.resolve

    def counting(self, point, at):
        calls.append(1)
        return real(self, point, at)

    monkeypatch.setattr(Resolver, "resolve", counting)
    return calls


def _grid(tmp_path: Path, text: str = QUADRATIC) -> Path:
    path = tmp_path / "g.yaml"
    path.write_text(text)
    return path


def _same(a, b) -> None:
    assert a.runs == b.runs
    assert [r.run_id for r in a.runs] == [r.run_id for r in b.runs]
    assert a.axes == b.axes and a.points == b.points


def test_the_second_plan_of_a_grid_file_resolves_no_point_and_gives_the_same_runs(
    tmp_path, resolved
):
    path = _grid(tmp_path)
    fresh = load_grid(path, vocab=vocab_lookup(tmp_path))
    cache = PlanCache(tmp_path / "results")
    first = load_grid(path, vocab=vocab_lookup(tmp_path), cache=cache)
    assert not cache.path("q").exists()  # kept once the caller saves
    cache.save()
    assert cache.path("q").is_file()
    before = len(resolved)
    second = load_grid(path, vocab=vocab_lookup(tmp_path), cache=cache)
    assert len(resolved) == before  # every run read from the entry
    _same(second, fresh)
    _same(first, fresh)
    assert set(second.axes) == {"optimizer", "lr", "seed", "condition", *second.axes}
    assert len(second.runs) == 18


def test_a_no_op_resubmit_resolves_no_point(tmp_path, resolved):
    data_root = tmp_path / "data"
    root = tmp_path / "results"
    path = _grid(tmp_path)
    grid = load_grid(path, vocab=vocab_lookup(data_root))
    write_manifest(root, grid.name, grid.runs)
    reader = Inputs(data_root)
    for run in grid.runs:
        result = RunResult(status=Status.COMPLETED, steps_done=4, metrics={"val_loss": 1.0})
        write_result(root, run, result, provenance("1") | reader.of(run))
    first = submit(path, root=root, data_root=data_root, launcher="local", out=io.StringIO())
    before = len(resolved)
    again = submit(path, root=root, data_root=data_root, launcher="local", out=io.StringIO())
    assert len(resolved) == before
    assert (again.planned, again.skipped, again.launched) == (18, 18, 0)
    assert (first.planned, first.skipped) == (18, 18)


def test_a_dry_run_or_a_refused_submit_writes_no_entry(tmp_path):
    path = _grid(tmp_path)
    root = tmp_path / "results"
    submit(path, root=root, data_root=tmp_path, launcher="local", dry_run=True, out=io.StringIO())
    with pytest.raises(UserError, match="nowhere"):
        submit(path, root=root, data_root=tmp_path, launcher="nowhere", out=io.StringIO())
    assert not PlanCache(root).path("q").exists()


@pytest.mark.parametrize("change", ["file", "scale", "source", "vocab"])
def test_anything_resolution_reads_that_changed_is_resolved_again(
    tmp_path, resolved, monkeypatch, change
):
    """The grid file's bytes, the scale, the harness source (the key) and a dataset's
    vocabulary (asked again on a hit): each change makes the runs be resolved again, and the
    runs are those of the changed inputs."""
    path = _grid(tmp_path, GPT + "local: {base: {tokens: 51200}}\n")
    cache = PlanCache(tmp_path / "results")
    size = {"mine": 100}

    def vocab(dataset: str) -> int:
        return size[dataset]

    load_grid(path, vocab=vocab, cache=cache)
    cache.save()
    local = False
    if change == "file":
        path.write_text(path.read_text().replace("0.002", "0.003"))
    elif change == "scale":
        local = True
    elif change == "source":
        monkeypatch.setattr(plans, "source_digest", lambda: b"edited")
    else:
        size["mine"] = 200
    before = len(resolved)
    got = load_grid(path, vocab=vocab, local=local, cache=cache)
    assert len(resolved) > before
    _same(got, load_grid(path, vocab=vocab, local=local))
    if change == "vocab":
        assert {r.arch.vocab_size for r in got.runs} == {200}


def test_a_grid_naming_code_is_never_kept(tmp_path):
    """A reference (``torch.optim:SGD``) may change without the key changing."""
    path = _grid(tmp_path, QUADRATIC.replace("sgd:", "'torch.optim:SGD':"))
    cache = PlanCache(tmp_path / "results")
    load_grid(path, vocab=vocab_lookup(tmp_path), cache=cache)
    cache.save()
    assert not cache.path("q").exists()


def test_a_damaged_or_foreign_entry_is_a_miss_and_builds_nothing_but_values(tmp_path, resolved):
    path = _grid(tmp_path)
    cache = PlanCache(tmp_path / "results")
    fresh = load_grid(path, vocab=vocab_lookup(tmp_path), cache=cache)
    cache.save()
    entry = cache.path("q")
    head = entry.read_bytes()[: len(plans.FORMAT) + 32]
    for body in (b"garbage", pickle.dumps(Path), pickle.dumps(print)):
        entry.write_bytes(head + body)
        before = len(resolved)
        got = load_grid(path, vocab=vocab_lookup(tmp_path), cache=cache)
        assert len(resolved) > before  # resolved again
        _same(got, fresh)
