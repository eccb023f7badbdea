"""Figures drawn from a real DuckDB over Parquet rows: files, sidecars, and what they show."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib.colors import LogNorm
from matplotlib.patches import Rectangle

import harness.analysis.present.figures as figures_package
from harness.analysis.present.figures import FIGURES, default_figures
from harness.analysis.present.figures.common import FigureData, FigureSkipped
from harness.analysis.present.figures.options import FigureOptions
from harness.analysis.present.figures.render import draw_figures, render_figures, rows_sha256
from harness.analysis.rows.arm_labels import add_methods
from harness.analysis.rows.load import select
from harness.analysis.rows.metric_choice import MetricChoice
from harness.analysis.rows.preparation import prepare
from harness.analysis.rows.selectors import parse_selector
from harness.analysis.stats.frame import METHOD
from harness.analysis.testing import make_run, write_run
from harness.cli import main
from harness.core.errors import UserError
from harness.metrics.catalogue import Goal

BETAS = (0.9, 0.95, 0.99)


def _ppl(b1: float, b2: float, lr: float) -> float:
    # best at beta1 = beta2 = 0.95 and lr 1e-3
    gap = (math.log(1 - b1) - math.log(1 - b2)) ** 2
    return 22 + 2 * gap + 10 * abs(b1 - 0.95) + 3 * math.log(lr / 1e-3) ** 2


def _diverges(b1: float, b2: float) -> bool:
    return b1 == 0.99 and b2 == 0.9


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """``betas``: AdamW over 3 x 3 betas x 2 lrs x 2 seeds, (0.99, 0.9) diverged; ``opt``: SGD,
    AdamW and Signum over 2 batch sizes x 2 lrs x 2 seeds; ``coupled``: scale exponents."""
    root = tmp_path_factory.mktemp("results")
    for b1 in BETAS:
        for b2 in BETAS:
            for lr in (1e-3, 2e-3):
                for s in range(2):
                    run = make_run(grid="betas", beta1=b1, beta2=b2, eps=1e-8, lr=lr, seed=s)
                    if _diverges(b1, b2):
                        write_run(root, run, status="diverged")
                    else:
                        write_run(root, run, val_ppl=_ppl(b1, b2, lr) + 0.1 * s)
    fields = {
        "sgd": {"momentum": 0.9},
        "adamw": {"beta1": 0.9, "beta2": 0.95},
        "signum": {"beta1": 0.9},
    }
    level = {"sgd": (20.0, 6.0), "adamw": (22.0, 1.0), "signum": (23.0, 1.5)}
    for opt, (base, slope) in level.items():
        for i, bs in enumerate((8, 64)):
            for k, lr in enumerate((1e-3, 3e-3)):
                for s in range(2):
                    run = make_run(
                        grid="opt", optimizer=opt, lr=lr, batch_size=bs, seed=s, **fields[opt]
                    )
                    write_run(root, run, val_ppl=base + slope * i + k + 0.2 * s)
    for opt, ns in (("coupled_adam", (0.0, 1.0, 2.0)), ("adamw", (None,))):
        for n in ns:
            for s in range(2):
                run = make_run(
                    grid="coupled",
                    optimizer=opt,
                    coupled_scale_exp=n,
                    seed=s,
                    beta1=0.9,
                    beta2=0.95,
                )
                iso = 0.3 if n is None else 0.9 - 0.1 * n
                write_run(
                    root,
                    run,
                    val_ppl=22.0 + (n or 0) * 0.1 + s * 0.1,
                    metrics={"iso": iso + s / 100, "mu_norm": 1.0 if n is None else 0.05},
                )
    return root


def _figures(root: Path, *args: str):
    return CliRunner().invoke(main, ["figures", *args, "--results", str(root)])


@pytest.mark.slow
def test_declared_figures_written_with_sidecars(root, tmp_path):
    grid_yaml = tmp_path / "betas.yaml"
    grid_yaml.write_text("name: betas\nfigures: [beta_heatmap, lr_sensitivity, loss_curves]\n")
    res = _figures(root, str(grid_yaml))
    assert res.exit_code == 0, res.output
    out = root / "betas" / "figures"
    for name in ("beta_heatmap", "lr_sensitivity", "loss_curves"):
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (out / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
        side = json.loads((out / f"{name}.json").read_text())
        assert side["figure"] == name and side["grid"] == "betas" and side["scale"] == "full"
        assert "FROM runs" in side["sql"]["runs"] and side["rows"]["runs"] == 36
        assert len(side["rows_sha256"]) == 64 and side["created_at"].endswith("+00:00")
        assert "code_commit" in side and side["files"] == [f"{name}.png", f"{name}.pdf"]
        assert side["notes"] == ["4 diverged run(s) counted as worst"]
    assert not (out / "batch_size.png").exists()  # not declared
    # the hash is that of the rows drawn: the runs, and the curve points of the runs drawn
    sel = select("betas", results=root)
    side = json.loads((out / "loss_curves.json").read_text())
    seeds = set(_data(root, "betas").tuned(_data(root, "betas").rows, [METHOD]).seeds["run_id"])
    drawn = {"runs": sel.frame("runs"), "curves": sel.curves_of(seeds)}
    assert side["rows_sha256"] == rows_sha256(drawn)
    assert side["rows"]["curves"] == 36 * 5  # what the statement selects


@pytest.mark.slow
def test_loss_curves_reads_the_points_of_the_runs_it_draws_only(root):
    """The tuned configuration's seeds' curve points are read, not the grid's (at 100,000 runs
    the whole statement is 20 million points): counted, as rows read."""
    sel = select("betas", results=root)
    choice = MetricChoice("val_ppl", Goal.MIN, "val_ppl", Goal.MIN)
    (d,) = draw_figures(sel, ["loss_curves"], choice)
    assert d.figure is not None
    data = _data(root, "betas")
    seeds = data.tuned(data.rows, [METHOD]).seeds["run_id"]
    assert len(seeds) == 2 and sel.count("curves") == 36 * 5
    assert "curves" not in sel.read  # the whole statement was never read
    assert len(d.frames["curves"]) == 2 * 5  # the two seeds' points
    assert set(d.frames["curves"]["run_id"]) == set(seeds)


@pytest.mark.slow
def test_default_figures_from_the_varying_columns(root):
    res = _figures(root, "opt", "--format", "json")
    assert res.exit_code == 0, res.output
    drawn = {r["figure"]: r for r in json.loads(res.stdout)}
    assert set(drawn) == {
        "lr_sensitivity",
        "batch_size",
        "steps_to_target",
        "gap_closure",
        "loss_curves",
    }
    assert all(r["skipped"] == "" for r in drawn.values())
    assert "defaults for the varying columns optimizer, batch_size, lr" in res.stderr
    for name in drawn:
        assert (root / "opt" / "figures" / f"{name}.png").stat().st_size > 10_000


def test_default_figures_registry():
    assert default_figures({"beta1", "beta2", "lr"}) == [
        "beta_heatmap",
        "lr_sensitivity",
        "loss_curves",
    ]
    assert default_figures({"optimizer", "coupled_scale_exp"}) == [
        "gap_closure",
        "loss_curves",
        "embedding_scale",
    ]
    assert default_figures(set()) == ["loss_curves"]


def test_each_figure_is_one_module_named_as_users_type_it() -> None:
    """A registered figure's ``draw`` is in ``figures/<name>.py``, and every module there that
    draws a figure is registered."""
    folder = Path(figures_package.__file__).parent
    drawing = {p.stem for p in folder.glob("*.py") if "\ndef draw(" in p.read_text()}
    assert drawing == set(FIGURES)
    for name, spec in FIGURES.items():
        draw = spec.drawer()
        assert callable(draw) and draw.__module__ == f"{figures_package.__name__}.{name}"


def test_skipped_figure_says_why_and_others_are_drawn(root):
    res = _figures(
        root,
        "coupled",
        "--figure",
        "gap_closure",
        "--figure",
        "embedding_scale",
        "--metric",
        "val_loss",
        "--format",
        "json",
    )
    assert res.exit_code == 0, res.output
    rows = {r["figure"]: r for r in json.loads(res.stdout)}
    assert rows["gap_closure"]["written"] == "-"
    assert rows["gap_closure"]["skipped"].startswith("needs a baseline (sgd, or --baseline")
    assert (
        root / "coupled" / "figures" / "embedding_scale-val_loss.png"
    ).exists()  # metric in name


def test_unknown_figure_is_exit_2(root):
    res = _figures(root, "betas", "--figure", "nope")
    assert res.exit_code == 2
    with pytest.raises(UserError, match="unknown figure 'nope'"):
        choice = MetricChoice("val_ppl", Goal.MIN, "val_ppl", Goal.MIN)
        render_figures(select("betas", results=root), ["nope"], choice)


def _data(root: Path, grid: str, metric: str = "val_ppl") -> FigureData:
    sel = select(grid, results=root)
    rows = add_methods(prepare(sel.frame("runs"), metric, "min").rows)
    return FigureData(rows=rows, metric=metric, goal="min", frames={"curves": sel.frame("curves")})


def test_heatmap_marks_diverged_outlines_best_and_annotates(root):
    from harness.analysis.present.figures.beta_heatmap import draw

    fig = draw(_data(root, "betas"))
    ax = fig.axes[0]
    texts = {
        (round(t.get_position()[0]), round(t.get_position()[1])): t.get_text() for t in ax.texts
    }
    # rows are beta1 (y), columns beta2 (x); (0.99, 0.9) -> y=2, x=0
    assert texts[(0, 2)] == "div"
    assert texts[(1, 1)] == f"{_ppl(0.95, 0.95, 1e-3) + 0.05:.4g}"  # best over lr, mean of seeds
    red = [
        p
        for p in ax.patches
        if isinstance(p, Rectangle) and p.get_edgecolor()[:3] == (1.0, 0.0, 0.0)
    ]
    assert len(red) == 1 and red[0].get_xy() == (0.5, 0.5)  # (0.95, 0.95)
    assert not isinstance(ax.images[0].norm, LogNorm)  # values span less than a decade


def test_heatmap_log_scale_when_values_span_decades(root, tmp_path):
    from harness.analysis.present.figures.beta_heatmap import draw

    for b1 in (0.9, 0.99):
        for b2 in (0.9, 0.99):
            write_run(
                tmp_path,
                make_run(grid="wide", beta1=b1, beta2=b2),
                val_ppl=20.0 if b1 == b2 else 2000.0,
            )
    assert isinstance(draw(_data(tmp_path, "wide")).axes[0].images[0].norm, LogNorm)


def test_heatmap_of_runs_that_blew_up_but_kept_a_value(root, tmp_path):
    """Trained to the end, a blown-up run has a finite, huge value: annotated short, hatched,
    and the color scale's robust limits keep the others distinguishable (242..978 distinct)."""
    from harness.analysis.present.figures.beta_heatmap import draw

    values = {(0.9, 0.9): 242.0, (0.9, 0.99): 500.0, (0.99, 0.9): 3.05e48, (0.99, 0.99): 978.0}
    for (b1, b2), ppl in values.items():
        write_run(tmp_path, make_run(grid="blown", beta1=b1, beta2=b2), val_ppl=ppl)
    fig = draw(_data(tmp_path, "blown"))
    ax = fig.axes[0]
    texts = {t.get_text() for t in ax.texts}
    assert "3e+48" in texts and "242" in texts
    image = ax.images[0]
    norm = image.norm
    assert (norm.vmin, norm.vmax) == (242.0, 978.0)
    colors = {tuple(image.cmap(norm(v))) for v in (242.0, 500.0, 978.0)}
    assert len(colors) == 3  # not one saturated color
    hatched = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_hatch() == "xxx"]
    assert [p.get_xy() for p in hatched] == [(-0.5, 0.5)]  # (beta1 0.99, beta2 0.9) only
    bar = fig.axes[-1]
    assert "hatched" in bar.get_ylabel() and "clipped" in bar.get_ylabel()


