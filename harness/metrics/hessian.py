"""Blockwise Hessian spectra by stochastic Lanczos quadrature (SLQ), and the Jensen-Shannon
distance between spectral densities (Zhang et al. 2024, "Why Transformers need Adam: a Hessian
perspective", Figs. 3-4; SLQ as in Ghorbani et al. 2019).

- :func:`block_hvp`: the Hessian-vector product of a loss w.r.t. one parameter tensor (a
  "block"), the other parameters held fixed, i.e. the block's diagonal block of the full Hessian,
  by double backward. The gradient graph is built once and reused for every product.
- :func:`lanczos`: ``steps`` Lanczos iterations with full reorthogonalisation (twice, against
  every earlier Lanczos vector), in float64. It stops early at an invariant subspace.
- :func:`slq`: one Lanczos run per Rademacher probe z / ||z||; the Ritz values theta_k (nodes)
  and the squared first components of the eigenvectors of the tridiagonal matrix (weights) form a
  Gauss quadrature of the probe's spectral measure: sum_k w_k theta_k^p = u^T H^p u exactly for
  p <= 2 * steps - 1. Averaged over probes, it estimates the normalised moments tr(H^p) / n.
- :meth:`Spectrum.density`: the Gaussian-smoothed density sum_k w_k N(t; theta_k, sigma^2),
  averaged over probes, on a grid given by the caller (a common grid for every block makes the
  densities comparable), renormalised to integrate to 1 on that grid.
- :func:`js_distance`: sqrt of the Jensen-Shannon divergence (natural log) of two densities on
  one grid; 0 for equal densities, symmetric, at most sqrt(ln 2) = 0.8326 (disjoint supports).
  In bits (log base 2) the bound would be 1; this module uses nats throughout.

Everything is deterministic given ``seed`` (the probes come from a private ``torch.Generator``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

MatVec = Callable[[Tensor], Tensor]
"""A symmetric linear map on flat float64 vectors of length n."""

JS_MAX = math.sqrt(math.log(2.0))
"""Upper bound of :func:`js_distance` (nats): sqrt(ln 2), reached for disjoint supports."""


def block_hvp(loss: Tensor, param: Tensor) -> MatVec:
    """The map v -> (d^2 loss / d param^2) v on flat float64 vectors of length ``param.numel()``.

    ``loss`` must be a scalar computed from ``param`` with autograd enabled. The first gradient
    is taken once (``create_graph=True``); each product is one more backward through it.
    """
    (grad,) = torch.autograd.grad(loss, param, create_graph=True)
    flat_grad = grad.reshape(-1)

    def matvec(v: Tensor) -> Tensor:
        vec = v.to(device=param.device, dtype=param.dtype)
        (hv,) = torch.autograd.grad(flat_grad, param, grad_outputs=vec, retain_graph=True)
        return hv.reshape(-1).to(device="cpu", dtype=torch.float64)

    return matvec


@dataclass(frozen=True)
class Tridiagonal:
    """The Lanczos tridiagonal matrix: ``alpha`` (m,) on the diagonal, ``beta`` (m - 1,) beside."""

    alpha: Tensor
    beta: Tensor

    def matrix(self) -> Tensor:
        """The dense (m, m) float64 matrix."""
        return (torch.diag(self.alpha) + torch.diag(self.beta, 1) + torch.diag(self.beta, -1)).to(
            torch.float64
        )


def lanczos(matvec: MatVec, start: Tensor, steps: int, tol: float = 1e-10) -> Tridiagonal:
    """``steps`` Lanczos iterations of ``matvec`` from ``start`` (normalised here), with full
    reorthogonalisation; fewer when the Krylov space is invariant (a new residual of norm below
    ``tol`` times the largest |alpha| or beta seen so far)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    q = start.to(torch.float64).reshape(-1)
    q = q / q.norm()
    basis = [q]
    alphas: list[float] = []
    betas: list[float] = []
    scale = 0.0
    for j in range(min(steps, q.numel())):
        w = matvec(basis[j])
        alpha = float(w @ basis[j])
        alphas.append(alpha)
        Q = torch.stack(basis)  # (j + 1, n)
        for _ in range(2):  # classical Gram-Schmidt, twice ("twice is enough")
            w = w - Q.T @ (Q @ w)
        beta = float(w.norm())
        scale = max(scale, abs(alpha), beta)
        if j == steps - 1 or len(basis) == q.numel() or beta <= tol * max(scale, 1e-300):
            break
        betas.append(beta)
        basis.append(w / beta)
    return Tridiagonal(
        torch.tensor(alphas, dtype=torch.float64), torch.tensor(betas, dtype=torch.float64)
    )


