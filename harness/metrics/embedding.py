"""Embedding metrics of the Coupled Adam paper (Sec. 4.3, Eqs. 25-28) and the App. D.2 probe.

For an embedding matrix E (V x H, rows e_i) and unigram probabilities p_i of the training data:

- ``iso``: Iso(E) = min_c Z(c) / max_c Z(c), Z(c) = sum_i exp(c . e_i), c over the eigenvectors
  of E^T E (Eq. 25), computed as exp(min log Z - max log Z) with log-sum-exp, so that neither
  overflows nor underflows. An eigenvector is only defined up to sign; ``iso`` follows the paper's
  code (``analysis/isotropy.py`` of flxst/coupled-adam): the eigenvectors ``numpy.linalg.eig``
  (LAPACK geev) returns for E^T E in float64, one sign each, as returned. This is the value to
  compare with the paper's tables. When one direction (the mean embedding) dominates, the sign
  the solver picks barely matters (the other directions' Z lies between Z(c) and Z(-c)).
- ``iso_sym``: the sign-symmetric reading, both c and -c for every eigenvector (from the SVD):
  deterministic whatever the solver, never larger than ``iso``, and about ``iso`` squared when
  the mean direction dominates (0.69 vs 0.83 for a mean-shifted Gaussian E, see the tests).
  Before ``iso_sym`` existed, ``iso`` held this value.
- ``mu_norm``: ||mu||, mu = (1/V) sum_i e_i (Eq. 9); ``mean_norm``: (1/V) sum_i ||e_i||;
  ``mu_norm_ratio``: their ratio ||mu||^r (Eq. 26).
- ``rho``: 100 * Pearson correlation of (||e_i||)_i with (p_i)_i (Eq. 27). Every row is
  included; tokens that never occur have p_i = 0.
- ``kappa``: 100 * smallest / largest singular value of E (Eq. 28).

All are computed in float64 from one SVD, E = U S W^T: the eigenvectors of E^T E are the rows of
W^T, and the projections c_k . e_i are the entries of U S. A value that is undefined (a zero
matrix, constant norms or probabilities for ``rho``) is None.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

import numpy as np
import torch
from torch import Tensor

from harness.metrics.catalogue import Producer, produced_by

EMBEDDING_METRICS = produced_by(Producer.EMBEDDING)
"""Keys of :func:`embedding_metrics` (declared in :mod:`harness.metrics.catalogue`)."""
PROBE_METRICS = produced_by(Producer.PROBE)
"""Keys of :func:`second_moment_probe`."""


def _float64(x: Tensor | np.ndarray) -> Tensor:
    return torch.as_tensor(x).detach().to(device="cpu", dtype=torch.float64)


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 and math.isfinite(num / den) else None


def _pearson(x: Tensor, y: Tensor) -> float | None:
    xc, yc = x - x.mean(), y - y.mean()
    # A constant vector has no correlation; its centred norm is rounding noise, not zero.
    if any(float(c.norm()) <= 1e-12 * float(v.norm()) for c, v in ((xc, x), (yc, y))):
        return None
    return _ratio(float(xc @ yc), float(xc.norm() * yc.norm()))


def _unigram_probabilities(counts: Tensor | np.ndarray, rows: int) -> Tensor:
    p = _float64(counts)
    if p.shape != (rows,):
        raise ValueError(f"unigram_counts has shape {tuple(p.shape)}, expected ({rows},)")
    if (p < 0).any():
        raise ValueError("unigram_counts must be >= 0")
    total = float(p.sum())
    return p / total if total > 0 else p


def isotropy(E: Tensor | np.ndarray) -> float | None:
    """Iso(E) of Eq. 25 in the paper's convention (module docstring); None for a zero matrix."""
    E64 = _float64(E).numpy()
    top = float(np.abs(E64).max(initial=0.0))
    if top == 0.0:
        return None
    # E^T E of E scaled by a power of two (exact): no overflow for huge E, the same eigenvectors.
    scaled = E64 / 2.0 ** math.frexp(top)[1]
    _, vectors = np.linalg.eig(scaled.T @ scaled)  # (H, H), columns c_k, signs as LAPACK returns
    # A symmetric matrix has real eigenvectors; geev may attach rounding-level imaginary parts.
    proj = torch.from_numpy(E64 @ np.real(vectors))  # (V, H): proj[i, k] = c_k . e_i
    log_z = torch.logsumexp(proj, dim=0)  # (H,)
    return math.exp(float(log_z.min() - log_z.max()))


def isotropy_symmetric(E: Tensor | np.ndarray) -> float | None:
    """Iso(E) of Eq. 25 over both signs of every eigenvector of E^T E; None for a zero matrix."""
    U, S, _ = torch.linalg.svd(_float64(E), full_matrices=False)
    return _isotropy_from_svd(U, S)