def test_heatmap_title_says_what_and_draws_the_diagonal(root, tmp_path):
    from harness.analysis.present.figures.beta_heatmap import draw

    for b1 in (0.9, 0.95):
        for b2 in (0.9, 0.95, 0.99):
            write_run(tmp_path, make_run(grid="one", beta1=b1, beta2=b2, lr=3e-3), val_ppl=30.0)
    fig = draw(_data(tmp_path, "one"))
    title = " ".join(fig._suptitle.get_text().split())
    for part in ("adamw", "lr=0.003", "model=tiny", "tokens=1.05M", "steps=1024", "full scale"):
        assert part in title, title
    assert "mean over" not in title and "one seed" in title
    diag = [ln for ln in fig.axes[0].get_lines() if ln.get_label() == "_diag"]
    # beta1 index 0 (0.9) = beta2 index 0, beta1 index 1 (0.95) = beta2 index 1
    assert diag and list(diag[0].get_xdata()) == [-0.5, 0, 1, 1.5]
    assert list(diag[0].get_ydata()) == [-0.5, 0, 1, 1.5]
    # the two-seed fixture, tuned over lr on both seeds
    title = " ".join(draw(_data(root, "betas"))._suptitle.get_text().split())
    assert "best over lr, mean over 2 tuning seeds (selected and tested on the same seeds)" in title


