"""Loss curves as inline SVG, one group per arm (``data-arm`` = the arm's index), so that a
reader's checkbox can show or hide an arm with one line of JavaScript. No library."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

import numpy as np

#: Size of a chart and its margins (left, right, top, bottom), in px.
WIDTH, HEIGHT = 720, 340
MARGIN = (64, 16, 28, 44)


@dataclass(frozen=True, slots=True)
class Line:
    """One polyline of a chart."""

    arm: int
    """Index of the arm (its checkbox)."""
    xs: np.ndarray
    """Tokens."""
    ys: np.ndarray
    """Losses (non-finite points are left out)."""
    color: str
    """Stroke color."""
    thin: bool = False
    """A single run behind its arm's tuned mean."""
    dots: bool = False
    """Points (validation losses) instead of a line."""


def ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round values between ``lo`` and ``hi``."""
    if not math.isfinite(lo) or not math.isfinite(hi) or hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if step * m >= raw)
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step + 1e-9) + 1)]


def _fmt(v: float) -> str:
    a = abs(v)
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if a >= size:
            return f"{v / size:g}{unit}"
    return f"{v:.4g}"


def chart(
    lines: Sequence[Line], title: str, ylim: tuple[float, float], n_arms: int, ident: str
) -> str:
    """An ``<svg>`` of ``lines`` (tokens vs loss) within ``ylim``, one ``<g data-arm=k>`` per
    arm holding all its lines, clipped to the plot area (its clip path named ``ident``)."""
    left, right, top, bottom = MARGIN
    pw, ph = WIDTH - left - right, HEIGHT - top - bottom
    xs = np.concatenate([ln.xs for ln in lines]) if lines else np.array([0.0, 1.0])
    x0, x1 = float(np.nanmin(xs)), float(np.nanmax(xs))
    x1 = x1 if x1 > x0 else x0 + 1.0
    y0, y1 = ylim

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + (1 - (y - y0) / (y1 - y0)) * ph

    clip = f"clip-{ident}"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="curves" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(title)}">',
        f'<defs><clipPath id="{clip}"><rect x="{left}" y="{top}" width="{pw}" height="{ph}"/>'
        "</clipPath></defs>",
        f'<text x="{left}" y="16" class="title">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="frame"/>',
    ]
    for t in ticks(x0, x1):
        out.append(
            f'<line x1="{px(t):.1f}" x2="{px(t):.1f}" y1="{top}" y2="{top + ph}" '
            f'class="grid"/><text x="{px(t):.1f}" y="{top + ph + 14}" class="tick" '
            f'text-anchor="middle">{_fmt(t)}</text>'
        )
    for t in ticks(y0, y1):
        out.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{py(t):.1f}" y2="{py(t):.1f}" '
            f'class="grid"/><text x="{left - 6}" y="{py(t) + 4:.1f}" class="tick" '
            f'text-anchor="end">{_fmt(t)}</text>'
        )
    out.append(
        f'<text x="{left + pw / 2}" y="{HEIGHT - 6}" class="label" text-anchor="middle">'
        "training tokens</text>"
    )
    out.append(
        f'<text transform="translate(14 {top + ph / 2}) rotate(-90)" class="label" '
        'text-anchor="middle">training loss</text>'
    )
    for k in range(n_arms):
        own = [ln for ln in lines if ln.arm == k]
        if not own:
            continue
        out.append(f'<g data-arm="{k}" clip-path="url(#{clip})">')
        for ln in sorted(own, key=lambda ln: (not ln.thin, ln.dots)):
            ok = np.isfinite(ln.ys) & np.isfinite(ln.xs)
            pts = [(px(float(x)), py(float(y))) for x, y in zip(ln.xs[ok], ln.ys[ok], strict=True)]
            if ln.dots:
                out += [
                    f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{ln.color}"/>' for x, y in pts
                ]
                continue
            width, opacity = (0.8, 0.45) if ln.thin else (2.2, 1.0)
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{ln.color}" '
                f'stroke-width="{width}" stroke-opacity="{opacity}"/>'
            )
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)
