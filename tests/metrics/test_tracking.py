"""Metrics through training (``track:``): recorded at evaluation points, equal to the end-of-run
metrics of the same weights, stored as curve columns beside old curves, queryable."""

from __future__ import annotations

import math

import pytest

from harness.analysis.testing import make_run, write_run
from harness.core.errors import UserError
from harness.metrics.catalogue import TRACK_GROUPS, track_names
from harness.store import db
from harness.store.rows import write_result
from harness.train.loop import train
from tests.runs import tiny_run

# Exact float32 arithmetic of the CPU (tests/train/test_gpu.py checks the GPU path, with
# tolerances).
pytestmark = pytest.mark.usefixtures("on_the_cpu", "one_thread")


ALL = ["embedding", "head_mu_norm", "head_rho", "buckets"]  # the head's iso: same code, slow
# constant lr, no warmup: the first 2 steps of a 6-step run are a 2-step run (batches are a
# pure function of (seed, step)), so both hold the same weights after step 2
SETUP = {"schedule": "constant", "warmup_steps": 0, "log_every": 2}


@pytest.mark.slow
def test_tracked_metrics_at_an_eval_point_equal_the_end_of_run_metrics_of_those_weights(
    prepared_data,
):
    run = tiny_run(prepared_data, track=ALL, eval_every=2, **SETUP)
    assert run.execution.tracked == track_names(ALL) and run.arch.tie_weights is False
    result = train(run, data_root=prepared_data, log=None)
    short = train(
        tiny_run(prepared_data, tokens=8 * 32 * 2, **SETUP), data_root=prepared_data, log=None
    )
    at2 = next(p for p in result.curve if p["step"] == 2)
    assert at2["val_loss"] == short.metrics["val_loss"]
    for name in run.execution.tracked:  # end of the 2-step run = step 2 of the 6-step run
        want = short.metrics[name]
        assert want is not None and at2[name] == pytest.approx(want, rel=1e-9, abs=1e-12), name
    at4 = next(p for p in result.curve if p["step"] == 4)
    assert at4["mu_norm"] != at2["mu_norm"] and at4["val_loss_q4"] != at2["val_loss_q4"]
    last = result.curve[-1]  # the end of the run: its own end-of-run values
    assert all(last[n] == result.metrics[n] for n in run.execution.tracked)


@pytest.mark.slow
def test_a_run_that_tracks_nothing_has_the_old_curve_columns(prepared_data):
    result = train(
        tiny_run(prepared_data, eval_every=2, **SETUP), data_root=prepared_data, log=None
    )
    assert set(result.curve[0]) == {"step", "tokens", "train_loss", "lr", "val_loss", "elapsed_s"}


def test_track_names_groups_and_single_metrics_in_catalogue_order():
    assert track_names(["val_loss_q4", "mu_norm", "mu_norm"]) == ("mu_norm", "val_loss_q4")
    assert track_names("buckets,iso") == ("iso", *TRACK_GROUPS["buckets"])
    assert track_names(None) == () and track_names([]) == ()
    with pytest.raises(UserError, match="track: unknown metric 'loss'; valid: embedding, head"):
        track_names(["loss"])


def test_track_is_a_sparse_run_field_that_changes_run_id_only_when_set(prepared_data):
    plain = tiny_run(prepared_data)
    assert plain.execution.track is None
    tracked = tiny_run(prepared_data, track=["rho", "mu_norm"])
    assert tracked.execution.track == "mu_norm,rho" and tracked.run_id != plain.run_id
    assert tiny_run(prepared_data, track=[]).run_id == plain.run_id


