"""With sequential confirmation seeds, ``harness bench``'s verdict and ``harness analyze compare``
give the same reading, difference and interval on the same rows (issue 37): ``compare`` told
the protocol's stages and spending (``--stages 3,5,8 --spending obrien-fleming``) reads each cell
as the bench does; without them its first-stage reading can differ (the bench tests the first
stage at its share of alpha)."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from harness.analysis.questions.compare import _design
from harness.analysis.stats import compare
from harness.bench import derive_bench
from harness.bench.results import VALUE, Rows
from harness.bench.verdict import verdict_of
from harness.core.errors import UserError
from tests.bench.test_bench import CELLS, PROTOCOLS, _rows

CAND, BASE = "torch.optim:SGD", "AdamW"
SHIFT = {(8, 4096): 0.5, (8, 8192): 0.012, (16, 4096): 0.0, (16, 8192): 0.006}
"""The candidate above the baseline per cell: clear (stops at the first stage), about 4 and 2
sds of a seed's difference (later stages or the cap), none (the cap)."""
WAITING = (16, 8192)
"""The cell whose last stage's seeds (6-8) have not run."""


def _derived(tmp_path: Path, spending: str) -> object:
    doc = yaml.safe_load((PROTOCOLS / "ci.yaml").read_text())
    doc["name"] = "bench_staged"
    doc["seeds"]["stages"] = [3, 5, 8]
    doc["verdict"] = {**doc.get("verdict", {}), "spending": spending}
    path = tmp_path / "staged.yaml"
    path.write_text(yaml.safe_dump(doc))
    return derive_bench(CAND, root=tmp_path, protocol=path)


def _staged_rows(seed: int) -> Rows:
    """The CI protocol's rows with confirmation seeds 1-8 (5 fewer in :data:`WAITING`): a seed's
    noise shared by both arms (sd 0.01, the seed is a blocking factor), each arm's own sd 0.002."""
    rows = _rows(0.0, confirm_seeds=8)[0]
    rng = np.random.default_rng(seed)
    shared = {(*cell, s): rng.normal(0, 0.01) for cell in CELLS for s in range(1, 9)}
    c = rows.confirm.copy()
    cell = list(zip(c["batch_size"], c["tokens"], strict=True))
    shift = np.array([SHIFT[x] for x in cell]) * (c["label"] == CAND)
    noise = np.array([shared[(*x, s)] for x, s in zip(cell, c["seed"], strict=True)])
    c[VALUE] = 5.0 + shift + noise + rng.normal(0, 0.002, len(c))
    c = c[~((c["batch_size"] == WAITING[0]) & (c["tokens"] == WAITING[1]) & (c["seed"] > 5))]
    return replace(rows, confirm=c.reset_index(drop=True))


def _compare(rows: Rows, **kw: object) -> pd.DataFrame:
    seeds = rows.confirm.assign(arm=rows.confirm["label"])
    return compare(seeds, ["batch_size", "tokens"], BASE, CAND, alternative="two-sided", **kw)


@pytest.mark.parametrize(("spending", "seed"), [("obrien-fleming", 1), ("pocock", 2)])
def test_a_staged_bench_and_compare_with_its_stages_give_the_same_reading(
    tmp_path: Path, spending: str, seed: int
) -> None:
    d = _derived(tmp_path, spending)
    rows = _staged_rows(seed)
    v = verdict_of(d, rows)
    table = _compare(rows, stages=d.protocol.stages)
    stages = []
    for c in v.comparisons:
        r = table[
            (table["batch_size"] == c.cell["batch_size"]) & (table["tokens"] == c.cell["tokens"])
        ].iloc[0]
        assert (c.reading in ("better", "worse")) == (r["significant"] == "yes"), (c, r)
        assert c.reading != "pending" or "inconclusive on 5 seeds" in r["note"]
        assert c.difference == pytest.approx(r["diff"], abs=1e-12)
        assert (c.ci_low, c.ci_high) == pytest.approx((r["ci_low"], r["ci_high"]), abs=1e-12)
        assert c.confidence < 1 and c.p_adjusted == pytest.approx(r["p_adj"])
        assert (c.n_candidate, c.n_baseline, c.stage + 1) == (r["n_b"], r["n_a"], r["stage"])
        assert c.method == r["method"] == "paired by seed"
        stages.append(c.stage)
    readings = {(c.cell["batch_size"], c.cell["tokens"]): c.reading for c in v.comparisons}
    assert readings[(8, 4096)] == "worse" and readings[WAITING] in ("worse", "pending")
    assert len(set(stages)) >= 2, stages  # the cells stopped at different stages