def test_batch_size_figure_marks_the_crossover(root):
    from harness.analysis.present.figures.batch_size import draw

    fig = draw(_data(root, "opt"))
    ax = fig.axes[0]
    # sgd - adamw: -2 at bs 8, +3 at bs 64: zero 2/5 of the way in log2 -> 2^(3 + 0.4 * 3)
    lines = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert lines and np.asarray(lines[0].get_xdata())[0] == pytest.approx(2 ** (3 + 1.2))


def test_gap_closure_figure_bars(root):
    from harness.analysis.present.figures.gap_closure import draw

    fig = draw(_data(root, "opt"))
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["batch_size=8", "batch_size=64"]
    labels = [t.get_text() for t in fig.axes[1].texts]
    # bs 64: sgd 26.1, adamw 23.1, signum 24.6 -> 50 %
    assert "50.0%" in labels


def _gap_runs(root: Path, grid: str, confirm: tuple[int, ...], unconfirmed: str = "") -> None:
    """SGD, AdamW, Signum over 2 lrs x 3 tuning seeds, and the lr 1e-3 configuration of each
    arm but ``unconfirmed`` on the confirmation seeds ``confirm``."""
    level = {"sgd": 30.0, "adamw": 20.0, "signum": 25.0}
    for opt, ppl in level.items():
        for lr in (1e-3, 3e-3):
            for s in range(3):
                run = make_run(grid=grid, optimizer=opt, lr=lr, seed=s)
                write_run(root, run, val_ppl=ppl + 1e3 * (lr - 1e-3) + 0.1 * s)
        for s in confirm if opt != unconfirmed else ():
            run = make_run(grid=grid, optimizer=opt, lr=1e-3, seed=s, confirm=True)
            write_run(root, run, val_ppl=ppl + 0.5 + 0.1 * s)


