"""``harness bench`` without training: protocol files (shipped and bad), the derived grid (equal
budgets, A/A search spaces, baseline runs shared across candidates), and the verdict's reading
of synthetic rows (better, worse, no evidence, not tuned, no verdict)."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from harness.bench import SCALES, derive_bench, find_protocol
from harness.bench.derive import derive
from harness.bench.protocol import load_protocol
from harness.bench.render import verdict_json, verdict_table
from harness.bench.results import VALUE, Rows
from harness.bench.verdict import verdict_of
from harness.cli import main
from harness.core.errors import UserError
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid

PROTOCOLS = Path(__file__).resolve().parents[2] / "protocols"


def _write(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def _protocol_text(**replace: str) -> str:
    """The CI protocol's text with whole lines replaced (key -> new line)."""
    lines = (PROTOCOLS / "ci.yaml").read_text().splitlines()
    for old, new in replace.items():
        hits = [i for i, line in enumerate(lines) if line.split("#")[0].strip().startswith(old)]
        assert hits, old
        lines[hits[0]] = new
    return "\n".join(lines) + "\n"


# --- shipped protocols ----------------------------------------------------------------------------


@pytest.mark.parametrize("scale", sorted(SCALES))
def test_shipped_protocols_follow_the_rules(scale: str) -> None:
    p = find_protocol(scale, None)
    cells = dict(p.cells)
    assert len(cells["batch_size"]) >= 2
    assert max(len(cells.get(a, ())) for a in p.budget_axes) >= 2
    assert len(p.confirm_seeds) >= 3 and not set(p.tune_seeds) & set(p.confirm_seeds)
    assert p.base["lr_min"] == 0.0  # Kaddour: decayed fully
    assert p.baselines[0].optimizer == "adamw"
    if scale == "paper":  # the speed-up needs >= 3 budgets
        assert len(cells["tokens"]) >= 3


def test_every_shipped_default_names_its_source() -> None:
    for name in SCALES.values():
        text = (PROTOCOLS / name).read_text()
        for source in ("AlgoPerf", "Marin", "Kaddour"):
            assert source in text, (name, source)


# --- bad protocol input: one line, exit code 2, nothing written -----------------------------------