def gauss_quadrature(tri: Tridiagonal) -> tuple[Tensor, Tensor]:
    """(nodes, weights) of the Gauss quadrature of a Lanczos run: the Ritz values and the squared
    first components of the tridiagonal matrix's eigenvectors (they sum to 1)."""
    theta, vecs = torch.linalg.eigh(tri.matrix())
    return theta, vecs[0] ** 2


@dataclass(frozen=True)
class Spectrum:
    """An SLQ estimate of a symmetric matrix's spectral measure: per probe, Gauss quadrature
    ``nodes`` and ``weights`` (lists of (m_i,) float64 tensors; m_i <= steps), and the
    dimension ``dim`` of the matrix."""

    nodes: tuple[Tensor, ...]
    weights: tuple[Tensor, ...]
    dim: int

    def moment(self, p: int) -> float:
        """The estimate of tr(H^p) / n: the probes' mean of sum_k w_k theta_k^p."""
        return sum(float(w @ t**p) for t, w in zip(self.nodes, self.weights, strict=True)) / len(
            self.nodes
        )

    def extremes(self) -> tuple[float, float]:
        """The smallest and largest Ritz value over all probes (inside [lambda_min, lambda_max],
        converging to them from inside)."""
        return min(float(t.min()) for t in self.nodes), max(float(t.max()) for t in self.nodes)

    def density(self, grid: Tensor, sigma: float) -> Tensor:
        """The Gaussian-smoothed density (std ``sigma``) on the uniform 1-D ``grid``, averaged
        over probes and renormalised so that ``density.sum() * spacing == 1``."""
        if sigma <= 0:
            raise ValueError(f"sigma must be > 0, got {sigma}")
        g = grid.to(torch.float64).reshape(-1, 1)  # (G, 1)
        total = torch.zeros(g.shape[0], dtype=torch.float64)
        for t, w in zip(self.nodes, self.weights, strict=True):
            kernel = torch.exp(-0.5 * ((g - t) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))
            total += kernel @ w  # (G,)
        total /= len(self.nodes)
        mass = float(total.sum()) * float(grid[1] - grid[0])
        if mass <= 0:
            raise ValueError("the density has no mass on the grid; widen it or raise sigma")
        return total / mass


def slq(matvec: MatVec, dim: int, steps: int, probes: int, seed: int) -> Spectrum:
    """Stochastic Lanczos quadrature of the symmetric map ``matvec`` on R^dim: ``probes``
    Lanczos runs of ``steps`` iterations from Rademacher vectors drawn with ``seed``."""
    if probes < 1:
        raise ValueError(f"probes must be >= 1, got {probes}")
    gen = torch.Generator().manual_seed(seed)
    nodes, weights = [], []
    for _ in range(probes):
        z = torch.randint(0, 2, (dim,), generator=gen, dtype=torch.float64) * 2 - 1
        theta, w = gauss_quadrature(lanczos(matvec, z, steps))
        nodes.append(theta)
        weights.append(w)
    return Spectrum(tuple(nodes), tuple(weights), dim)


def js_distance(p: Tensor, q: Tensor) -> float:
    """Jensen-Shannon distance (natural log) of two densities (or histograms) on one grid:
    sqrt(KL(p || m) / 2 + KL(q || m) / 2), m = (p + q) / 2, each first normalised to sum 1.
    In [0, sqrt(ln 2)]."""
    if p.shape != q.shape:
        raise ValueError(f"densities on different grids: shapes {tuple(p.shape)} and {q.shape}")
    if bool((p < 0).any()) or bool((q < 0).any()):
        raise ValueError("densities must be non-negative")
    p = p.to(torch.float64) / p.sum()
    q = q.to(torch.float64) / q.sum()

    def kl_to_mean(a: Tensor, b: Tensor) -> float:
        # a log(a / m) = a (log 2 + log a - log(a + b)): no division by m, which underflows to 0
        # where a is subnormal (a Gaussian tail), and a + b >= a > 0 wherever a counts.
        pos = a > 0
        a, b = a[pos], b[pos]
        return float((a * (math.log(2.0) + torch.log(a) - torch.log(a + b))).sum())

    return math.sqrt(max(0.0, (kl_to_mean(p, q) + kl_to_mean(q, p)) / 2))