def test_figure_subtitle_names_the_seeds_its_bars_use(tmp_path):
    """The bars of a grid with confirmation seeds are means over those (3), not over every seed
    in the rows (6); without them, over the tuning seeds that also selected them."""
    from harness.analysis.present.figures.gap_closure import draw

    _gap_runs(tmp_path, "conf", confirm=(3, 4, 5))
    title = " ".join(draw(_data(tmp_path, "conf"))._suptitle.get_text().split())
    assert "each bar: best over lr, mean over 3 confirmation seeds" in title, title
    assert "6 seeds" not in title and "tuning seeds" not in title, title
    _gap_runs(tmp_path, "tune", confirm=())
    title = " ".join(draw(_data(tmp_path, "tune"))._suptitle.get_text().split())
    assert "mean over 3 tuning seeds (selected and tested on the same seeds)" in title, title
    _gap_runs(tmp_path, "part", confirm=(3, 4), unconfirmed="signum")
    title = " ".join(draw(_data(tmp_path, "part"))._suptitle.get_text().split())
    assert (
        "mean over 2 confirmation seeds (2 of 3 configs); mean over 3 tuning seeds (1 of 3 "
        "configs: selected and tested on the same seeds)"
    ) in title, title


def test_loss_curves_need_curves(root):
    from harness.analysis.present.figures.loss_curves import draw

    data = _data(root, "betas")
    with pytest.raises(FigureSkipped, match="no loss curves"):
        draw(FigureData(rows=data.rows, metric="val_ppl", goal="min", frames={}))
    fig = draw(data)
    (line,) = fig.axes[0].get_lines()  # one method, its tuned configuration
    assert line.get_label() == "adamw"


