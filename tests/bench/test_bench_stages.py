"""The sequential confirmation in the bench (issue 37): a protocol's ``seeds: stages``, the next
stage planned for the open comparisons only (:func:`harness.bench.stages.next_stage`), and the
phases (:func:`harness.bench.phases.run`) adding the stages' seeds until no comparison is open,
with training simulated: ``services.submit`` (what the phases call) is replaced by one that
writes each planned run's result to the real store from a known loss (no training), as
``harness bench``'s submits would."""

from __future__ import annotations

import io
import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from harness import api, services
from harness.bench import derive_bench, judge
from harness.bench.derive import Derived
from harness.bench.phases import Launching, plan, run
from harness.bench.protocol import load_protocol
from harness.bench.render import verdict_table
from harness.bench.stages import next_stage, waiting
from harness.bench.verdict import ArmCell, Comparison, Verdict
from harness.core.config import RunConfig
from harness.core.errors import UserError
from tests.simulated_bench import fake_submit

PROTOCOLS = Path(__file__).resolve().parents[2] / "protocols"
SHIFT = {(8, 4096): 0.5, (8, 8192): 0.5, (16, 4096): 0.008, (16, 8192): 0.0}
"""The candidate's loss above the baseline's per cell (batch size, tokens): clear in two
cells, small (about 3 sds of a seed's difference) in one, none in the last."""


def _protocol(tmp_path: Path, stages: Any = (3, 5, 8), **verdict: Any) -> Path:
    doc = yaml.safe_load((PROTOCOLS / "ci.yaml").read_text())
    doc["name"] = "bench_staged"
    doc["seeds"]["stages"] = list(stages) if isinstance(stages, tuple) else stages
    doc["verdict"] = {**doc.get("verdict", {}), **verdict}
    path = tmp_path / "staged.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _loss(r: RunConfig) -> float:
    """5 + (log10 lr - log10 5.5e-3)^2 + the cell's shift for the candidate + a seed's noise
    (sd 0.01, shared by both arms: the seed is a blocking factor) + the arm's own (sd 0.002)."""
    assert r.label is not None
    cell = [r.execution.seed, int(r.data.tokens), r.data.batch_size]
    shared = np.random.default_rng(cell).normal()
    own = np.random.default_rng([*cell, zlib.crc32(r.label.encode())]).normal()
    shift = 0.0 if r.label == "AdamW" else SHIFT[(r.data.batch_size, int(r.data.tokens))]
    return 5.0 + math.log10(r.optim.lr / 5.5e-3) ** 2 + shift + 0.01 * shared + 0.002 * own


def test_a_protocols_stages_are_checked_and_declared_once(tmp_path: Path) -> None:
    p = load_protocol(_protocol(tmp_path))
    assert p.stages.stages == (3, 5, 8) and p.seeds_at(2) == (1, 2, 3, 4, 5, 6, 7, 8)
    assert p.stages.weights == (3 / 16, 5 / 16, 8 / 16)  # obrien-fleming: by seeds
    assert load_protocol(_protocol(tmp_path, spending="pocock")).stages.weights[0] == 1 / 3
    plain = load_protocol(PROTOCOLS / "ci.yaml")
    assert plain.stages.stages == (3,) and plain.stages.weights == (1.0,)
    for bad, said in (([4, 5], "starting at the 3"), ([3, 3], "increasing"), ("x", "increasing")):
        with pytest.raises(UserError, match=said):
            load_protocol(_protocol(tmp_path, stages=bad))
    with pytest.raises(UserError, match="unknown spending 'linear'; valid choices: obrien"):
        load_protocol(_protocol(tmp_path, spending="linear"))


LR = {"AdamW": 0.01, "cand": 0.02}
"""Each arm's selected lr (the run_id is of the config, not the label)."""


def _arm(label: str, bs: int) -> ArmCell:
    return ArmCell(label, {"batch_size": bs}, {"lr": LR[label]}, 5.0, 3, 3, "", ())


