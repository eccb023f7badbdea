"""The bench's phases on simulated training: results are written to the real store from a known
loss function of each run's config (no training), and the phases are planned as ``harness
bench`` plans them (:func:`harness.api.plan` with ``per_arm``, as its submits do). Checks that
each arm gets the protocol's extension rounds whatever earlier candidates used, that a second
candidate reuses every baseline run (extension and confirmation included), and the verdict read
from the store."""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from harness import api
from harness.bench import derive_bench, judge
from harness.bench.derive import Derived, write_grid
from harness.bench.phases import plan
from harness.core.config import RunConfig
from harness.core.provenance import provenance
from harness.core.result import RunResult
from harness.store.db import newest_values
from harness.store.manifest import write_manifest
from harness.store.rows import write_result

Loss = Callable[[RunConfig], float]


def _loss(best_lr: dict[str, float], level: dict[str, float]) -> Loss:
    """val_loss = level + (log10 lr - log10 best)^2 + a seed's noise (sd 0.01, shared by every
    arm on the seed: batches and initialisation follow it) + the arm's own (sd 0.002)."""

    def f(r: RunConfig) -> float:
        assert r.label is not None
        cell = [r.execution.seed, int(r.data.tokens), r.data.batch_size]
        noise = np.random.default_rng(cell).normal()
        own = np.random.default_rng([*cell, zlib.crc32(r.label.encode())]).normal()
        return (
            level[r.label]
            + (math.log10(r.optim.lr / best_lr[r.label])) ** 2
            + 0.01 * noise
            + 0.002 * own
        )

    return f


def _simulate(d: Derived, root: Path, data: Path, loss: Loss) -> list[RunConfig]:
    """Run the bench's phases with ``loss`` as the trainer; returns the runs 'trained'."""
    path = write_grid(d)
    trained: list[RunConfig] = []
    for _ in range(12):  # tune, up to 3 extension rounds, confirm: a few rounds each
        planned = api.plan(path, extend=True, confirm=True, per_arm=True, results=root, data=data)
        runs = list(planned.runs)
        write_manifest(root, planned.grid.name, runs)
        done = set(newest_values(root, planned.grid.name, ["status"]))
        todo = [r for r in runs if r.run_id not in done]
        if not todo:
            return trained
        for r in todo:
            result = RunResult(
                status="completed", steps_done=r.data.steps, metrics={"val_loss": loss(r)}
            )
            write_result(root, r, result, provenance())
        trained += todo
    raise AssertionError("the phases did not converge")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "results"


@pytest.mark.slow
def test_aa_on_the_same_losses_finds_no_evidence(root: Path, tmp_path: Path) -> None:
    d = derive_bench("torch.optim:AdamW", root=root, scale="ci")
    loss = _loss(
        {"AdamW": 5.5e-3, "torch.optim:AdamW": 5.5e-3}, {"AdamW": 5.0, "torch.optim:AdamW": 5.0}
    )
    _simulate(d, root, tmp_path / "data", loss)
    v = judge(d, root)
    assert [c.reading for c in v.comparisons] == ["no evidence"] * 4
    assert all(c.n_candidate == c.n_baseline == 3 for c in v.comparisons)


def _ci_with(tmp_path: Path, old: str, new: str, name: str = "ci_edited.yaml") -> Path:
    text = (Path(__file__).resolve().parents[2] / "protocols" / "ci.yaml").read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.slow
