"""Look of every figure: seaborn theme at paper size; one categorical palette, a color and a
marker per arm, assigned in a fixed order (the built-in optimizers keep theirs)."""

from __future__ import annotations

import colorsys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import seaborn as sns
from matplotlib.colors import to_rgb

#: Width of a two-column paper figure, inches.
PAGE_WIDTH = 6.8
#: Height of one row of panels, inches.
ROW_HEIGHT = 2.4
#: Panels per row.
MAX_COLUMNS = 3

_CB = sns.color_palette("colorblind").as_hex()
#: Optimizer -> its slot of :data:`PALETTE`: the same color and marker in every figure.
OPTIMIZER_SLOTS: dict[str, int] = {
    name: i
    for i, name in enumerate(
        (
            "adamw",
            "coupled_adam",
            "sgd",
            "signum",
            "rmsprop",
            "signsgd",
            "sgd_cclip",
            "lion",
            "muon",
            "adam",
        )
    )
}
#: Optimizer -> color (its slot's).
OPTIMIZER_COLORS: dict[str, str] = {name: _CB[i] for name, i in OPTIMIZER_SLOTS.items()}
#: One categorical palette: the built-in optimizers' ten colors, then ten darker ones.
PALETTE: tuple[str, ...] = (*_CB, *sns.color_palette("dark").as_hex())
#: Markers; beyond ``len(PALETTE)`` arms a color comes back with another marker.
MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")

#: Two chromatic colors whose hues are closer than this (degrees) look alike (AdamW's blue and
#: the dark palette's blue); so do two greys.
SIMILAR_HUE = 30.0
#: Below this saturation (HLS) a color is a grey.
GREY_SATURATION = 0.2

#: Line styles of the variants of one optimizer (e.g. with and without clipping).
DASHES = ("-", "--", ":", "-.")


@dataclass(frozen=True, slots=True)
class ArmStyle:
    """How one arm is drawn in every figure of a grid."""

    color: str
    """Hex color."""
    marker: str
    """Matplotlib marker."""
    linestyle: str
    """Matplotlib line style (variants of one optimizer differ)."""

    def line(self) -> dict[str, Any]:
        """Keyword arguments of ``Axes.plot`` / ``errorbar``."""
        return {"color": self.color, "marker": self.marker, "linestyle": self.linestyle}


def similar(a: str, b: str) -> bool:
    """Whether colors ``a`` and ``b`` (hex) look alike: hues within :data:`SIMILAR_HUE` degrees,
    or both grey."""
    (ha, _, sa), (hb, _, sb) = (colorsys.rgb_to_hls(*to_rgb(c)) for c in (a, b))
    if sa < GREY_SATURATION or sb < GREY_SATURATION:
        return sa < GREY_SATURATION and sb < GREY_SATURATION
    apart = abs(ha - hb) * 360.0
    return min(apart, 360.0 - apart) < SIMILAR_HUE


def slot_style(slot: int, linestyle: str = "-") -> ArmStyle:
    """The color and marker of palette slot ``slot`` (any non-negative integer)."""
    n = len(PALETTE)
    return ArmStyle(PALETTE[slot % n], MARKERS[(slot + slot // n) % len(MARKERS)], linestyle)


def assign(arms: Iterable[tuple[str, str]]) -> dict[str, ArmStyle]:
    """Arm -> style, for ``(arm, optimizer)`` pairs: a fixed order, so one set of arms gets the
    same styles in every figure.

    The first arm of a built-in optimizer (shortest name first: ``sgd`` before
    ``sgd (grad_clip=1)``) takes the optimizer's own slot; the other arms, sorted by name, take
    the free slots, the ten after the built-ins' first, then the unused built-in slots, each the
    first whose color is unlike every color taken (:func:`similar`) while one is, then colors
    again with other markers. Every arm gets its own (color, marker) pair.
    """
    pairs = sorted(set(arms), key=lambda p: (len(p[0]), p[0]))
    slots: dict[str, int] = {}
    for arm, opt in pairs:
        if opt in OPTIMIZER_SLOTS and OPTIMIZER_SLOTS[opt] not in slots.values():
            slots[arm] = OPTIMIZER_SLOTS[opt]
    used = set(slots.values())
    free = [
        s
        for s in (*range(len(OPTIMIZER_SLOTS), len(PALETTE)), *range(len(OPTIMIZER_SLOTS)))
        if s not in used
    ]
    rest = sorted(arm for arm, _ in pairs if arm not in slots)
    over = len(PALETTE) - len(free)  # slots past the palette, once every free one is taken
    for k, arm in enumerate(rest):
        taken = [PALETTE[s % len(PALETTE)] for s in slots.values()]
        slots[arm] = _unlike(free, taken) if free else over + k
    variants: dict[str, list[str]] = {}
    for arm, opt in sorted(pairs):
        variants.setdefault(opt, []).append(arm)
    out = {}
    for arm, opt in pairs:
        dash = DASHES[variants[opt].index(arm) % len(DASHES)]
        out[arm] = slot_style(slots[arm], dash)
    return out


def _unlike(free: list[int], taken: list[str]) -> int:
    """The first slot of ``free`` (not empty) whose color is unlike every color of ``taken``,
    else its first; removed from ``free``."""
    fits = [s for s in free if not any(similar(PALETTE[s], c) for c in taken)]
    slot = (fits or free)[0]
    free.remove(slot)
    return slot


def color(optimizer: str) -> str:
    """A built-in optimizer's color; another name gets the first slot after the built-ins'."""
    return assign([(optimizer, optimizer)])[optimizer].color


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
