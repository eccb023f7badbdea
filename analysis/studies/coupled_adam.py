"""Study: Coupled Adam vs AdamW at equal lr (the paper's protocol), loss and embedding metrics,
tested with Welch's t (two-sided) and Holm over the 12 cells (6 metrics x 2 lrs); each optimizer
at its own best lr, selected on seeds 0-2 and confirmed on fresh seeds 3-5 (``--confirm``); the
seeds the loss comparison needs (``analyze power``); mu_norm through training (the paper's Fig. 5
at laptop scale); and why the higher lr is unstable at this scale
(analysis/studies/coupled_dilution.py).

    python analysis/studies/coupled_adam.py

It trains the study grid next to it, analysis/studies/coupled_adam.yaml (grids/coupled_adam.yaml's
local section plus track and confirmation seeds; the shipped grid keeps its plan). Report:
analysis/studies/coupled_adam.md.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from _study import REPO, RESULTS, STUDIES, Study
from coupled_dilution import measure
from PIL import Image

from harness import api
from harness.core.paths import family_path, results_root

# The study grid lives next to this script (the shipped grid's plan must not change).
study = Study(
    "coupled_adam",
    "coupled_adam_tracked",
    followup=("--confirm",),
    grid_file=STUDIES / "coupled_adam.yaml",
)
study.train()
ALL = study.where()  # the grid's runs and its confirmation runs
EQUAL = f"({ALL}) AND confirm IS NOT TRUE"  # the 12 equal-lr runs
ARMS = ("--a", "optimizer=adamw", "--b", "optimizer=coupled_adam")
METRICS = ("val_loss", "iso", "iso_sym", "mu_norm", "rho", "kappa")


def analyze(command: str, where: str, *args: str, log: bool = True) -> str:
    return study.harness(
        "analyze",
        command,
        str(study.grid),
        "--scale",
        "local",
        "--results",
        str(RESULTS),
        "--where",
        where,
        *args,
        log=log,
    )


# Equal lr: per metric and lr, Welch two-sided (the paper's App. F test is one-sided only, so it
# cannot see AdamW ahead); Holm over all 12 cells, not only over a table's 2: every table records
# its claims in one correction family (--family), and the second pass reads each p-value
# corrected over all 12 (the first pass records them).
FAMILY = "coupled_adam_equal_lr"
family_path(results_root(RESULTS), FAMILY).unlink(missing_ok=True)  # this run's claims only


def equal_lr_cells() -> list[dict]:
    cells = []
    for metric in METRICS:
        table = api.analyze(
            "compare",
            study.grid,
            scale="local",
            results=RESULTS,
            where=EQUAL,
            a="optimizer=adamw",
            b="optimizer=coupled_adam",
            by=["lr"],
            metric=metric,
            alternative="two-sided",
            family=FAMILY,
        ).table
        cells += [{"metric": metric, **row} for row in table.to_dict(orient="records")]
    return cells


for metric in METRICS:
    args = (*ARMS, "--by", "lr", "--metric", metric, "--alternative", "two-sided")
    analyze("compare", EQUAL, *args, "--correction", "none")
equal_lr_cells()  # records the 12 claims
cells = equal_lr_cells()
p_holm = [float(c["p_adj"]) for c in cells]
study.note(
    "\n# equal lr, Welch two-sided, Holm over the 12 cells (alpha 0.05); "
    "diff = coupled_adam - adamw, [95% Welch interval]"
)
for c, p in zip(cells, p_holm, strict=True):
    study.note(
        f"{c['metric']:8s} lr {float(c['lr']):g}: adamw {float(c['mean_a']):.4g} "
        f"+- {float(c['std_a']):.2g}, coupled {float(c['mean_b']):.4g} +- "
        f"{float(c['std_b']):.2g}, diff {float(c['diff']):.4g} "
        f"[{float(c['ci_low']):.4g}, {float(c['ci_high']):.4g}], p {float(c['p']):.2g}, "
        f"p_holm12 {p:.2g} {'significant' if p < 0.05 else 'n.s.'}"
    )

# Each optimizer at its own best lr (selected on seeds 0-2, reported on the confirmation seeds
# 3-5; the edge column says whether that best is on an edge of the two lrs), then the same on the
# tuning seeds alone, for contrast.
analyze("best", ALL, "--by", "optimizer", "--metric", "val_loss")
analyze("compare", ALL, *ARMS, "--metric", "val_loss", "--alternative", "two-sided")
analyze(
    "compare",
    f"({ALL}) AND confirm IS NOT TRUE",
    *ARMS,
    "--metric",
    "val_loss",
    "--alternative",
    "two-sided",
)
# Power of the loss comparisons: seeds needed for the observed difference, the smallest one the
# present seeds detect, and the seeds the paper's 0.02-nat gain (125M, 5B tokens) would need here.
power = (*ARMS, "--metric", "val_loss", "--alternative", "two-sided")
analyze("power", EQUAL, *power, "--by", "lr")
analyze("power", ALL, *power)
analyze("power", EQUAL, *power, "--by", "lr", "--difference", "0.02")
study.query(
    "SELECT lr, optimizer, seed, confirm, status, round(val_loss, 3) AS val_loss, "
    "round(max_loss_rise, 2) AS max_loss_rise, round(mu_norm, 4) AS mu_norm FROM runs "
    f"WHERE {ALL} ORDER BY lr, optimizer, seed"
)

# mu_norm through training (track: [embedding], every eval_every steps), the 12 equal-lr runs.
study.query(
    "SELECT r.lr, r.optimizer, c.step, c.tokens, count(*) AS n, round(avg(c.mu_norm), 4) AS mean, "
    "round(stddev_samp(c.mu_norm), 4) AS std, round(min(c.mu_norm), 4) AS min, "
    "round(max(c.mu_norm), 4) AS max FROM curves c JOIN runs r ON c.run_id = r.run_id "
    f"WHERE c.run_id IN (SELECT run_id FROM runs WHERE {EQUAL}) AND c.mu_norm IS NOT NULL "
    "GROUP BY ALL ORDER BY r.lr, r.optimizer, c.step"
)
FIGURES = RESULTS / study.grid_name / "figures"


def figure(name: str, where: str, *args: str) -> Path:
    """Draw one figure of the study grid over ``where``; returns its PNG."""
    study.harness(
        "figures",
        str(study.grid),
        "--figure",
        name,
        "--scale",
        "local",
        "--results",
        str(RESULTS),
        "--where",
        where,
        *args,
    )
    return max(FIGURES.glob(f"{name}*-local.png"), key=lambda f: f.stat().st_mtime_ns)


panels = []
for lr in (1e-3, 3e-3):
    png = figure("metric_vs_tokens", f"{EQUAL} AND lr = {lr}", "--metric", "mu_norm")
    panels.append(png.rename(FIGURES / f"mu_norm-lr{lr:g}.png"))
images = [Image.open(f) for f in panels]
both = Image.new("RGB", (sum(i.width for i in images), max(i.height for i in images)), "white")
x = 0
for img in images:
    both.paste(img.convert("RGB"), (x, 0))
    x += img.width
both.save(FIGURES / "mu_norm-both.png")
study.save_png(FIGURES / "mu_norm-both.png", "-mu_norm")

# The dilution: per step over the grid's 40 steps, for both optimizers at both lrs (seed 0).
data_root = REPO / "data"
fig, axes = plt.subplots(1, 3, figsize=(10, 3.0), constrained_layout=True)
seen_ax = axes[0].twinx()
for lr, style in ((1e-3, "-"), (3e-3, "--")):
    for opt, color in (("adamw", "tab:blue"), ("coupled_adam", "tab:red")):
        rows = measure(study.grid, data_root, opt, lr)
        steps = [r["step"] for r in rows]
        label = f"{opt}, lr {lr:g}"
        axes[1].plot(steps, [r["rel_step_top100"] for r in rows], style, color=color, label=label)
        axes[2].plot(steps, [r["loss"] for r in rows], style, color=color, label=label)
        if opt == "coupled_adam":
            axes[0].plot(
                steps,
                [r["ratio_top"] for r in rows],
                style,
                color="tab:red",
                label=f"most frequent token, lr {lr:g}",
            )
            axes[0].plot(
                steps,
                [r["ratio_top100"] for r in rows],
                style,
                color="tab:orange",
                label=f"median of top 100, lr {lr:g}",
            )
            seen_ax.plot(steps, [r["seen"] for r in rows], style, color="0.6", linewidth=0.8)
        for r in rows[::5] + rows[-1:]:
            study.note(
                f"{opt} lr {lr:g} step {r['step']}: seen {r['seen']:.4f} "
                f"ratio_top {r['ratio_top']:.1f} ratio_top100 {r['ratio_top100']:.1f} "
                f"rel_step {r['rel_step_top100']:.4f} loss {r['loss']:.3f}"
            )
eq18 = rows[0]["eq18"]
axes[0].axhline(eq18, color="0.4", linestyle=":", label=f"Eq. 18: sqrt(V p_max) = {eq18:.0f}")
seen_ax.set_ylabel("fraction of vocabulary seen (grey)", color="0.5")
axes[0].set_yscale("log")
axes[0].set_title("Coupled / Adam step on frequent rows", fontsize=8)
axes[0].set_ylabel("sqrt(v_i / mean_j v_j)")
axes[1].set_yscale("log")
axes[1].set_title("relative change of frequent rows per step", fontsize=8)
axes[1].set_ylabel("median ||de_i|| / ||e_i||, top 100")
axes[2].set_title("training loss (seed 0)", fontsize=8)
for ax in axes:
    ax.set_xlabel("step")
    ax.legend(fontsize=6)
png = STUDIES / "coupled_adam-dilution-full.png"
fig.savefig(png, dpi=150)
study.save_png(png, "-dilution")
png.unlink()
# the equal-lr runs only (with the confirmation runs, the subtitle would count 6 seeds per point)
study.save_png(figure("lr_sensitivity", EQUAL, "--metric", "val_loss"))
study.save_png(figure("lr_sensitivity", EQUAL, "--metric", "iso"), "-iso")
study.finish()
