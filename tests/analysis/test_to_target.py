"""To-target as a comparison of arms (issue 39): curves with the shape of a published speed-run
table (six arms, each with its own run length, 1 to 10 seeds, validation loss every 125 steps)
imported as a researcher would, then read by ``targets``, ``profiles``, ``best`` and
``speedup --target``."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from harness import api
from harness.cli import main
from tests.analysis.speedrun_shape import ARMS, EVERY, TARGET, write_csvs

TARGET_ARGS = ("--target", str(TARGET), "--curve", "val_loss")


@pytest.fixture(scope="module")
def speedrun(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Results root holding grid ``sr``: the imported runs and their curves."""
    folder = tmp_path_factory.mktemp("speedrun")
    runs, curves = write_csvs(folder)
    root = folder / "results"
    api.import_results(runs, grid="sr", results=root, curves=curves)
    return root


def invoke(*args: object) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


def rows(root: Path, *args: object) -> tuple[list[dict], str]:
    code, out, err = invoke("analyze", *args, "sr", "--results", root, "--format", "json")
    assert code == 0, out + err
    return json.loads(out), err


def test_profiles_compare_arms_with_their_own_run_lengths_in_one_cell(speedrun):
    # finding 1: tokens made a cell, so six cells of one arm each, every score 1/6
    got, err = rows(speedrun, "profiles", *TARGET_ARGS, "--measure", "steps")
    arms = {r["method"]: r for r in got}
    assert set(arms) == {a.label for a in ARMS}
    assert {r["cells"] for r in got} == {1} and all(r["reached"] == 1 for r in got)
    assert arms["record6"]["rho(1)"] == 1 and arms["record1"]["rho(1)"] == 0
    assert "each arm's own, not a cell" in err
    # each arm's time to target and its ratio to the best are printed beside the score
    best = arms["record6"]["steps_to_target"]
    for r in got:
        assert r["ratio"] == pytest.approx(r["steps_to_target"] / best)


def test_a_table_of_single_arm_cells_is_refused_in_one_line(speedrun):
    code, out, err = invoke(
        "analyze", "profiles", "sr", "--results", speedrun, *TARGET_ARGS, "--by", "tokens"
    )
    assert code == 2 and "holds a single arm" in out + err
    assert len((out + err).strip().splitlines()) == 1


def test_targets_reads_steps_and_tokens_by_either_crossing(speedrun):
    first, err = rows(speedrun, "targets", *TARGET_ARGS, "--crossing", "first")
    assert "--crossing first" in err
    inter, err = rows(speedrun, "targets", *TARGET_ARGS)
    assert "--crossing interpolated" in err
    by_id = {r["run_id"]: r for r in inter}
    for r in first:  # AlgoPerf: an evaluation step, never earlier than the interpolated one
        s = r["steps_to_target"]
        assert s % EVERY == 0 or s == r["steps"]
        assert s >= by_id[r["run_id"]]["steps_to_target"] > s - EVERY
        # tokens derived from steps x batch_size x seq_len (the curves have none)
        assert r["tokens_to_target"] == pytest.approx(s * r["tokens"] / r["steps"])
    assert "tokens" in first[0] and "steps" in first[0]  # the arm's own length, shown


def test_time_to_target_notes_that_the_hardware_differs(speedrun):
    _, err = rows(speedrun, "targets", *TARGET_ARGS)
    assert "gpus_per_run differs between runs" in err and "record4: 2" in err


def test_best_prints_the_arm_and_keeps_its_run_length(speedrun):
    got, err = rows(speedrun, "best", "--metric", "val_loss")
    assert {r["method"] for r in got} == {a.label for a in ARMS}
    assert "cells by tokens" not in err
    assert {r["n"] for r in got} == {a.seeds for a in ARMS}


def test_left_censored_and_stopped_runs_are_named(tmp_path):
    # a run already below the target at its first point; one stopped early above it
    pts = [
        ("early", 0, 125, 3.2),
        ("early", 0, 250, 3.1),
        ("slow", 0, 125, 3.9),
        ("slow", 0, 250, 3.5),
        ("cut", 0, 125, 3.9),
    ]
    runs = tmp_path / "runs.csv"
    runs.write_text(
        "label,optimizer,seed,steps,steps_done,status,val_loss\n"
        "early,adamw,0,250,250,completed,3.1\n"
        "slow,adamw,0,250,250,completed,3.5\n"
        "cut,adamw,0,250,125,completed,3.9\n"
    )
    curves = tmp_path / "curves.csv"
    curves.write_text(
        "label,seed,step,val_loss\n" + "".join(f"{a},{s},{t},{v}\n" for a, s, t, v in pts)
    )
    root = tmp_path / "results"
    api.import_results(runs, grid="g", results=root, curves=curves)
    answer = api.analyze("targets", "g", results=root, target=3.3, curve="val_loss")
    t = answer.table.set_index("method")
    assert bool(t.loc["early", "left_censored"]) and not bool(t.loc["slow", "left_censored"])
    assert "upper bound" in " ".join(answer.notes)
    assert math.isinf(t.loc["slow", "steps_to_target"]) and not bool(t.loc["slow", "stopped"])
    assert bool(t.loc["cut", "stopped"]) and bool(t.loc["cut", "censored"])
    assert "stopped before their planned length" in " ".join(answer.notes)


