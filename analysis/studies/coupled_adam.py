"""Study: Coupled Adam vs AdamW at equal lr (the paper's protocol), loss and embedding metrics,
and why the higher lr is unstable at this scale (analysis/studies/coupled_dilution.py).

    python analysis/studies/coupled_adam.py

Report: analysis/studies/coupled_adam.md.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from _study import REPO, STUDIES, Study
from coupled_dilution import measure

study = Study("coupled_adam", "coupled_adam")
study.train()
for metric in ("val_loss", "iso", "iso_sym", "mu_norm", "rho", "kappa"):
    study.analyze("compare", "--a", "optimizer=adamw", "--b", "optimizer=coupled_adam",
                  "--by", "lr", "--test", "paper", "--metric", metric)  # fmt: skip
study.query(
    "SELECT lr, optimizer, seed, status, round(val_loss, 3) AS val_loss, "
    "round(max_loss_rise, 2) AS max_loss_rise, error FROM runs "
    "WHERE grid = 'coupled_adam' AND scale = 'local' AND steps = 40 ORDER BY lr, optimizer, seed"
)

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
            axes[0].plot(steps, [r["ratio_top"] for r in rows], style, color="tab:red",
                         label=f"most frequent token, lr {lr:g}")  # fmt: skip
            axes[0].plot(steps, [r["ratio_top100"] for r in rows], style, color="tab:orange",
                         label=f"median of top 100, lr {lr:g}")  # fmt: skip
            seen_ax.plot(steps, [r["seen"] for r in rows], style, color="0.6", linewidth=0.8)
        for r in rows[::5] + rows[-1:]:
            study.note(f"{opt} lr {lr:g} step {r['step']}: seen {r['seen']:.4f} "
                       f"ratio_top {r['ratio_top']:.1f} ratio_top100 {r['ratio_top100']:.1f} "
                       f"rel_step {r['rel_step_top100']:.4f} loss {r['loss']:.3f}")  # fmt: skip
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
study.figure("lr_sensitivity", "--metric", "val_loss")
study.figure("lr_sensitivity", "--metric", "iso", suffix="-iso")
study.finish()