def test_without_its_stages_compare_reads_the_first_stage_at_the_full_alpha(
    tmp_path: Path,
) -> None:
    """The finding: on the first stage's rows alone, ``compare`` (alpha 0.05) reads a cell
    that the bench (its first stage at 3/16 of alpha) leaves open."""
    d = _derived(tmp_path, "obrien-fleming")
    rows = _staged_rows(28)  # a draw where compare at the full alpha reads 2 cells more
    first = replace(rows, confirm=rows.confirm[rows.confirm["seed"] <= 3])
    plain, staged = _compare(first), _compare(first, stages=d.protocol.stages)
    read = {
        (c.cell["batch_size"], c.cell["tokens"]): c.reading in ("better", "worse")
        for c in verdict_of(d, first).comparisons
    }
    cells = zip(staged["batch_size"], staged["tokens"], strict=True)
    assert [read[x] for x in cells] == list(staged["significant"] == "yes")
    assert (plain["significant"] == "yes").sum() == 3
    assert (staged["significant"] == "yes").sum() == 1


def test_compare_stages_options_are_checked() -> None:
    assert _design("3,5,8", "pocock").weights == (1 / 3, 1 / 3, 1 / 3)
    with pytest.raises(UserError, match="comma-separated seed counts"):
        _design("3,five", "pocock")
    with pytest.raises(UserError, match="increasing seed counts"):
        _design("3,3", "pocock")
    with pytest.raises(UserError, match="unknown --spending 'linear'; valid choices"):
        _design("3,5", "linear")
    seeds = _staged_rows(1).confirm
    seeds = seeds.assign(arm=seeds["label"])
    with pytest.raises(UserError, match="--stages reads as harness bench does: --alternative"):
        compare(seeds, ["batch_size"], BASE, CAND, stages=_design("3,5,8", "pocock"))


def test_analyze_compare_takes_the_stages_on_the_command_line(tmp_path: Path) -> None:
    """``harness analyze compare --stages 3,5,8`` on imported seeds: the staged reading, its
    stage column and the stages in its notes; a bad value is one line, exit 2."""
    from click.testing import CliRunner

    from harness.cli import main

    rng = np.random.default_rng(0)
    lines = ["optimizer,tokens,seed,val_loss"]
    for tok, shift in ((1000, 0.01), (2000, 0.0)):
        for s in range(1, 9):
            shared = rng.normal(0, 0.01)
            for opt, d in (("adamw", 0.0), ("sgd", shift)):
                lines.append(f"{opt},{tok},{s},{5 + d + shared + rng.normal(0, 0.002)!r}")
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    runner, res = CliRunner(), ["--results", str(tmp_path / "res")]
    imported = runner.invoke(main, ["import", str(tmp_path / "r.csv"), "--grid", "g", *res])
    assert imported.exit_code == 0, imported.output
    args = ["analyze", "compare", "g", "--a", "optimizer=adamw", "--b", "optimizer=sgd"]
    args += ["--by", "tokens", "--metric", "val_loss", "--format", "csv", *res]
    out = runner.invoke(main, [*args, "--stages", "3,5,8"])
    assert out.exit_code == 0, out.output
    table = pd.read_csv(io.StringIO(out.stdout))
    assert list(table["significant"]) == ["yes", "no"] and list(table["stage"]) == [2, 3]
    assert "sequential stages of 3, 5, 8 seeds per arm" in out.stderr
    bad = runner.invoke(main, [*args, "--stages", "3,x"])
    assert bad.exit_code == 2 and "--stages 3,x: comma-separated seed counts" in bad.output