def test_sidecar_hash_changes_with_the_rows(root, tmp_path):
    for s in range(2):
        write_run(tmp_path, make_run(grid="h", lr=1e-3, seed=s), val_ppl=20.0 + s)
        write_run(tmp_path, make_run(grid="h", lr=2e-3, seed=s), val_ppl=21.0 + s)
    assert _figures(tmp_path, "h", "--figure", "lr_sensitivity").exit_code == 0
    side = tmp_path / "h" / "figures" / "lr_sensitivity.json"
    first = json.loads(side.read_text())["rows_sha256"]
    assert _figures(tmp_path, "h", "--figure", "lr_sensitivity").exit_code == 0
    assert json.loads(side.read_text())["rows_sha256"] == first
    write_run(tmp_path, make_run(grid="h", lr=4e-3, seed=0), status="diverged")
    assert _figures(tmp_path, "h", "--figure", "lr_sensitivity").exit_code == 0
    assert json.loads(side.read_text())["rows_sha256"] != first


def test_local_scale_figures_get_their_own_files(tmp_path):
    for scale, model in (("full", "tiny"), ("local", "micro")):
        for lr in (1e-3, 2e-3):
            run = make_run(grid="s", scale=scale, model=model, lr=lr)
            write_run(tmp_path, run, val_ppl=20.0 + 1000 * lr)
    assert _figures(tmp_path, "s", "--figure", "lr_sensitivity").exit_code == 2  # which scale?
    for scale in ("full", "local"):
        assert (
            _figures(tmp_path, "s", "--figure", "lr_sensitivity", "--scale", scale).exit_code == 0
        )
    out = tmp_path / "s" / "figures"
    assert (out / "lr_sensitivity.png").exists() and (out / "lr_sensitivity-local.png").exists()
    assert json.loads((out / "lr_sensitivity-local.json").read_text())["scale"] == "local"


def test_embedding_figure_draws_metrics_and_reference_lines(root):
    from harness.analysis.present.figures.embedding_scale import draw

    fig = draw(_data(root, "coupled"))
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["validation perplexity", "isotropy Iso(E)", "mean embedding norm ||mu||"]
    iso = fig.axes[1]
    (line,) = [ln for ln in iso.get_lines() if ln.get_label() == "coupled_adam"]
    assert list(line.get_xdata()) == [0.0, 1.0, 2.0]
    assert list(line.get_ydata()) == pytest.approx([0.905, 0.805, 0.705])  # mean of 2 seeds
    (ref,) = [ln for ln in iso.get_lines() if ln.get_label() == "adamw"]
    assert ref.get_ydata()[0] == pytest.approx(0.305)  # AdamW: a horizontal reference line


