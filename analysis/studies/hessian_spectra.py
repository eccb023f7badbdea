"""Blockwise Hessian spectra of the tiny GPT at initialisation (Zhang et al. 2024, "Why
Transformers need Adam: a Hessian perspective", Figs. 3-4, at laptop scale).

For each parameter block (embedding, the first layer's attention q, k, v, proj and MLP gate, up,
proj, the second layer's q and v, the output head) it estimates the spectrum of that block's
diagonal Hessian block of the training loss on one batch of real tokens, by stochastic Lanczos
quadrature (:mod:`harness.metrics.hessian`), and the Jensen-Shannon distance between every two
blocks' spectral densities, twice:

- ``raw``: the densities of the eigenvalues themselves, on one grid spanning every block's Ritz
  values (Gaussian std = 1/200 of that span): different scales count as different spectra;
- ``shape``: each block's eigenvalues divided by its largest |Ritz value| (so on [-1, 1], std
  0.01): only the shape counts. The paper's Fig. 3 normalises by the 10th largest eigenvalue;
  20 Lanczos nodes do not resolve that one, so the largest stands in.

Nothing is trained or downloaded: the model is ``GPT`` of the ``tiny`` preset initialised with
seed 0, the batch is ``TokenData.batch(step 0, seed 0)`` of the registered default dataset
(prepared from packaged text on first use). Attention runs on the math SDPA kernel (the CPU flash
kernel has no double backward). Writes ``analysis/studies/hessian_spectra.{png,txt}``::

    python analysis/studies/hessian_spectra.py
"""

from __future__ import annotations

import time

import torch
from _study import RESULTS, Study
from torch.nn.attention import SDPBackend, sdpa_kernel

from harness.core.config import Architecture
from harness.data.batches import TokenData
from harness.data.catalogue import DEFAULT_DATASET, data_root, get_dataset
from harness.data.prepare import ensure_prepared
from harness.metrics.hessian import JS_MAX, Spectrum, block_hvp, js_distance, slq
from harness.model.architecture import preset_fields
from harness.model.gpt import GPT

PRESET, SEQ_LEN, BATCH = "tiny", 64, 8
STEPS, PROBES, SEED = 20, 2, 0
GRID = 2001
BLOCKS = {
    "embedding": "embedding.weight",
    "L0 q": "blocks.0.attn.q.weight",
    "L0 k": "blocks.0.attn.k.weight",
    "L0 v": "blocks.0.attn.v.weight",
    "L0 attn.proj": "blocks.0.attn.proj.weight",
    "L0 mlp.gate": "blocks.0.mlp.gate.weight",
    "L0 mlp.up": "blocks.0.mlp.up.weight",
    "L0 mlp.proj": "blocks.0.mlp.proj.weight",
    "L1 q": "blocks.1.attn.q.weight",
    "L1 v": "blocks.1.attn.v.weight",
    "head": "head.weight",
}
"""Display name -> parameter name of the blocks measured."""
REPEAT = ("L0 q", "L0 mlp.gate")
"""Blocks measured a second time with probe seed 1: JS distance between two estimates of one
block, the floor below which two blocks' distance means nothing."""


def spectra() -> tuple[dict[str, Spectrum], float]:
    """Each block's SLQ spectrum, and the batch's loss."""
    torch.manual_seed(SEED)
    V = get_dataset(DEFAULT_DATASET).vocab_size
    model = GPT(Architecture(model=PRESET, **preset_fields(PRESET), vocab_size=V), SEQ_LEN)
    x, y = TokenData(ensure_prepared(DEFAULT_DATASET, data_root())).batch(0, SEED, BATCH, SEQ_LEN)
    params = dict(model.named_parameters())
    out: dict[str, Spectrum] = {}
    start = time.time()
    with sdpa_kernel(SDPBackend.MATH):
        for label, name in BLOCKS.items():
            p = params[name]
            loss = model(x, y)
            out[label] = slq(block_hvp(loss, p), p.numel(), steps=STEPS, probes=PROBES, seed=SEED)
            print(f"{label}: {time.time() - start:.0f} s", flush=True)
            if label in REPEAT:  # the same block, other probes: the estimate's noise floor
                out[f"{label} (seed 1)"] = slq(block_hvp(loss, p), p.numel(), STEPS, PROBES, 1)
    return out, float(loss.detach())