def test_an_edited_protocol_is_refused_and_a_verdict_reads_only_its_own_runs(
    root: Path, tmp_path: Path
) -> None:
    from harness.bench.derive import STAMP
    from harness.core.errors import UserError

    data = tmp_path / "data"
    sgd = "torch.optim:SGD"
    loss = _loss({"AdamW": 5.5e-3, sgd: 5.5e-3}, {"AdamW": 5.0, sgd: 5.5})
    seeds = "  confirm: [1, 2, 3]"
    other = _ci_with(tmp_path, seeds, "  confirm: [4, 5, 6]")
    first = derive_bench("torch.optim:SGD", root=root, protocol=other)
    _simulate(first, root, data, loss)
    edited = _ci_with(tmp_path, seeds, seeds, "ci_again.yaml")  # the shipped seeds: an edit
    with pytest.raises(UserError, match=r"was edited \(seeds\).*new name") as e:
        derive_bench("torch.optim:SGD", root=root, protocol=edited)
    assert "\n" not in str(e.value)
    # results from before the stamp (or a stamp removed): the verdict still reads exactly the
    # runs of its own protocol, not the other seeds under the same name
    (first.path.parent / STAMP).unlink()
    second = derive_bench("torch.optim:SGD", root=root, protocol=edited)
    ran = _simulate(second, root, data, loss)
    assert {r.execution.seed for r in ran} == {1, 2, 3}  # only the new confirmation runs
    v = judge(second, root, data)
    assert all(c.n_candidate == c.n_baseline == 3 for c in v.comparisons)
    assert all(c.method == "paired by seed" for c in v.comparisons)
    assert [c.reading for c in v.comparisons] == ["worse"] * 4
    total = {t.label: t.runs for t in v.totals}
    assert total == {"AdamW": 12 + 12, "torch.optim:SGD": 12 + 12}  # 4 cells x 3 tune + 3 confirm
    assert judge(first, root, data).totals == v.totals  # the first's runs, as many, its own


@pytest.mark.slow
def test_two_files_of_one_name_are_benched_each_on_its_own_runs_and_rounds(
    root: Path, tmp_path: Path
) -> None:
    """Two files of one name are benched each on its own runs; the second candidate gets the
    protocol's extension rounds though the first used them all, and reuses every baseline run
    (tuning, extension and confirmation)."""
    body = "import torch\n\n\nclass MySGD(torch.optim.SGD):\n    pass\n"
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "sgdlike.py").write_text(body)
    data = tmp_path / "data"
    a = derive_bench(f"{tmp_path}/a/sgdlike.py:MySGD", root=root, scale="ci")
    b = derive_bench(f"{tmp_path}/b/sgdlike.py:MySGD", root=root, scale="ci")
    best = {"AdamW": 5.5e-3, a.candidate.label: 100.0, b.candidate.label: 0.9}
    level = {"AdamW": 5.0, a.candidate.label: 5.0, b.candidate.label: 6.0}
    loss = _loss(best, level)

    ran = _simulate(a, root, data, loss)
    first = [r for r in ran if r.label == a.candidate.label]
    assert max(r.extend_round or 0 for r in first) == 3  # used every round (best far above)
    v = judge(a, root, data)
    assert {c.reading for c in v.comparisons} == {"not tuned"}  # still on the edge after 3
    assert "largest tried" in v.comparisons[0].why

    p = plan(b, root, data)
    assert [(arm.label, arm.tuning, arm.tuning_done) for arm in p.arms] == [
        ("AdamW", 12, 12),
        (b.candidate.label, 12, 0),  # none of a's runs: a file of its own
    ]
    assert p.arms[0].followups_done == 12  # AdamW's 12 confirmation runs
    ran = _simulate(b, root, data, loss)
    assert {r.label for r in ran} == {b.candidate.label}  # its own runs, no baseline run again
    rounds = {r.extend_round for r in ran if r.extend_round}
    assert rounds == {1, 2, 3}  # its own 3 rounds, though the first candidate used 3 before it
    assert max(r.optim.lr for r in ran) > 0.9  # extended past its best
    assert len([r for r in ran if not r.extend_round]) == 12 + 12  # its tuning and confirmation
    v = judge(b, root, data)
    assert [c.reading for c in v.comparisons] == ["worse"] * 4
    assert all(0.9 < c.difference < 1.1 for c in v.comparisons)
    assert [t.budget for t in v.totals] == [3, 3]
    assert {t.label: t.runs for t in v.totals}["AdamW"] == 24
    assert all(arm.lr_curve for arm in v.arms)
    assert {c.reading for c in judge(a, root, data).comparisons} == {"not tuned"}