def test_twelve_arms_get_twelve_distinct_colors_and_markers():
    from harness.analysis.present.figures import style

    arms = [(f"my_opt_{k}", f"pkg:Opt{k}") for k in range(10)] + [
        ("adamw", "adamw"),
        ("sgd", "sgd"),
    ]
    styles = style.assign(arms)
    assert len({(s.color, s.marker) for s in styles.values()}) == 12
    assert len({s.color for s in styles.values()}) == 12  # colors alone tell them apart
    assert styles["adamw"].color == style.OPTIMIZER_COLORS["adamw"]  # built-ins keep theirs
    assert styles["sgd"].color == style.OPTIMIZER_COLORS["sgd"]
    assert style.assign(reversed(arms)) == styles  # a fixed order, whatever the input order
    many = style.assign([(f"a{k:02d}", "x") for k in range(45)])
    assert len({(s.color, s.marker) for s in many.values()}) == 45


def _line_colors(path: Path) -> dict[str, str]:
    return json.loads(path.with_suffix(".json").read_text())["styles"]


def test_same_arm_same_color_in_every_figure_and_failed_arm_named(tmp_path):
    """Eight user arms and AdamW over lr; one arm only failed: every figure of the grid draws
    each arm in one color, and names the failed arm in its title."""
    from harness.analysis.present.figures import style

    arms = [f"./opt.py:Opt{k}" for k in range(8)] + ["adamw"]
    for arm in arms:
        for lr in (1e-3, 3e-3):
            run = make_run(grid="eight", optimizer=arm, lr=lr)
            if arm.endswith("Opt5"):
                write_run(tmp_path, run, status="failed")
            else:
                write_run(tmp_path, run, val_ppl=20 + 1000 * lr + len(arm) % 7)
    res = _figures(tmp_path, "eight", "--figure", "lr_sensitivity", "--figure", "loss_curves")
    assert res.exit_code == 0, res.output
    out = tmp_path / "eight" / "figures"
    a, b = _line_colors(out / "lr_sensitivity.png"), _line_colors(out / "loss_curves.png")
    assert a == b and len(a) == 8 and len({s["color"] for s in a.values()}) == 8
    assert a["adamw"]["color"] == style.OPTIMIZER_COLORS["adamw"]
    assert "./opt.py:Opt5" not in a
    side = json.loads((out / "lr_sensitivity.json").read_text())
    assert "./opt.py:Opt5: 2 failed" in side["notes"]
    # the drawn lines use those colors, and the title names the failed arm
    from harness.analysis.present.figures.lr_sensitivity import draw
    from harness.analysis.present.figures.render import every_arm

    sel = select("eight", results=tmp_path)
    every = every_arm(sel)
    prep = prepare(every, "val_ppl", "min")
    from harness.analysis.present.figures.common import arm_styles, missing_arms

    data = FigureData(
        rows=prep.rows,
        metric="val_ppl",
        goal="min",
        styles=arm_styles(every),
        missing=tuple(missing_arms(every, prep.rows)),
    )
    fig = draw(data)
    drawn = {ln.get_label(): ln.get_color() for ln in fig.axes[0].get_lines()}
    assert all(drawn[arm] == a[arm]["color"] for arm in a)
    assert "./opt.py:Opt5: 2 failed" in " ".join(fig._suptitle.get_text().split())


def test_loss_curves_all_runs_and_the_validation_legend(root):
    from harness.analysis.present.figures.loss_curves import draw

    data = _data(root, "betas")
    every = FigureData(
        rows=data.rows,
        metric="val_ppl",
        goal="min",
        frames=data.frames,
        options=FigureOptions(runs="all"),
    )
    lines = draw(every).axes[0].get_lines()
    thin = [ln for ln in lines if ln.get_label() == "_run"]
    assert len(thin) == 36  # every run of the cell, the diverged ones included
    (best,) = draw(data).axes[0].get_lines()
    assert best.get_label() == "adamw"
    # with validation points, the legend explains them
    curves = data.frames["curves"].assign(val_loss=lambda d: d["train_loss"] + 0.1)
    fig = draw(FigureData(rows=data.rows, metric="val_ppl", goal="min", frames={"curves": curves}))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "validation loss (eval points)" in labels