def test_next_stage_plans_the_open_comparisons_only(tmp_path: Path) -> None:
    p = load_protocol(_protocol(tmp_path))
    open_, stopped, first = (
        Comparison({"batch_size": 8}, "AdamW", "pending", stage=1),
        Comparison({"batch_size": 16}, "AdamW", "worse", stage=0),
        Comparison({"batch_size": 32}, "AdamW", "pending", stage=0),  # its first seeds
    )
    assert [waiting(c) for c in (open_, stopped, first)] == [True, False, False]
    arms = tuple(_arm(a, bs) for a in ("AdamW", "cand") for bs in (8, 16, 32))
    comparisons = (open_, stopped, first)
    v = Verdict(
        "p", "g", "cand", ("AdamW",), "val_loss", 0.05, 0.8, comparisons, (), arms, (), (0,), (1,)
    )
    base = derive_bench("torch.optim:SGD", root=tmp_path, protocol=_protocol(tmp_path))
    run0 = api.plan(_write(base), results=tmp_path).grid.runs[0]
    confirmed = [_confirmed(run0, label, bs) for label in ("AdamW", "cand") for bs in (8, 16, 32)]
    stage = next_stage(p, v, confirmed)
    got = sorted((r.label, r.data.batch_size, r.execution.seed, r.confirm) for r in stage.runs)
    assert got == [(a, 8, s, True) for a in ("AdamW", "cand") for s in (4, 5)]
    assert len(stage.lines) == 1 and "stage 2 of 3 adds seeds 4, 5" in stage.lines[0]


def _write(d: Derived) -> Path:
    from harness.bench.derive import write_grid

    return write_grid(d)


def _confirmed(run: RunConfig, label: str, bs: int) -> RunConfig:
    from harness.core.catalogue import with_values

    return with_values(run, label=label, batch_size=bs, lr=LR[label], seed=1, confirm=True)


@pytest.mark.slow
def test_the_phases_add_seeds_in_stages_to_the_open_cells_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, data = tmp_path / "results", tmp_path / "data"
    d = derive_bench("torch.optim:SGD", root=root, protocol=_protocol(tmp_path))
    assert plan(d, root, data).stages_max == 4 * 2 * 5  # every cell open to the cap
    trained: list[RunConfig] = []
    monkeypatch.setattr(services, "submit", fake_submit(_loss, trained))
    out = io.StringIO()
    progress = run(d, Launching(None, None, out), root=root, data_root=data)
    assert progress.finished and not progress.queued, out.getvalue()
    v = judge(d, root, data)
    by_cell = {(c.cell["batch_size"], c.cell["tokens"]): c for c in v.comparisons}
    for cell in ((8, 4096), (8, 8192)):  # clear: read at the first stage, 3 seeds per arm
        c = by_cell[cell]
        assert (c.reading, c.stage, c.n_candidate, c.n_baseline) == ("worse", 0, 3, 3), c
    small, none = by_cell[(16, 4096)], by_cell[(16, 8192)]
    assert small.reading == "worse" and small.stage >= 1, small  # 3 seeds did not read it
    assert (none.reading, none.stage, none.n_candidate) == ("no evidence", 2, 8), none
    assert all(c.ci_low > 0 for c in (small, *by_cell.values()) if c.reading == "worse")
    extra = {
        (r.data.batch_size, int(r.data.tokens), r.label) for r in trained if r.execution.seed > 3
    }
    assert {(bs, tok) for bs, tok, _ in extra} == {(16, 4096), (16, 8192)}  # open cells only
    assert {label for *_, label in extra} == {"AdamW", "torch.optim:SGD"}  # both arms
    assert "stage 2 of 3 adds seeds 4, 5" in out.getvalue()
    table = verdict_table(v)
    assert "(stage 1 of 3, 6 runs)" in table and "(stage 3 of 3, 16 runs)" in table, table
    assert "stopped at each stage: 2 / " in table, table
    # read again: nothing is open, nothing more to train
    again: list[RunConfig] = []
    monkeypatch.setattr(services, "submit", fake_submit(_loss, again))
    assert run(d, Launching(None, None, io.StringIO()), root=root, data_root=data).finished
    assert again == []