BAD = {
    "unknown top key": ({"description:": "descripton: typo"}, "unknown key 'descripton'"),
    "one batch size": (
        {"batch_size:": "  batch_size: [8]"},
        "cells: batch_size: expected a list of >= 2",
    ),
    "two confirmation seeds": ({"confirm:": "  confirm: [1, 2]"}, "at least 3 confirmation seeds"),
    "seeds overlap": ({"confirm:": "  confirm: [0, 1, 2]"}, "are tuning seeds too"),
    "stages not from the confirmation seeds": (
        {"confirm:": "  confirm: [1, 2, 3]\n  stages: [5, 8]"},
        "stages: expected increasing seed counts per arm starting at the 3",
    ),
    "unknown spending": (
        {"alpha:": "  alpha: 0.05\n  spending: linear"},
        "unknown spending 'linear'; valid choices: obrien-fleming, pocock",
    ),
    "lr range upside down": ({"lr: [": "      lr: [1.0e-2, 1.0e-3]"}, "must be >= 0.01"),
    "1-beta >= 1": ({"1-beta1:": "      1-beta1: [0.02, 1.5]"}, "1-beta1: 1.5 >= 1"),
    "too few lrs": ({"lr_points:": "  lr_points: 2"}, "lr_points: expected an integer >= 3"),
    "alpha": ({"alpha:": "  alpha: 1.5"}, "probabilities in (0, 1)"),
    # a key or value the sections' declared fields refuse (tests/bench/test_bench_protocol_fields)
    "description not text": (
        {"description:": "description: [a, b]"},
        "description: expected a string, got ['a', 'b']",
    ),
    "unknown budget key": (
        {"lr_points:": "  lr_point: 3"},
        "budget: unknown key 'lr_point'; valid keys: lr_points, settings, extend_rounds, lr_bounds",
    ),
    "missing budget key": (
        {"settings:": "  extend_rounds: 2"},
        "budget: missing key 'settings' (required: lr_points, settings)",
    ),
    "tuning seed not an integer": (
        {"tune:": "  tune: [0.5]"},
        "seeds: tune: expected a count >= 1 or a list of integer seeds, got [0.5]",
    ),
    "optimizer not a name": (
        {"optimizer: adamw": "    optimizer: 3"},
        "baselines: AdamW: optimizer: expected a non-empty string, got 3",
    ),
    "search key not taken": (
        {"1-beta2:": "      1-momentum: [0.01, 0.1]"},
        "'1-momentum' is not a hyperparameter adamw takes",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_protocol_is_one_line_exit_2_nothing_written(tmp_path: Path, case: str) -> None:
    replace, message = BAD[case]
    path = _write(tmp_path, _protocol_text(**replace))
    results = tmp_path / "results"
    r = CliRunner().invoke(
        main,
        [
            "bench",
            "torch.optim:SGD",
            "--protocol",
            str(path),
            "--results",
            str(results),
            "--dry-run",
        ],
    )
    assert r.exit_code == 2, r.output
    assert message in r.output and r.output.count("\n") == 1, r.output
    assert not results.exists()


def test_missing_protocol_file_and_unknown_scale(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such protocol file"):
        load_protocol(tmp_path / "nope.yaml")
    with pytest.raises(UserError, match="unknown --scale 'huge'; valid choices: ci, local, paper"):
        find_protocol("huge", None)


def test_candidate_that_is_a_baseline_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"is baseline 'AdamW'.*torch\.optim:AdamW"):
        derive_bench("adamw", root=tmp_path, scale="ci")


def test_unknown_candidate_names_the_known_ones(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        main, ["bench", "nosuchopt", "--scale", "ci", "--dry-run", "--results", str(tmp_path / "r")]
    )
    assert r.exit_code == 2 and "adamw" in r.output, r.output


# --- the derived grid -----------------------------------------------------------------------------


def test_every_arm_gets_the_same_budget_and_aa_the_same_search(tmp_path: Path) -> None:
    d = derive_bench("torch.optim:AdamW", root=tmp_path, scale="local")
    base, cand = d.baselines[0], d.candidate
    assert base.configs == cand.configs == 8  # 4 lrs x 2 settings
    assert base.lrs == cand.lrs
    assert list(base.settings) == list(cand.settings)
    assert {s["weight_decay"] for s in cand.settings} == {0.1, 0.0}  # decay 0 is searched


def test_plain_sgd_keeps_its_zero_momentum_and_gets_adamws_lr_range(tmp_path: Path) -> None:
    d = derive_bench("torch.optim:SGD", root=tmp_path, scale="local")
    block = d.document["grid"]["optimizer"]["torch.optim:SGD"]
    assert set(block["zip"]) == {"weight_decay"}  # momentum 0 is not switched on
    assert block["lr"] == list(d.baselines[0].lrs)
    assert d.document["extend"] == {"axes": ["lr"], "rounds": 6, "bounds": {"lr": [1e-5, 10.0]}}


def test_own_float_hyperparameters_get_a_log_range_around_their_default(tmp_path: Path) -> None:
    opt = _write(
        tmp_path,
        """
        import torch

        class Damped(torch.optim.SGD):
            def __init__(self, params, lr=0.1, damping: float = 0.01, decay: float = 0.9):
                super().__init__(params, lr=lr)
    """,
        "damped.py",
    )
    text = _protocol_text(**{"settings:": "  settings: 4"})
    d = derive(load_protocol(_write(tmp_path, text)), f"{opt}:Damped", tmp_path)
    assert d.candidate.label.startswith("damped.py:Damped@")  # however its path was typed
    typed = f"{opt.parent}/./{opt.name}:Damped"
    assert derive(load_protocol(_write(tmp_path, text)), typed, tmp_path).candidate.label == (
        d.candidate.label
    )
    search = dict(d.candidate.search)
    assert (search["damping"].low, search["damping"].high) == (0.001, 0.1)
    assert (search["1-decay"].low, search["1-decay"].high) == (0.01, 0.99)
    s = d.candidate.settings
    assert s[0] == {"damping": 0.01, "decay": 0.9, "weight_decay": 0.1}
    assert s[1] == {"damping": 0.01, "decay": 0.9, "weight_decay": 0.0}
    # quasi-random points inside the ranges, none repeated
    for x in s[2:]:
        assert 0.001 <= x["damping"] <= 0.1 and 0.01 <= x["decay"] <= 0.99
    assert len({tuple(sorted(x.items())) for x in s}) == 4


def test_baseline_runs_are_the_same_runs_for_every_candidate(tmp_path: Path) -> None:
    ids = {}
    for cand in ("torch.optim:AdamW", "torch.optim:SGD"):
        d = derive_bench(cand, root=tmp_path, scale="ci")
        from harness.bench.derive import write_grid

        g = load_grid(write_grid(d), vocab=vocab_lookup(tmp_path))
        ids[cand] = {r.run_id for r in g.runs if r.label == "AdamW"}
        assert len(ids[cand]) == 4 * 3  # 4 cells x 3 configurations x 1 tuning seed
    assert ids["torch.optim:AdamW"] == ids["torch.optim:SGD"]


def test_dry_run_says_what_each_phase_runs_and_the_paper_gpu_hours(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        main,
        [
            "bench",
            "torch.optim:SGD",
            "--scale",
            "paper",
            "--dry-run",
            "--results",
            str(tmp_path / "r"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "AdamW (baseline): 90 runs" in r.output
    assert "torch.optim:SGD (candidate): 90 runs" in r.output
    assert "phase 3, confirm: 36 runs" in r.output
    assert "phase 4, sequential confirmation: at most 60 runs" in r.output  # 6 cells, 2 arms, 5
    hours = float(r.output.split(" GPU-hours")[0].rsplit(" ", 1)[1].replace(",", ""))
    assert 1000 < hours < 5000


# --- the verdict's reading ------------------------------------------------------------------------

CELLS = [(8, 4096), (8, 8192), (16, 4096), (16, 8192)]
LRS = [1e-3, 5.477e-3, 3e-2]


def _rows(
    cand_shift: float, *, cand_curve: dict[float, float] | None = None, confirm_seeds: int = 3
) -> tuple[Rows, object]:
    """Synthetic rows of the CI protocol: AdamW's loss is 5 + (log10 lr + 2.26)^2 (best in the
    middle), seeds add a known spread; the candidate's is AdamW's + ``cand_shift``."""
    rng = np.random.default_rng(0)
    tuning, confirm = [], []
    for label, shift in (("AdamW", 0.0), ("torch.optim:SGD", cand_shift)):
        for bs, tok in CELLS:
            for lr in LRS:
                curve = cand_curve if cand_curve and label != "AdamW" else None
                loss = curve[lr] if curve else 5 + (np.log10(lr) + 2.26) ** 2 + shift
                tuning.append(
                    {
                        "label": label,
                        "batch_size": bs,
                        "tokens": tok,
                        "lr": lr,
                        "seed": 0,
                        "confirm": None,
                        "extend_round": None,
                        VALUE: loss,
                    }
                )
            best = min(LRS, key=lambda x: 5 + (np.log10(x) + 2.26) ** 2)
            for s in range(1, 1 + confirm_seeds):
                confirm.append(
                    {
                        "label": label,
                        "batch_size": bs,
                        "tokens": tok,
                        "lr": best,
                        "seed": s,
                        "confirm": True,
                        "extend_round": None,
                        VALUE: 5.0 + shift + rng.normal(0, 0.01),
                    }
                )
    rows = Rows(
        "val_loss",
        "min",
        pd.DataFrame(tuning),
        pd.DataFrame(confirm),
        ("label", "batch_size", "tokens"),
        ("lr",),
    )
    return rows, None


@pytest.fixture
def ci_sgd(tmp_path: Path):
    return derive_bench("torch.optim:SGD", root=tmp_path, scale="ci")


def test_verdict_no_evidence_for_equal_arms(ci_sgd) -> None:
    v = verdict_of(ci_sgd, _rows(0.0)[0])
    assert [c.reading for c in v.comparisons] == ["no evidence"] * 4
    assert all(c.ci_low < 0 < c.ci_high for c in v.comparisons)
    assert all(0 < c.detectable < 0.2 for c in v.comparisons)  # the power line: ~3 seed sds
    assert "no evidence 4" in verdict_table(v)
    # each mean under its own heading (before: "candidate", then "baseline mean")
    head = next(ln for ln in verdict_table(v).splitlines() if ln.startswith("cell "))
    assert head.split()[:6] == ["cell", "baseline", "candidate", "mean", "baseline", "mean"]
    row = next(ln for ln in verdict_table(v).splitlines() if ln.startswith("batch_size"))
    c = v.comparisons[0]
    assert f"(n={c.n_candidate})" in row


@pytest.mark.parametrize(("shift", "reading"), [(0.5, "worse"), (-0.5, "better")])
def test_verdict_reads_a_clear_difference(ci_sgd, shift: float, reading: str) -> None:
    v = verdict_of(ci_sgd, _rows(shift)[0])
    assert [c.reading for c in v.comparisons] == [reading] * 4
    assert all(c.p_adjusted < 0.05 for c in v.comparisons)
    assert all(abs(c.difference - shift) < 0.05 for c in v.comparisons)
    out = json.loads(verdict_json(v))
    assert out["summary"] == f"{reading} 4"
    assert len(out["totals"]) == 2 and out["totals"][0]["budget"] == out["totals"][1]["budget"]


def test_the_verdict_names_banerjees_method_where_seed_counts_differ(ci_sgd) -> None:
    rows = _rows(0.5)[0]
    assert "Banerjee" not in verdict_table(verdict_of(ci_sgd, rows))
    confirm = rows.confirm
    dropped = confirm[(confirm["label"] == "AdamW") & (confirm["seed"] == 3)].index[:1]
    fewer = Rows(rows.metric, rows.goal, rows.tuning, confirm.drop(dropped), rows.keys, rows.over)
    v = verdict_of(ci_sgd, fewer)
    assert {(c.n_candidate, c.n_baseline) for c in v.comparisons} >= {(3, 2)}
    assert "Banerjee's where the seed counts differ" in verdict_table(v)


def _diverge(rows: Rows, which: pd.Series) -> Rows:
    c = rows.confirm
    return replace(rows, confirm=c.assign(**{VALUE: c[VALUE].mask(which, np.inf)}))


def test_one_diverged_confirmation_seed_decides_no_cell(ci_sgd) -> None:
    """A diverged seed is an outcome tested by Fisher's exact test in the Holm family: one in
    three reads no verdict (its losses are not tested), never worse without a test."""
    rows = _rows(-0.5)[0]  # by the numbers the candidate is better
    c = rows.confirm
    seed_2 = c["seed"] == 2
    cand, base = seed_2 & (c["label"] == "torch.optim:SGD"), seed_2 & (c["label"] == "AdamW")
    for which in (cand, base, cand | base):
        v = verdict_of(ci_sgd, _diverge(rows, which))
        assert [x.reading for x in v.comparisons] == ["no verdict"] * 4
        assert all(x.method.startswith("fisher") for x in v.comparisons)
        assert all(np.isnan(x.difference) and np.isnan(x.ci_low) for x in v.comparisons)
    why = verdict_of(ci_sgd, _diverge(rows, cand)).comparisons[0].why
    assert "diverged on 1 of 3 (torch.optim:SGD) and 0 of 3 (AdamW)" in why
    assert "Fisher's exact test p = 1" in why


def test_an_arm_that_diverges_on_every_seed_reads_worse_by_fishers_test(ci_sgd) -> None:
    rows = _rows(-0.5, confirm_seeds=8)[0]
    v = verdict_of(ci_sgd, _diverge(rows, rows.confirm["label"] == "torch.optim:SGD"))
    assert [x.reading for x in v.comparisons] == ["worse"] * 4  # 8 of 8 against 0 of 8
    assert all(x.p_adjusted < 0.05 for x in v.comparisons)
    three = _rows(-0.5)[0]  # 3 of 3 against 0 of 3: Fisher's p = 0.1, no verdict
    v = verdict_of(ci_sgd, _diverge(three, three.confirm["label"] == "torch.optim:SGD"))
    assert [x.reading for x in v.comparisons] == ["no verdict"] * 4


def test_confirmation_runs_of_an_earlier_selection_are_left_out(ci_sgd) -> None:
    # a protocol given more extension rounds moves the best on: the runs that confirmed the
    # earlier best are not the new best's
    rows = _rows(0.5)[0]
    c = rows.confirm
    earlier = c[c["label"] == "torch.optim:SGD"].assign(lr=1e-3, **{VALUE: 100.0})
    v = verdict_of(ci_sgd, replace(rows, confirm=pd.concat([c, earlier], ignore_index=True)))
    assert [x.reading for x in v.comparisons] == ["worse"] * 4
    assert all(x.n_candidate == 3 and abs(x.difference - 0.5) < 0.05 for x in v.comparisons)


def test_best_on_an_edge_is_not_tuned(ci_sgd) -> None:
    edge = {1e-3: 7.0, 5.477e-3: 6.0, 3e-2: 5.0}  # still falling at the largest lr tried
    v = verdict_of(ci_sgd, _rows(-0.5, cand_curve=edge)[0])
    assert [c.reading for c in v.comparisons] == ["not tuned"] * 4
    assert "largest tried" in v.comparisons[0].why
    assert all(np.isnan(c.difference) for c in v.comparisons)  # no number for an untuned arm


def test_one_confirmation_seed_gives_no_verdict(ci_sgd) -> None:
    v = verdict_of(ci_sgd, _rows(0.5, confirm_seeds=1)[0])
    assert [c.reading for c in v.comparisons] == ["no verdict"] * 4


def _speedup_verdict(tmp_path: Path, budgets: list[int], speed: float = 2.0):
    """AdamW's L(D) = 3 + 100 D^-0.5; the candidate reaches at D what AdamW reaches at
    ``speed`` D."""
    text = _protocol_text(**{"tokens:": f"  tokens: {budgets}"})
    d = derive(load_protocol(_write(tmp_path, text)), "torch.optim:SGD", tmp_path)
    rng = np.random.default_rng(1)
    tuning, confirm = [], []
    for label, factor in (("AdamW", 1.0), ("torch.optim:SGD", speed)):
        for bs in (8, 16):
            for tok in budgets:
                law = 3 + 100 * (factor * tok) ** -0.5
                for lr in LRS:
                    tuning.append(
                        {
                            "label": label,
                            "batch_size": bs,
                            "tokens": tok,
                            "lr": lr,
                            "confirm": None,
                            "extend_round": None,
                            VALUE: law + (np.log10(lr) + 2.26) ** 2,
                        }
                    )
                for seed in (1, 2, 3):
                    confirm.append(
                        {
                            "label": label,
                            "batch_size": bs,
                            "tokens": tok,
                            "lr": 5.477e-3,
                            "seed": seed,
                            "confirm": True,
                            "extend_round": None,
                            VALUE: law + rng.normal(0, 0.002),
                        }
                    )
    rows = Rows(
        "val_loss",
        "min",
        pd.DataFrame(tuning),
        pd.DataFrame(confirm),
        ("label", "batch_size", "tokens"),
        ("lr",),
    )
    return verdict_of(d, rows)


def test_speedup_with_three_budgets_is_unchecked_and_not_read(tmp_path: Path) -> None:
    v = _speedup_verdict(tmp_path, [4096, 8192, 16384])
    assert len(v.speedups) == 2  # per batch size
    for s in v.speedups:
        assert s.reading == "unchecked", s  # the ratio stands, no better/worse reading
        assert s.why.startswith("fewer than 4 token budgets")
        assert s.ci_low < 2.0 < s.ci_high and abs(s.ratio - 2.0) < 0.2
        assert s.fit_check.startswith("unchecked: 3 budgets")  # the model check, said
        assert "extrapolated" in s.note  # a ratio of 2 reads AdamW's fit past its data: said
    assert "data-efficiency speed-up" in verdict_table(v)


def test_speedup_with_four_budgets_reads_the_candidates_data_efficiency(tmp_path: Path) -> None:
    """Read where the ratio is interpolated (the candidate needs 2x AdamW's tokens: 0.5x, inside
    AdamW's budgets); a 2x speed-up is extrapolated past AdamW's budgets: unchecked, and said
    why (:data:`harness.bench.verdict.EXTRAPOLATED_WHY`)."""
    v = _speedup_verdict(tmp_path, [4096, 8192, 16384, 32768], speed=0.5)
    assert len(v.speedups) == 2
    for s in v.speedups:
        assert s.reading == "worse" and s.ci_low < 0.5 < s.ci_high and not s.why, s
        assert abs(s.ratio - 0.5) < 0.05
    v = _speedup_verdict(tmp_path, [4096, 8192, 16384, 32768])
    for s in v.speedups:
        assert s.reading == "unchecked" and s.ci_low < 2.0 < s.ci_high, s
        assert s.why.startswith("extrapolated: AdamW's power law") and abs(s.ratio - 2.0) < 0.2
    assert "unchecked: extrapolated" in verdict_table(v)


def test_an_arm_with_part_of_its_budget_is_not_tuned(ci_sgd) -> None:
    rows = _rows(0.5)[0]
    t = rows.tuning
    dropped = t[~((t["label"] == "torch.optim:SGD") & (t["lr"] == 1e-3))]  # a failed config
    v = verdict_of(
        ci_sgd, Rows(rows.metric, rows.goal, dropped, rows.confirm, rows.keys, rows.over)
    )
    assert [c.reading for c in v.comparisons] == ["not tuned"] * 4
    assert "only 2 of torch.optim:SGD's 3 configurations" in v.comparisons[0].why


# --- one two-arm comparison for the bench and analyze compare -----------------------------------


def _paired_rows(shifts: list[float]) -> Rows:
    """The CI protocol's rows where each confirmation seed moves both arms alike (the seed is a
    blocking factor: sd 0.1 shared, 0.005 each arm's own); the candidate is ``shifts[i]`` off
    in cell i."""
    rows = _rows(0.0)[0]
    rng = np.random.default_rng(7)
    shared = {(bs, tok, s): rng.normal(0, 0.1) for bs, tok in CELLS for s in (1, 2, 3)}
    shift = {cell: d for cell, d in zip(CELLS, shifts, strict=True)}
    c = rows.confirm.copy()
    for i, r in c.iterrows():
        cell = (r["batch_size"], r["tokens"])
        d = shift[cell] if r["label"] == "torch.optim:SGD" else 0.0
        c.loc[i, VALUE] = 5.0 + d + shared[(*cell, r["seed"])] + rng.normal(0, 0.005)
    return replace(rows, confirm=c)


def _analyze_compare(rows: Rows) -> pd.DataFrame:
    from harness.analysis.stats import compare

    seeds = rows.confirm.assign(arm=rows.confirm["label"])
    return compare(
        seeds, ["batch_size", "tokens"], "AdamW", "torch.optim:SGD", alternative="two-sided"
    )


def test_bench_and_analyze_compare_give_the_same_reading_difference_and_interval(ci_sgd) -> None:
    rows = _paired_rows([-0.04, 0.0, 0.03, 0.004])
    v = verdict_of(ci_sgd, rows)
    table = _analyze_compare(rows)
    readings = []
    for c in v.comparisons:
        bs, tok = c.cell["batch_size"], c.cell["tokens"]
        r = table[(table["batch_size"] == bs) & (table["tokens"] == tok)].iloc[0]
        assert c.method == r["method"] == "paired by seed"
        assert c.difference == pytest.approx(r["diff"], abs=1e-12)
        assert (c.ci_low, c.ci_high) == pytest.approx((r["ci_low"], r["ci_high"]), abs=1e-12)
        assert c.p_adjusted == pytest.approx(r["p_adj"])
        assert (c.reading in ("better", "worse")) == (r["significant"] == "yes")
        assert (c.reading in ("better", "worse")) == (not c.ci_low < 0 < c.ci_high)
        readings.append(((c.cell["batch_size"], c.cell["tokens"]), c.reading))
    # paired by seed, a 0.03-0.04 shift reads against a 0.1 seed sd that Welch could not see
    assert dict(readings) == dict(
        zip(CELLS, ["better", "no evidence", "worse", "no evidence"], strict=True)
    )
    assert "paired by seed" in verdict_table(v)
    # the power line: from the per-seed differences' variance pooled over the cells, with its
    # range, which holds the difference the true variance (2 x 0.005^2) detects
    from harness.analysis.stats import detectable

    truth = detectable(2 * 0.005**2, 3, 0.0, 3, alpha=0.05 / 4, two_sided=True, target=0.8)
    est, lo, hi = v.power_line
    assert lo < est < hi and lo <= truth <= hi, (v.power_line, truth)
    assert "the 90% range of the variance pooled over the 4 tested cell(s)" in verdict_table(v)


def test_identical_seeds_give_no_verdict_in_the_bench_and_in_analyze_compare(ci_sgd) -> None:
    rows = _rows(0.0)[0]
    c = rows.confirm.copy()
    c[VALUE] = 5.0 + np.where(c["label"] == "AdamW", 0.0, 1e-9)  # no spread at all
    rows = replace(rows, confirm=c)
    v = verdict_of(ci_sgd, rows)
    assert [x.reading for x in v.comparisons] == ["no verdict"] * 4
    assert all("identical seeds" in x.why for x in v.comparisons)
    assert list(_analyze_compare(rows)["significant"]) == ["n/a"] * 4


def test_two_files_of_one_name_are_two_arms(tmp_path: Path) -> None:
    body = "import torch\n\nclass MySGD(torch.optim.SGD):\n    pass\n"
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "sgdlike.py").write_text(body)
    p = load_protocol(PROTOCOLS / "ci.yaml")
    a = derive(p, f"{tmp_path}/a/sgdlike.py:MySGD", tmp_path)
    b = derive(p, f"{tmp_path}/b/sgdlike.py:MySGD", tmp_path)
    assert a.candidate.label != b.candidate.label
    assert a.candidate.label.startswith("sgdlike.py:MySGD@") and a.path != b.path


def test_a_workload_protocol_names_its_workload_not_a_model_or_dataset(tmp_path: Path) -> None:
    """The test suite's quadratic protocol (tests/bench/quadratic.yaml): before, its verdict
    said "not tested: models other than the default; data other than the default dataset", of
    runs that have neither (the workload is their model and data)."""
    p = Path(__file__).with_name("quadratic.yaml")
    d = derive(load_protocol(p), "torch.optim:SGD", tmp_path)
    untested = verdict_of(d, _rows(0.5)[0]).untested
    assert "workloads other than quadratic" in untested, untested
    assert not [u for u in untested if u.startswith(("models", "data"))], untested
    gpt = derive_bench("torch.optim:SGD", root=tmp_path, scale="ci")
    assert "models other than tiny" in verdict_of(gpt, _rows(0.5)[0]).untested