def test_tracked_columns_join_old_curves_in_the_curves_view(tmp_path):
    root = tmp_path / "results"
    write_run(root, make_run(grid="g", seed=0), val_ppl=30.0)  # an old-style curve
    new = make_run(grid="g", seed=1, track="mu_norm,val_loss_q4")
    points = [
        {
            "step": s,
            "tokens": 1024 * s,
            "train_loss": 5.0 - s / 10,
            "lr": 1e-3,
            "val_loss": 4.0 if s == 2 else None,
            "elapsed_s": float(s),
            **({"mu_norm": 0.5, "val_loss_q4": 7.5} if s == 2 else {}),
        }
        for s in (1, 2)
    ]
    from harness.core.result import RunResult

    write_result(root, new, RunResult(status="completed", curve=points), {"source": "test"})
    con = db.connect(root, "g")
    got = con.execute(
        "SELECT run_id, step, mu_norm, val_loss_q4 FROM curves WHERE mu_norm IS NOT NULL"
    ).fetchall()
    assert got == [(new.run_id, 2, 0.5, 7.5)]
    old = con.execute(
        "SELECT count(*), count(mu_norm) FROM curves WHERE run_id != ?", [new.run_id]
    ).fetchone()
    assert old[0] == 5 and old[1] == 0
    assert not math.isnan(con.execute("SELECT max(train_loss) FROM curves").fetchone()[0])
    from harness.store.compact import compact

    compact(root, "g")  # one consolidated file: the union of both curves' columns
    again = db.connect(root, "g").execute(
        "SELECT run_id, step, mu_norm, val_loss_q4 FROM curves WHERE mu_norm IS NOT NULL"
    )
    assert again.fetchall() == got


def test_metric_vs_tokens_draws_a_tracked_metric_per_method(tmp_path):
    from click.testing import CliRunner

    from harness.cli import main

    root = tmp_path / "results"
    for opt, drift in (("adamw", 0.3), ("sgd", 0.0)):
        for seed in (0, 1):
            run = make_run(grid="g", optimizer=opt, seed=seed, track="mu_norm")
            pts = [
                {
                    "step": s,
                    "tokens": 1000 * s,
                    "train_loss": 5.0 - s / 10,
                    "mu_norm": 0.1 + drift * s + seed / 100,
                }
                for s in (1, 2, 3)
            ]
            write_run(
                root, run, val_ppl=30.0 + seed, curve=pts, metrics={"mu_norm": pts[-1]["mu_norm"]}
            )
    args = ["figures", "g", "--results", str(root), "--figure", "metric_vs_tokens"]
    r = CliRunner().invoke(main, [*args, "--metric", "mu_norm"])
    assert r.exit_code == 0, r.output
    assert (root / "g" / "figures" / "metric_vs_tokens-mu_norm.png").stat().st_size > 0
    r = CliRunner().invoke(main, [*args, "--metric", "val_loss"])  # a column, never evaluated
    assert "no curve has 'val_loss'" in r.output


def test_a_grid_sets_track_as_a_list_and_its_plan_lists_the_column(tmp_path):
    from harness.data.catalogue import vocab_lookup
    from harness.grid.load import load_grid
    from harness.grid.preview import plan_rows

    p = tmp_path / "g.yaml"
    p.write_text(
        "name: g\nbase: {model: tiny, optimizer: adamw, seq_len: 32, batch_size: 8, "
        "tokens: 2560, lr: 0.001, eval_every: 5, track: [buckets, rho]}\n"
    )
    (run,) = load_grid(p, vocab=vocab_lookup(tmp_path)).runs
    assert run.execution.track == "rho,val_loss_q1,val_loss_q2,val_loss_q3,val_loss_q4"
    assert plan_rows([run])[0]["track"] == run.execution.track
    assert "track" not in plan_rows([tiny_run(tmp_path)])[0]  # unset: not in the plan
    p.write_text(p.read_text().replace("rho]", "isotropy]"))
    with pytest.raises(UserError, match="unknown metric 'isotropy'"):
        load_grid(p, vocab=vocab_lookup(tmp_path))


def test_metric_vs_tokens_of_confirmation_runs_alone_is_skipped_not_a_crash(tmp_path):
    """--where confirm leaves no tuning run to select a configuration: the figure says so
    (it used to divide by zero laying out no panel)."""
    from click.testing import CliRunner

    from harness.cli import main

    root = tmp_path / "results"
    for opt in ("adamw", "sgd"):
        for seed in (1, 2):
            run = make_run(grid="g", optimizer=opt, seed=seed, track="mu_norm", confirm=True)
            pts = [
                {"step": s, "tokens": 1000 * s, "train_loss": 5.0, "mu_norm": 0.1 * s}
                for s in (1, 2)
            ]
            write_run(root, run, val_ppl=30.0 + seed, curve=pts, metrics={"mu_norm": 0.2})
    args = ["figures", "g", "--results", str(root), "--figure", "metric_vs_tokens"]
    r = CliRunner().invoke(main, [*args, "--metric", "mu_norm"])
    assert r.exit_code == 1, r.output  # every figure asked for was skipped (issue 41): exit 1
    assert "no tuning run" in r.output and "Traceback" not in r.output
