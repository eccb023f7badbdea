"""A block-diagonal quadratic with heterogeneous or homogeneous block spectra (Zhang et al.
2024, "Why Transformers need Adam: a Hessian perspective", Sec. 3's toy problem).

``f(x) = 1/2 x^T H x - b^T x`` over ``blocks`` parameter blocks of ``block_dim`` coordinates,
``H = diag(H_1, ..., H_B)``, ``H_k = Q_k diag(lambda_k) Q_k^T`` with ``Q_k`` a fixed random
rotation (identity when ``rotate`` is false). Every run of both spectra has the same eigenvalues
``lambda`` (log-spaced from 1 to ``condition``), so gradient descent, which sees only the
spectrum, is the same on both; only how they are shared among blocks differs:

- ``heterogeneous``: block k holds the k-th contiguous slice of the sorted eigenvalues (blocks
  of very different curvature, as the Hessian blocks of a Transformer);
- ``homogeneous``: block k holds every B-th eigenvalue from the k-th (every block spans the
  whole range, as a CNN's blocks).

The minimiser ``x* = H^{-1} b`` is fixed (``b = H x*``, ``x*`` drawn once), the initial point is
drawn from the run's seed (standard normal), and the loss is the suboptimality ``f(x) - f*``,
computed as ``1/2 (x - x*)^T H (x - x*)`` (no cancellation); ``log10_gap`` is its log10.
With ``noise`` > 0 each step's gradient gets ``noise * xi`` added, ``xi`` standard normal drawn
from (seed, step); the training loss's value stays exact.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

SPECTRA = ("heterogeneous", "homogeneous")
_PROBLEM_SEED = 20240101  # the rotations and the minimiser: one problem for every run


class Point(nn.Module):
    """The quadratic's parameters: one 1-D block each (routed as ``vector`` parameters)."""

    def __init__(self, blocks: list[torch.Tensor]) -> None:
        super().__init__()
        self.blocks = nn.ParameterList(nn.Parameter(b) for b in blocks)


class Quadratic:
    """The quadratic workload (see the module doc)."""

    def __init__(
        self,
        spectrum: Literal["heterogeneous", "homogeneous"] = "heterogeneous",
        blocks: int = 4,
        block_dim: int = 16,
        condition: float = 1000.0,
        noise: float = 0.0,
        rotate: bool = True,
    ) -> None:
        if spectrum not in SPECTRA:
            raise ValueError(f"spectrum {spectrum!r}: valid choices: {', '.join(SPECTRA)}")
        if blocks < 1 or block_dim < 1 or not condition >= 1.0 or noise < 0:
            raise ValueError("blocks, block_dim >= 1, condition >= 1 and noise >= 0 are needed")
        self.noise = noise
        d = blocks * block_dim
        lam = torch.logspace(0.0, math.log10(condition), d, dtype=torch.float64)
        order = torch.arange(d).view(blocks, block_dim)  # contiguous slices
        if spectrum == "homogeneous":
            order = torch.arange(d).view(block_dim, blocks).T  # every B-th eigenvalue
        gen = torch.Generator().manual_seed(_PROBLEM_SEED)
        self.eigenvalues: list[torch.Tensor] = []
        self.rotations: list[torch.Tensor] = []
        for k in range(blocks):
            q = torch.linalg.qr(
                torch.randn(block_dim, block_dim, generator=gen, dtype=torch.float64)
            )[0]
            self.rotations.append(q if rotate else torch.eye(block_dim, dtype=torch.float64))
            self.eigenvalues.append(lam[order[k]])
        self.hessians = [
            q @ torch.diag(e) @ q.T for q, e in zip(self.rotations, self.eigenvalues, strict=True)
        ]
        self.minimiser = [
            torch.randn(block_dim, generator=gen, dtype=torch.float64) for _ in range(blocks)
        ]
        self.linear = [h @ x for h, x in zip(self.hessians, self.minimiser, strict=True)]
        self.f_star = sum(
            -0.5 * float(b @ torch.linalg.solve(h, b))
            for h, b in zip(self.hessians, self.linear, strict=True)
        )
        self.block_dim = block_dim

    def model(self, seed: int) -> Point:
        """One 1-D parameter per block, standard normal from ``seed`` (float64)."""
        gen = torch.Generator().manual_seed(seed)
        return Point(
            [torch.randn(self.block_dim, generator=gen, dtype=torch.float64) for _ in self.hessians]
        )

    def objective(self, model: Point) -> torch.Tensor:
        """``f(x)`` (not the suboptimality)."""
        return sum(
            (
                0.5 * x @ (h @ x) - b @ x
                for x, h, b in zip(model.blocks, self.hessians, self.linear, strict=True)
            ),
            torch.zeros((), dtype=torch.float64),
        )

    def batch(self, seed: int, step: int, size: int) -> list[torch.Tensor] | None:
        """The gradient noise of step ``step`` (None without noise)."""
        if not self.noise:
            return None
        gen = torch.Generator().manual_seed(seed * 1_000_003 + step)
        return [
            torch.randn(self.block_dim, generator=gen, dtype=torch.float64) for _ in self.hessians
        ]

    def gap(self, model: Point) -> torch.Tensor:
        """The suboptimality ``f(x) - f* = 1/2 (x - x*)^T H (x - x*)``, in this form: exact
        to float64's relative precision however small (``f(x) - f*`` would cancel)."""
        return sum(
            (
                0.5 * (x - s) @ (h @ (x - s))
                for x, h, s in zip(model.blocks, self.hessians, self.minimiser, strict=True)
            ),
            torch.zeros((), dtype=torch.float64),
        )

    def loss(self, model: Point, batch: list[torch.Tensor] | None) -> torch.Tensor:
        """``f(x) - f*``; with noise, its gradient plus ``noise * xi`` (its value unchanged)."""
        out = self.gap(model)
        if batch is not None:
            dot = sum(
                (xi @ x for xi, x in zip(batch, model.blocks, strict=True)),
                torch.zeros((), dtype=torch.float64),
            )
            out = out + self.noise * (dot - dot.detach())
        return out

    @torch.no_grad()
    def evaluate(self, model: Point) -> dict[str, float]:
        """``val_loss``: the suboptimality ``f(x) - f*``; ``log10_gap``: its log10 (floored at
        -300 where it underflows to 0; inf when it overflows)."""
        gap = float(self.gap(model))
        return {"val_loss": gap, "log10_gap": math.log10(max(gap, 1e-300))}

    def reference_loss(self, model: Point) -> float:
        """The suboptimality at the initial point."""
        return self.evaluate(model)["val_loss"]