def test_metric_vs_an_own_hyperparameter(tmp_path):
    """A user optimizer's own hyperparameter on the x axis; an arm without it is a reference."""
    from harness.analysis.present.figures.metric_vs import draw

    for gamma in (0.25, 0.5, 0.75):
        for lr in (1e-3, 3e-3):
            run = make_run(grid="own", optimizer="./mix.py:Mix", lr=lr)
            row = write_run(tmp_path, run, val_ppl=20 + 10 * gamma + 1000 * lr)
            _set_own(row, "gamma", gamma)
    write_run(tmp_path, make_run(grid="own", optimizer="adamw", lr=1e-3), val_ppl=24.0)
    data = _data(tmp_path, "own")
    assert "gamma" in data.rows.columns
    fig = draw(data)
    ax = fig.axes[0]
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == "./mix.py:Mix"]
    assert list(line.get_xdata()) == [0.25, 0.5, 0.75]
    assert list(line.get_ydata()) == pytest.approx([23.5, 26.0, 28.5])  # best lr at each gamma
    (ref,) = [ln for ln in ax.get_lines() if ln.get_label() == "adamw"]
    assert ref.get_ydata()[0] == pytest.approx(24.0)
    assert ax.get_xlabel() == "gamma"
    res = _figures(tmp_path, "own", "--figure", "metric_vs", "--x", "lr")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "own" / "figures" / "metric_vs.png").exists()
    # the only figure skipped: exit 1, a script sees that nothing was drawn
    assert _figures(tmp_path, "own", "--figure", "metric_vs", "--x", "nope").exit_code == 1
    assert "metric_vs" not in default_figures({"lr", "gamma", "optimizer"})


def _set_own(row: Path, name: str, value: float) -> None:
    """Give a synthetic row an own hyperparameter column (as a user optimizer's row has) and a
    run_id of its own (the value is part of a real run's identity)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(row)
    run_id = f"{row.stem}-{value:g}"
    table = table.set_column(
        table.schema.get_field_index("run_id"),
        "run_id",
        pa.array([run_id] * len(table), pa.string()),
    )
    table = table.append_column(name, pa.array([value] * len(table), pa.float64()))
    table = table.set_column(
        table.schema.get_field_index("own_hyperparameters"),
        "own_hyperparameters",
        pa.array([name] * len(table), pa.string()),
    )
    pq.write_table(table, row.with_name(f"{run_id}.parquet"))
    row.unlink()


def test_figures_baseline_and_reference_flags(root):
    res = _figures(
        root,
        "opt",
        "--figure",
        "gap_closure",
        "--baseline",
        "optimizer=signum",
        "--reference",
        "optimizer=adamw",
        "--format",
        "json",
    )
    assert res.exit_code == 0, res.output
    side = json.loads((root / "opt" / "figures" / "gap_closure.json").read_text())
    assert side["figure"] == "gap_closure"
    from harness.analysis.present.figures.gap_closure import draw

    data = _data(root, "opt")
    opts = FigureOptions(baseline=parse_selector("optimizer=signum", "--baseline"))
    fig = draw(FigureData(rows=data.rows, metric="val_ppl", goal="min", options=opts))
    assert fig.axes[0].get_xlabel() == "gap closed (%): signum 0, adamw 100"
    bad = _figures(root, "opt", "--figure", "gap_closure", "--baseline", "optimizer=nope")
    assert bad.exit_code == 1 and "matches no rows" in bad.output  # the figure skipped, says why


def test_an_arm_not_run_yet_is_named_and_keeps_its_color(tmp_path):
    """A planned arm (in the manifest) without a row: named in the note; adding its rows later
    changes no other arm's color."""
    from harness.store.manifest import write_manifest

    planned = [
        make_run(grid="p", optimizer=o, lr=lr)
        for o in ("adamw", "./x.py:A", "./x.py:B")
        for lr in (1e-3, 2e-3)
    ]
    write_manifest(tmp_path, "p", planned)
    for run in planned[:4]:  # ./x.py:B not run yet
        write_run(tmp_path, run, val_ppl=20.0 + 1000 * run.optim.lr)
    assert _figures(tmp_path, "p", "--figure", "lr_sensitivity").exit_code == 0
    side = json.loads((tmp_path / "p" / "figures" / "lr_sensitivity.json").read_text())
    assert "./x.py:B: no result yet" in side["notes"]
    before = side["styles"]
    for run in planned[4:]:
        write_run(tmp_path, run, val_ppl=25.0)
    assert _figures(tmp_path, "p", "--figure", "lr_sensitivity").exit_code == 0
    after = json.loads((tmp_path / "p" / "figures" / "lr_sensitivity.json").read_text())["styles"]
    assert all(after[arm] == style for arm, style in before.items()) and len(after) == 3