def _isotropy_from_svd(U: Tensor, S: Tensor) -> float | None:
    if float(S.max()) == 0.0:
        return None
    proj = U * S  # (V, K): proj[i, k] = c_k . e_i
    log_z = torch.cat([torch.logsumexp(proj, dim=0), torch.logsumexp(-proj, dim=0)])  # (2K,)
    return math.exp(float(log_z.min() - log_z.max()))


def embedding_metrics(
    E: Tensor | np.ndarray,
    unigram_counts: Tensor | np.ndarray,
    names: Collection[str] | None = None,
) -> dict[str, float | None]:
    """The paper's embedding metrics of E (module docstring), as plain floats.

    Args:
        E: ``(V, H)`` embedding (or output-head) matrix, any float dtype and device.
        unigram_counts: ``(V,)`` token counts (or probabilities) in the training data.
        names: only these metrics (None: all). Each is computed exactly as in the full set;
            the SVD (``kappa``, ``iso_sym``) and the eigensolver (``iso``) run only when asked
            for, which is what makes tracking the cheap ones through training cheap.

    Returns:
        ``{iso, mu_norm, mean_norm, mu_norm_ratio, rho, kappa, iso_sym}`` (or the ``names``).
    """
    want = set(EMBEDDING_METRICS if names is None else names)
    if unknown := want - set(EMBEDDING_METRICS):
        raise ValueError(f"unknown embedding metrics {sorted(unknown)}")
    E64 = _float64(E)
    if E64.ndim != 2:
        raise ValueError(f"E must be a (V, H) matrix, got shape {tuple(E64.shape)}")
    p = _unigram_probabilities(unigram_counts, E64.shape[0])
    norms = E64.norm(dim=1)  # (V,)
    mu_norm = float(E64.mean(dim=0).norm())
    mean_norm = float(norms.mean())
    out: dict[str, float | None] = {}
    if "iso" in want:
        out["iso"] = isotropy(E64)
    out |= {"mu_norm": mu_norm, "mean_norm": mean_norm}
    out["mu_norm_ratio"] = _ratio(mu_norm, mean_norm)
    if "rho" in want:
        rho = _pearson(norms, p)
        out["rho"] = None if rho is None else 100.0 * rho
    if want & {"kappa", "iso_sym"}:
        U, S, _ = torch.linalg.svd(E64, full_matrices=False)  # S descending, (min(V, H),)
        kappa = _ratio(float(S[-1]), float(S[0]))
        out["kappa"] = None if kappa is None else 100.0 * kappa
        out["iso_sym"] = _isotropy_from_svd(U, S)
    return {k: out[k] for k in EMBEDDING_METRICS if k in want}


def _group_of(optimizer: torch.optim.Optimizer, param: Tensor) -> dict[str, Any] | None:
    for group in optimizer.param_groups:
        if any(q is param for q in group["params"]):
            return group
    return None


def second_moment_probe(
    optimizer: torch.optim.Optimizer,
    embedding_param: Tensor,
    unigram_counts: Tensor | np.ndarray,
) -> dict[str, float | None]:
    """Adam's second moment of the embedding rows against unigram probability (paper App. D.2).

    Per row i, ``v_i`` is the mean over H of the bias-corrected ``exp_avg_sq`` (v / (1 - beta2^t),
    when the param group's beta2 and the step are known; else the raw v). A line through the
    origin, ``v_i = A * p_i`` (Eq. 52), is fitted by least squares: ``v_unigram_slope`` is A and
    ``v_unigram_r2`` is 1 - SS_res / SS_tot with the total sum of squares about the mean.
    The state is one snapshot (at the end of a run); its EMA already averages over the last
    ~1 / (1 - beta2) steps. Both are None when the optimizer keeps no ``exp_avg_sq`` for the
    parameter (SGD, sign methods) or the fit is undefined.
    """
    none = dict.fromkeys(PROBE_METRICS)
    state = optimizer.state.get(embedding_param)
    if not state or "exp_avg_sq" not in state:
        return none
    v = _float64(state["exp_avg_sq"])
    v = v.reshape(v.shape[0], -1).mean(dim=1)  # (V,)
    group = _group_of(optimizer, embedding_param) or {}
    beta2 = group["betas"][1] if "betas" in group else group.get("beta2")
    step = state.get("step")
    if beta2 is not None and step:
        v = v / (1 - beta2 ** float(step))
    p = _unigram_probabilities(unigram_counts, v.shape[0])
    pp = float(p @ p)
    if pp == 0.0:
        return none
    slope = float(p @ v) / pp
    ss_tot = float(((v - v.mean()) ** 2).sum())
    r2 = _ratio(ss_tot - float(((v - slope * p) ** 2).sum()), ss_tot)
    return {"v_unigram_r2": r2, "v_unigram_slope": slope}
