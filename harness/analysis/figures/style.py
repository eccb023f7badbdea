"""Look of every figure: seaborn theme at paper size, one fixed color per optimizer."""

from __future__ import annotations

import hashlib

import matplotlib
import matplotlib.pyplot as plt
import seaborn as sns

#: Width of a two-column paper figure, inches.
PAGE_WIDTH = 6.8
#: Height of one row of panels, inches.
ROW_HEIGHT = 2.4
#: Panels per row.
MAX_COLUMNS = 3
#: PNG resolution.
DPI = 200

_CB = sns.color_palette("colorblind").as_hex()
#: Optimizer -> color, the same in every figure.
OPTIMIZER_COLORS: dict[str, str] = {
    "adamw": _CB[0],
    "coupled_adam": _CB[1],
    "sgd": _CB[2],
    "signum": _CB[3],
    "rmsprop": _CB[4],
    "signsgd": _CB[5],
    "sgd_cclip": _CB[6],
    "lion": _CB[7],
    "muon": _CB[8],
    "adam": _CB[9],
}
_EXTRA = sns.color_palette("tab20").as_hex()

#: Line styles of the variants of one optimizer (e.g. with and without clipping).
DASHES = ("-", "--", ":", "-.")


def color(optimizer: str) -> str:
    """The optimizer's color; unknown names get a stable color from their hash."""
    if optimizer in OPTIMIZER_COLORS:
        return OPTIMIZER_COLORS[optimizer]
    h = int(hashlib.sha256(optimizer.encode()).hexdigest(), 16)
    return _EXTRA[h % len(_EXTRA)]


def apply() -> None:
    """Set the backend (Agg: files, no display) and the theme: readable at paper size (8-9 pt
    text on a 6.8 in wide figure). Called when figures are drawn, not at import."""
    matplotlib.use("Agg")
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.0)
    plt.rcParams.update(
        {
            "font.size": 8,
            "axes.titlesize": 8.5,
            "axes.labelsize": 8,
            "legend.fontsize": 7,
            "xtick.labelsize": 7,
            "ytick.labelsize": 7,
            "lines.linewidth": 1.4,
            "lines.markersize": 4,
            "pdf.fonttype": 42,
            "figure.dpi": 100,
        }
    )
