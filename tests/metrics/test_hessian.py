"""Blockwise Hessian spectra (harness.metrics.hessian): SLQ against eigvalsh, the HVP against the
dense Hessian, and the Jensen-Shannon distance against hand computations."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from harness.metrics.hessian import (
    JS_MAX,
    block_hvp,
    gauss_quadrature,
    js_distance,
    lanczos,
    slq,
)


def _sym(n: int, seed: int) -> torch.Tensor:
    """A random symmetric matrix with a spread, indefinite spectrum (known eigenvalues)."""
    gen = torch.Generator().manual_seed(seed)
    Q, _ = torch.linalg.qr(torch.randn(n, n, generator=gen, dtype=torch.float64))
    lam = torch.cat(
        [
            torch.linspace(-1.0, 2.0, n - 2, dtype=torch.float64),
            torch.tensor([6.0, 10.0], dtype=torch.float64),
        ]
    )
    return Q @ torch.diag(lam) @ Q.T


def test_full_lanczos_recovers_every_eigenvalue() -> None:
    A = _sym(40, 0)
    theta, w = gauss_quadrature(lanczos(lambda v: A @ v, torch.ones(40), steps=40))
    torch.testing.assert_close(theta, torch.linalg.eigvalsh(A), atol=1e-9, rtol=0)
    assert float(w.sum()) == pytest.approx(1.0, abs=1e-12)


def test_quadrature_is_exact_for_low_moments() -> None:
    """Gauss quadrature with m nodes integrates u^T A^p u exactly for p <= 2m - 1."""
    A = _sym(120, 1)
    z = torch.randn(120, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    u = z / z.norm()
    m = 8
    theta, w = gauss_quadrature(lanczos(lambda v: A @ v, z, steps=m))
    for p in range(2 * m):
        exact = float(u @ torch.linalg.matrix_power(A, p) @ u)
        assert float(w @ theta**p) == pytest.approx(exact, rel=1e-8, abs=1e-10), p


def test_slq_moments_and_extremes_match_eigvalsh() -> None:
    n = 200
    A = _sym(n, 2)
    lam = torch.linalg.eigvalsh(A)
    spec = slq(lambda v: A @ v, n, steps=30, probes=30, seed=0)
    for p in (1, 2, 3):
        exact = float((lam**p).mean())
        # Hutchinson with Rademacher probes: var(z^T B z) <= 2 ||B||_F^2, so the mean of the
        # probes' estimates of tr(B) / n has std <= sqrt(2 / probes) ||B||_F / n. Allow 4 std.
        std = math.sqrt(2 / 30) * float((lam ** (2 * p)).sum().sqrt()) / n
        assert abs(spec.moment(p) - exact) < 4 * std, (p, spec.moment(p), exact, std)
        assert std < 0.2 * max(1.0, abs(exact))  # the check has teeth
    lo, hi = spec.extremes()
    assert lo == pytest.approx(float(lam[0]), abs=1e-3)
    assert hi == pytest.approx(float(lam[-1]), abs=1e-6)
    assert lam[0] - 1e-9 <= lo and hi <= lam[-1] + 1e-9  # Ritz values lie inside the spectrum


def test_slq_density_matches_the_eigenvalue_histogram() -> None:
    n = 200
    A = _sym(n, 2)
    lam = torch.linalg.eigvalsh(A)
    grid = torch.linspace(-3.0, 12.0, 1501, dtype=torch.float64)
    dx = float(grid[1] - grid[0])
    sigma = 0.3
    est = slq(lambda v: A @ v, n, steps=60, probes=20, seed=1).density(grid, sigma)
    # The exact smoothed density: the same Gaussian kernel on every true eigenvalue.
    exact = torch.exp(-0.5 * ((grid[:, None] - lam) / sigma) ** 2).sum(1)
    exact /= exact.sum() * dx
    assert float(est.sum()) * dx == pytest.approx(1.0, abs=1e-12)
    assert js_distance(est, exact) < 0.05
    assert float((est - exact).abs().sum()) * dx < 0.1  # L1 distance of the two densities
    assert slq(lambda v: A @ v, n, 60, 20, seed=1).density(grid, sigma).equal(est)  # seeded


def test_block_hvp_equals_the_dense_hessian_times_v() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    x, y = torch.randn(5, 3), torch.randint(0, 2, (5,))
    params = dict(model.named_parameters())

    def loss_of(name: str, w: torch.Tensor) -> torch.Tensor:
        out = torch.func.functional_call(model, {**params, name: w}, (x,))
        return nn.functional.cross_entropy(out, y)

    for name in ("0.weight", "2.weight", "0.bias"):
        p = params[name]
        H = torch.autograd.functional.hessian(lambda w, n=name: loss_of(n, w), p.detach())
        H = H.reshape(p.numel(), p.numel()).double()
        v = torch.randn(p.numel(), dtype=torch.float64)
        matvec = block_hvp(nn.functional.cross_entropy(model(x), y), p)
        torch.testing.assert_close(matvec(v), H @ v, atol=1e-6, rtol=1e-5)
        assert float((H - H.T).abs().max()) < 1e-6  # the block is symmetric (a diagonal block)


def test_js_distance_hand_values_and_bounds() -> None:
    a = torch.tensor([0.5, 0.5])
    b = torch.tensor([1.0, 0.0])
    # m = (0.75, 0.25): KL(a||m) = 0.5 ln(4/3), KL(b||m) = ln(4/3); JSD = 0.75 ln(4/3).
    assert js_distance(a, b) == pytest.approx(math.sqrt(0.75 * math.log(4 / 3)), rel=1e-12)
    assert js_distance(b, a) == js_distance(a, b)
    assert js_distance(a, 3 * a) == 0.0  # normalised first: the same distribution
    assert js_distance(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])) == pytest.approx(JS_MAX)
    assert abs(JS_MAX - 0.8325546) < 1e-7
    # Gaussian tails underflow to subnormals, whose half is 0: still finite, and almost disjoint.
    tiny = torch.tensor([5e-324, 1.0, 0.0], dtype=torch.float64)
    assert js_distance(tiny, torch.tensor([0.0, 0.0, 1.0])) == pytest.approx(JS_MAX)
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        p, q = torch.rand(7, generator=gen), torch.rand(7, generator=gen)
        assert 0.0 < js_distance(p, q) <= JS_MAX
        assert js_distance(p, q) == pytest.approx(js_distance(q, p), rel=1e-12)


def test_bad_inputs_are_named() -> None:
    with pytest.raises(ValueError, match="different grids"):
        js_distance(torch.ones(3), torch.ones(4))
    with pytest.raises(ValueError, match="sigma must be > 0"):
        slq(lambda v: v, 4, 2, 1, 0).density(torch.linspace(0, 1, 5), 0.0)
    with pytest.raises(ValueError, match="steps must be >= 1"):
        lanczos(lambda v: v, torch.ones(3), 0)


def test_block_hvp_on_the_gpt_matches_finite_differences() -> None:
    """On the harness's GPT (math attention kernel: the CPU flash kernel has no double backward),
    H v of a block equals the central difference of its gradient along v, and is symmetric."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from harness.core.config import Architecture
    from harness.model.architecture import preset_fields
    from harness.model.gpt import GPT

    torch.manual_seed(0)
    fields = preset_fields("tiny") | {"d_model": 32, "n_head": 2, "n_layer": 1}
    model = GPT(Architecture(model="tiny", **fields, vocab_size=64), 16).double()
    x, y = torch.randint(0, 64, (2, 16)), torch.randint(0, 64, (2, 16))
    with sdpa_kernel(SDPBackend.MATH):
        for name in ("blocks.0.attn.q.weight", "blocks.0.mlp.up.weight"):
            p = dict(model.named_parameters())[name]
            matvec = block_hvp(model(x, y), p)
            u, v = (
                torch.randn(p.numel(), dtype=torch.float64),
                torch.randn(p.numel(), dtype=torch.float64),
            )
            hv = matvec(v)
            assert float(u @ hv) == pytest.approx(float(v @ matvec(u)), rel=1e-6)

            def grad_at(w: torch.Tensor, p: torch.Tensor = p) -> torch.Tensor:
                with torch.no_grad():
                    p.copy_(w)
                (g,) = torch.autograd.grad(model(x, y), p)
                return g.reshape(-1)

            w0, eps = p.detach().clone(), 1e-4
            step = (eps * v).reshape(p.shape)
            fd = (grad_at(w0 + step) - grad_at(w0 - step)) / (2 * eps)
            grad_at(w0)
            # 5e-4 measured: RoPE rotates in float32 even in a float64 model
            assert float((fd - hv).norm() / hv.norm()) < 5e-3, name
