"""AlgoPerf performance profile: per arm, rho(tau) against tau on [1, tau_max] (log axis), the
fraction of cells where its tokens-to-target is within a factor tau of the best arm's; the legend
gives each arm's score (:mod:`harness.analysis.stats.performance_profiles`). Cells are the
conditions that vary; each arm is its fastest configuration by the median over seeds. Needs a
target (the grid's ``target:`` or ``--target``)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from harness.analysis.present.figures.common import (
    FigureData,
    FigureSkipped,
    layout,
    legend,
    subtitle,
)
from harness.analysis.questions.target_query import NO_TARGET, profile_table
from harness.analysis.stats import METHOD, TOKENS_TO_TARGET, performance_profiles
from harness.analysis.stats.reaching import reach_all
from harness.core.errors import UserError


def draw(data: FigureData) -> Figure:
    """The performance-profile figure (see the module docstring)."""
    curves = data.frames.get("curves")
    target = data.options.target
    if target is None:
        raise FigureSkipped(NO_TARGET)
    if curves is None or curves.empty:
        raise FigureSkipped("no loss curves")
    rows = reach_all(data.rows, curves, target.column, target.value)
    try:
        table, keys = profile_table(rows, (), (), TOKENS_TO_TARGET, data.options.pool)
    except UserError as e:  # e.g. every cell holds a single arm: nothing to profile
        raise FigureSkipped(str(e)) from None
    taus = np.geomspace(1.0, performance_profiles.TAU_MAX, 400)
    profile = performance_profiles.rho(table, list(taus))
    scores = performance_profiles.score(table)
    fig, (ax,) = layout(1)
    for method, part in profile.groupby(METHOD, sort=True):
        st = data.style(str(method))
        label = f"{method} (score {scores[method]:.2f})"
        ax.step(
            part["tau"],
            part["rho"],
            where="post",
            label=label,
            color=st.color,
            linestyle=st.linestyle,
        )
    ax.set_xscale("log")
    ticks = [t for t in (1, 1.5, 2, 3, 4) if t <= performance_profiles.TAU_MAX]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("tau (ratio to the best arm's tokens-to-target)")
    ax.set_ylabel("fraction of cells within tau")
    cells = len(table) // max(1, table[METHOD].nunique())
    over = ", ".join(keys) or "one cell"
    ax.set_title(f"{target.describe()}; {cells} cell(s) of {over}", fontsize=7)
    legend(fig, [ax])
    per_arm = rows.groupby(METHOD)["run_id"].nunique()
    seeds = ", ".join(f"{m} {n}" for m, n in per_arm.items())
    reading = f"each arm: its fastest configuration, median over its seeds ({seeds})"
    subtitle(fig, data, None, "arm", what="tokens-to-target", reading=reading)
    return fig