def _hand_first_crossings(folder: Path) -> dict[str, list[float]]:
    """Each arm's per-seed first evaluation step at or below the target, from the CSV."""
    pts = pd.read_csv(folder / "curves.csv")
    hit = pts[pts["val_loss"] <= TARGET].groupby(["label", "seed"])["step"].min()
    return {arm: list(hit[arm].astype(float)) for arm in hit.index.get_level_values(0).unique()}


def test_speedup_to_a_target_is_the_ratio_of_median_steps(speedrun):
    # finding 2: speedup fitted end-of-run values and needed 3 budgets
    got, err = rows(
        speedrun,
        "speedup",
        *TARGET_ARGS,
        "--a",
        "label=record3",
        "--b",
        "label=record6",
        "--crossing",
        "first",
        "--threshold",
        "0.004",
    )
    (row,) = got
    hand = _hand_first_crossings(speedrun.parent)
    want = float(np.median(hand["record3"]) / np.median(hand["record6"]))
    assert row["speedup"] == pytest.approx(want)
    assert row["ci_low"] < want < row["ci_high"]
    assert row["n record3"] == 4 and row["n record6"] == 8
    # the speed-run's rule: mean over seeds at the last common step, (target - mean) sqrt(n)
    pts = pd.read_csv(speedrun.parent / "curves.csv")
    last = pts[(pts["label"] == "record6") & (pts["step"] == 2875)]["val_loss"]
    assert row["margin record6"] == pytest.approx((TARGET - last.mean()) * math.sqrt(8))
    assert row["passes record6"] is bool(row["margin record6"] >= 0.004)
    assert "(3.28 - mean) * sqrt(n) >= 0.004" in err


def test_speedup_keeps_runs_that_never_reach_and_gives_no_interval_on_one_seed(speedrun):
    # record1 (one seed) against record6: a point estimate, no zero-width interval
    got, _ = rows(speedrun, "speedup", *TARGET_ARGS, "--a", "label=record1", "--b", "label=record6")
    assert got[0]["ci_low"] is None or math.isnan(float(got[0]["ci_low"]))
    # at a target only some of record5's seeds reach, the others count as +inf, not dropped
    code, out, _ = invoke(
        "analyze",
        "speedup",
        "sr",
        "--results",
        speedrun,
        "--target",
        "3.2535",
        "--curve",
        "val_loss",
        "--a",
        "label=record5",
        "--b",
        "label=record6",
        "--format",
        "json",
    )
    assert code == 0, out
    (row,) = json.loads(out)
    assert row["n record5"] == 10 and row["reached record5"] < 10


def _figure_data(root: Path):
    from harness.analysis.present.figures.common import FigureData
    from harness.analysis.present.figures.options import FigureOptions
    from harness.analysis.rows.arm_labels import add_methods
    from harness.analysis.rows.load import select
    from harness.analysis.rows.preparation import prepare
    from harness.core.targets import Target

    sel = select("sr", results=root)
    rows = add_methods(prepare(sel.frame("runs"), "val_loss", "min").rows)
    options = FigureOptions(target=Target("val_loss", TARGET))
    frames = {"curves": sel.frame("curves")}
    return FigureData(rows=rows, metric="val_loss", goal="min", frames=frames, options=options)


def test_performance_profile_subtitle_says_median_and_seeds_per_arm(speedrun):
    # finding 3: "one config, mean over 10 seeds" for a median over 1, 1, 4, 4, 10 and 8
    from harness.analysis.present.figures.performance_profile import draw

    title = " ".join(draw(_figure_data(speedrun))._suptitle.get_text().split())
    assert "median over its seeds" in title and "mean over" not in title
    assert "record1 1, record2 1, record3 4, record4 4, record5 10, record6 8" in title


def test_loss_curves_overlay_the_validation_loss_and_zoom_on_the_target(speedrun):
    from harness.analysis.present.figures.loss_curves import draw

    fig = draw(_figure_data(speedrun))
    (ax,) = fig.axes  # one panel: the arms' own lengths are no condition
    assert ax.get_ylabel() == "validation loss"
    title = " ".join(fig._suptitle.get_text().split())
    assert "validation loss" in title and "record5 10" in title
    drawn = {line.get_label() for line in ax.get_lines()}
    assert {a.label for a in ARMS} <= drawn
    assert any(list(line.get_ydata()) == [TARGET, TARGET] for line in ax.get_lines())
    low, high = ax.get_ylim()
    assert low < TARGET < high and high - low < 0.5  # near the target, not 3 to 11


def test_performance_profile_of_single_arm_cells_is_skipped_with_the_reason(speedrun):
    from harness.analysis.present.figures.common import FigureSkipped
    from harness.analysis.present.figures.performance_profile import draw

    data = _figure_data(speedrun)
    sizes = {a.label: 8 * 2**k for k, a in enumerate(ARMS)}  # a batch size per arm: a condition
    apart = data.rows.assign(batch_size=data.rows["method"].map(sizes))
    with pytest.raises(FigureSkipped, match="holds a single arm"):
        draw(dataclasses.replace(data, rows=apart))


def test_best_warns_in_one_line_when_every_cell_holds_a_single_arm(speedrun):
    _, err = rows(speedrun, "best", "--metric", "val_loss", "--by", "tokens")
    assert sum("holds a single arm" in line for line in err.splitlines()) == 1