def densities(specs: dict[str, Spectrum], scale: dict[str, float], sigma_frac: float):
    """Densities of each block's eigenvalues divided by ``scale[block]`` on one grid."""
    scaled = {
        k: Spectrum(tuple(t / scale[k] for t in s.nodes), s.weights, s.dim)
        for k, s in specs.items()
    }
    lo = min(s.extremes()[0] for s in scaled.values())
    hi = max(s.extremes()[1] for s in scaled.values())
    span = hi - lo
    grid = torch.linspace(lo - 0.05 * span, hi + 0.05 * span, GRID, dtype=torch.float64)
    return grid, {k: s.density(grid, sigma_frac * span) for k, s in scaled.items()}


def js_table(dens: dict[str, torch.Tensor]) -> tuple[list[str], torch.Tensor]:
    names = list(dens)
    js = torch.tensor([[js_distance(dens[a], dens[b]) for b in names] for a in names])
    return names, js


def main() -> None:
    study = Study("hessian_spectra", "hessian_spectra")
    t = time.time()
    specs, loss = spectra()
    took = time.time() - t
    study.note(
        f"\n# {PRESET} GPT at init (seed {SEED}), batch {BATCH} x {SEQ_LEN} tokens of "
        f"{DEFAULT_DATASET} (loss {loss:.4f}); SLQ {STEPS} Lanczos steps x {PROBES} Rademacher "
        f"probes per block; {len(specs) * STEPS * PROBES} Hessian-vector products in {took:.0f} s"
    )
    study.note(
        f"\n{'block':<14}{'n':>9}{'ritz min':>12}{'ritz max':>12}{'tr(H)/n':>12}{'tr(H^2)/n':>12}"
    )
    for k, s in specs.items():
        lo, hi = s.extremes()
        study.note(
            f"{k:<14}{s.dim:>9}{lo:>12.3e}{hi:>12.3e}{s.moment(1):>12.3e}{s.moment(2):>12.3e}"
        )
    for k in REPEAT:
        again = specs.pop(f"{k} (seed 1)")
        pair = {k: specs[k], "again": again}
        scale = dict.fromkeys(pair, max(abs(v) for v in specs[k].extremes()))
        floor = js_distance(*densities(pair, scale, 1 / 200)[1].values())
        study.note(f"noise floor: JS(shape) between probe seeds 0 and 1 of {k}: {floor:.3f}")
    one = {k: 1.0 for k in specs}
    top = {k: max(abs(v) for v in s.extremes()) for k, s in specs.items()}
    _, raw = densities(specs, one, 1 / 200)
    shape_grid, shape = densities(specs, top, 1 / 200)
    names, js_raw = js_table(raw)
    _, js_shape = js_table(shape)
    for title, js in (("raw eigenvalues", js_raw), ("shape (eigenvalues / max |ritz|)", js_shape)):
        study.note(f"\n# JS distance (nats, max sqrt(ln 2) = {JS_MAX:.3f}), {title}")
        study.note(" " * 14 + "".join(f"{n[:7]:>8}" for n in names))
        for n, row in zip(names, js, strict=True):
            study.note(f"{n:<14}" + "".join(f"{float(v):>8.3f}" for v in row))
        off = js[~torch.eye(len(names), dtype=torch.bool)]
        study.note(
            f"mean off-diagonal {float(off.mean()):.3f}, min {float(off.min()):.3f}, "
            f"max {float(off.max()):.3f}"
        )
    png = _figure(shape_grid, shape, top, names, js_raw, js_shape)
    study.save_png(png)
    study.finish()


def _figure(grid, shape, scale, names, js_raw, js_shape):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        1, 4, figsize=(22, 5.5), gridspec_kw={"width_ratios": [1.3, 0.7, 1, 1]}
    )
    for k, d in shape.items():
        axes[0].semilogy(grid.numpy(), d.clamp_min(1e-12).numpy(), label=k, lw=1)
    axes[0].set(xlabel="eigenvalue / largest |Ritz value| of the block", ylabel="density (log)")
    axes[0].set(ylim=(1e-6, None), title="blockwise Hessian spectra at init (SLQ)")
    axes[0].legend(fontsize=7, ncol=2)
    axes[1].barh(names, [scale[k] for k in names], log=True)
    axes[1].invert_yaxis()
    axes[1].set(xlabel="largest |Ritz value| (log)", title="scale of each block")
    for ax, js, title in ((axes[2], js_raw, "raw eigenvalues"), (axes[3], js_shape, "shape")):
        im = ax.imshow(js.numpy(), vmin=0, vmax=JS_MAX, cmap="viridis")
        ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
        ax.set_yticks(range(len(names)), names, fontsize=7)
        ax.set_title(f"JS distance between blocks: {title}")
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    out = RESULTS / "hessian_spectra"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "hessian_spectra.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


if __name__ == "__main__":
    main()