def test_gap_closure_panel_with_only_baseline_and_reference(tmp_path):
    """A condition where only SGD and AdamW ran gets a panel saying so (was a TypeError), and
    a negative closure with an unbounded interval stays inside the axes."""
    from harness.analysis.present.figures.gap_closure import draw

    for bs, opts in ((8, ("sgd", "adamw")), (64, ("sgd", "adamw", "signum"))):
        for opt in opts:
            for s in range(2):
                ppl = {"sgd": 30.0, "adamw": 20.0, "signum": 60.0}[opt] + s
                write_run(
                    tmp_path, make_run(grid="g2", optimizer=opt, batch_size=bs, seed=s), val_ppl=ppl
                )
    fig = draw(_data(tmp_path, "g2"))
    assert [t.get_text() for t in fig.axes[0].texts] == ["no other arm here"]
    (bar,) = fig.axes[1].patches
    assert bar.get_width() == pytest.approx(-300.0)  # signum: (30 - 60) / (30 - 20)
    assert fig.axes[1].get_xlim()[0] < -300.0


def test_a_figure_of_too_many_panels_is_skipped_before_anything_is_tuned(tmp_path, monkeypatch):
    """Issue 41: the panels are counted first (100 panels cost seconds of tuning, then a skip),
    and a command that drew nothing exits 1."""
    import harness.analysis.present.figures.common as common

    for i in range(common.MAX_PANELS + 1):
        for opt, lr in (("adamw", 1e-3), ("adamw", 1e-2), ("sgd", 1e-3), ("sgd", 1e-2)):
            run = make_run(grid="many", optimizer=opt, lr=lr, tokens=8192 * (i + 1))
            write_run(tmp_path, run, val_ppl=20.0 + i + lr)

    def no_tuning(*args, **kwargs):
        raise AssertionError("tuned before the panels were counted")

    monkeypatch.setattr(common, "tuned_points", no_tuning)
    res = _figures(tmp_path, "many", "--figure", "lr_sensitivity", "--format", "json")
    assert res.exit_code == 1, res.output
    assert f"{common.MAX_PANELS + 1} panels" in res.output


@pytest.mark.parametrize(
    "arms",
    [
        [("AdamW", "adamw"), ("torch.optim:AdamW", "torch.optim:AdamW")],  # a bench: two blues
        [("AdamW", "adamw"), ("sgd", "sgd"), ("mine.py:Opt", "mine.py:Opt")],
        [("AdamW", "adamw"), ("a:X", "a:X"), ("b:Y", "b:Y"), ("c:Z", "c:Z")],
    ],
)
def test_an_arm_without_a_color_of_its_own_takes_one_unlike_the_others(arms):
    """Issue 38: the bench's card drew AdamW and the candidate in two similar blues."""
    from itertools import combinations

    from harness.analysis.present.figures import style

    styles = style.assign(arms)
    for a, b in combinations(styles, 2):
        assert not style.similar(styles[a].color, styles[b].color), (a, b, styles)
