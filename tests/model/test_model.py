"""The GPT model: shapes, causality, tying, RoPE, init, parameter/FLOP counts, a training step."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from harness.core import config
from harness.core.catalogue import FIELDS, names_with
from harness.core.config import Architecture
from harness.core.errors import UserError
from harness.core.fields import Role
from harness.model.architecture import (
    PRESETS,
    flops_per_token,
    matmul_params,
    param_count,
    preset_fields,
)
from harness.model.gpt import GPT, MLPS, NORMS, Rotary
from harness.model.gpt import trainable_params as count_params
from harness.optim.routing import split_parameters


@dataclasses.dataclass(frozen=True)
class Model:
    """An architecture section and the sequence length the model is built for."""

    arch: Architecture
    seq_len: int

    def __getattr__(self, name: str):
        return getattr(self.arch, name)


def cfg_of(preset: str = "tiny", vocab_size: int = 512, seq_len: int = 32, **kw) -> Model:
    fields = {**preset_fields(preset), **kw}
    return Model(Architecture(model=preset, **fields, vocab_size=vocab_size), seq_len)


def build(cfg: Model, seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    return GPT(cfg.arch, cfg.seq_len)


VARIANTS = {
    "talk": {},
    "gpt2": dict(preset_fields("tiny-gpt2")),
    "rope-tied-layernorm": dict(norm="layernorm", tie_weights=True, bias=True),
    "learned-swiglu": dict(positions="learned", rotary_frac=0.0),
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_shapes_and_loss_dtype(variant: str) -> None:
    model = build(cfg_of(**VARIANTS[variant]))
    idx = torch.randint(0, 512, (3, 32))
    logits = model(idx)
    assert logits.shape == (3, 32, 512)
    short = model(idx[:, :7])  # shorter than seq_len is fine
    assert short.shape == (3, 7, 512)
    loss = model(idx, idx)
    assert loss.shape == () and loss.dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16_loss = model(idx, idx)
    assert bf16_loss.dtype == torch.float32
    assert abs(bf16_loss.item() - loss.item()) < 0.05


@pytest.mark.parametrize("variant", VARIANTS)
def test_causal(variant: str) -> None:
    model = build(cfg_of(**VARIANTS[variant])).eval()
    idx = torch.randint(0, 512, (2, 32))
    changed = idx.clone()
    t = 13
    changed[:, t] = (idx[:, t] + 1) % 512
    with torch.no_grad():
        a, b = model(idx), model(changed)
    torch.testing.assert_close(a[:, :t], b[:, :t])
    assert (a[:, t:] - b[:, t:]).abs().amax(dim=-1).min() > 0  # every later position sees it


def test_tied_shares_embedding_and_counts_it_once() -> None:
    tied, untied = build(cfg_of(tie_weights=True)), build(cfg_of(tie_weights=False))
    assert tied.head is None and untied.head is not None
    assert tied.output_weight() is tied.embedding.weight
    assert count_params(untied) - count_params(tied) == 512 * 128
    idx = torch.randint(0, 512, (2, 32))
    # logits are x @ E^T: changing one embedding row changes that token's logit everywhere
    with torch.no_grad():
        before = tied(idx)
        tied.embedding.weight[7] += 1.0
        after = tied(idx)
    diff = (after - before).abs()
    assert diff[..., 7].min() > 0
    groups = split_parameters(tied)
    assert groups["head"] == [] and groups["embedding"] == [tied.embedding.weight]


def test_only_learned_positions_have_pos_in_their_name() -> None:
    learned = build(cfg_of("tiny-gpt2"))
    names = [n for n, _ in learned.named_parameters() if "pos" in n]
    assert names == ["pos_embedding.weight"]
    assert not [n for n, _ in build(cfg_of()).named_parameters() if "pos" in n]
    groups = split_parameters(learned)
    assert any(p is learned.pos_embedding.weight for p in groups["vector"])
    assert all(p.ndim == 2 for p in groups["matrix"])
    # the RoPE cache is not state: it neither trains nor lands in checkpoints
    assert not any("cos" in k or "sin" in k for k in build(cfg_of()).state_dict())


def test_rotary_dims_rounding() -> None:
    assert cfg_of(rotary_frac=0.25).rotary_dims == 8  # head_dim 32
    assert cfg_of(rotary_frac=0.3).rotary_dims == 10  # 4.8 pairs -> 5
    assert cfg_of(rotary_frac=0.0).rotary_dims == 0
    assert cfg_of(rotary_frac=1.0).rotary_dims == 32
    assert cfg_of("tiny-gpt2", rotary_frac=0.5).rotary_dims == 0  # learned positions
    assert cfg_of("160m").rotary_dims == 16  # 25% of head_dim 64


def test_rotary_frac_zero_is_identity_and_partial_leaves_the_rest() -> None:
    x = torch.randn(2, 4, 32, 32)  # (B, nh, T, hs)
    torch.testing.assert_close(Rotary(cfg_of(rotary_frac=0.0).arch, 32)(x), x)
    rot = Rotary(cfg_of(rotary_frac=0.5).arch, 32)
    y = rot(x)
    r = rot.dims
    assert r == 16
    torch.testing.assert_close(y[..., r:], x[..., r:])  # unrotated dims untouched
    torch.testing.assert_close(y[:, :, 0], x[:, :, 0])  # position 0: angle 0
    assert not torch.allclose(y[:, :, 1:, :r], x[:, :, 1:, :r])
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))  # a rotation


def test_rotary_scores_depend_on_relative_position_only() -> None:
    rot = Rotary(cfg_of(rotary_frac=1.0).arch, 32)
    q, k = torch.randn(32), torch.randn(32)

    def score(m: int, n: int) -> torch.Tensor:
        qs = torch.zeros(1, 1, 32, 32)
        ks = torch.zeros(1, 1, 32, 32)
        qs[0, 0, m], ks[0, 0, n] = q, k
        return rot(qs)[0, 0, m] @ rot(ks)[0, 0, n]

    torch.testing.assert_close(score(5, 2), score(20, 17))
    assert not torch.allclose(score(5, 2), score(5, 4))


def test_init_is_deterministic_and_scaled() -> None:
    cfg = cfg_of(d_model=256, n_head=4)
    a, b = build(cfg, seed=3), build(cfg, seed=3)
    for (n, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q), n
    assert not torch.equal(build(cfg, seed=4).embedding.weight, a.embedding.weight)
    proj = a.blocks[0].attn.proj.weight
    q = a.blocks[0].attn.q.weight
    assert proj.std().item() == pytest.approx(0.02 / math.sqrt(2 * cfg.n_layer), rel=0.03)
    assert q.std().item() == pytest.approx(0.02, rel=0.03)
    unscaled = build(Model(dataclasses.replace(cfg.arch, scaled_init=False), 32), seed=3)
    assert unscaled.blocks[0].mlp.proj.weight.std().item() == pytest.approx(0.02, rel=0.03)


def test_loss_at_init_is_near_log_vocab() -> None:
    for preset in ("tiny", "tiny-gpt2"):
        model = build(cfg_of(preset, vocab_size=4096, seq_len=64))
        idx = torch.randint(0, 4096, (4, 64))
        with torch.no_grad():
            loss = model(idx, torch.randint(0, 4096, (4, 64))).item()
        assert abs(loss - math.log(4096)) < 0.1, (preset, loss)


def _hand_count(p: str, V: int, T: int) -> tuple[int, int]:
    """(params, matmul params) of a preset from the architecture formulas."""
    f = PRESETS[p]
    L, d = f["n_layer"], f["d_model"]
    if f["activation"] == "gelu":  # GPT-2: biases everywhere, LayerNorm w+b, tied, positions
        h = 4 * d
        layer = 4 * d * d + 4 * d + 2 * d * h + h + d + 2 * 2 * d
        return L * layer + V * d + T * d + 2 * d, L * (4 * d * d + 2 * d * h) + V * d
    h = 64 * round(8 / 3 * d / 64)  # talk: SwiGLU, RMSNorm, untied, no biases
    layer = 4 * d * d + 3 * d * h + 2 * d
    return L * layer + 2 * V * d + d, L * (4 * d * d + 3 * d * h) + V * d


@pytest.mark.parametrize("preset", ["tiny", "tiny-gpt2", "160m", "410m", "gpt2-124m", "gpt2-350m"])
def test_param_counts_match_hand_formulas(preset: str) -> None:
    cfg = cfg_of(preset, vocab_size=50304, seq_len=1024)
    params, matmul = _hand_count(preset, 50304, 1024)
    assert param_count(cfg.arch, cfg.seq_len) == params
    assert matmul_params(cfg.arch) == matmul


def test_gpt2_124m_has_gpt2s_parameter_count() -> None:
    cfg = cfg_of("gpt2-124m", vocab_size=50257, seq_len=1024)
    assert param_count(cfg.arch, cfg.seq_len) == 124_439_808  # HF GPT-2 small, with positions
    assert count_params(build(cfg)) == 124_439_808  # the allocated model agrees
    big = cfg_of("160m", vocab_size=50304, seq_len=2048)
    assert param_count(big.arch, big.seq_len) == 162_220_800


def test_counting_allocates_nothing_and_keeps_the_rng() -> None:
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    param_count(cfg_of("gpt2-760m", vocab_size=50304, seq_len=1024, n_head=12).arch, 1024)
    assert torch.equal(torch.rand(3), expected)


def test_flops_per_token() -> None:
    cfg = cfg_of("gpt2-124m", vocab_size=50257, seq_len=1024)
    n_matmul = 12 * 12 * 768**2 + 50257 * 768  # tied head still multiplies
    assert matmul_params(cfg.arch) == n_matmul == 123_532_032
    assert flops_per_token(cfg.arch, 1024) == 6 * n_matmul + 12 * 12 * 768 * 1024


def test_a_few_steps_reduce_the_loss_on_a_repeated_batch() -> None:
    for preset in ("tiny", "tiny-gpt2"):
        model = build(cfg_of(preset, vocab_size=256, seq_len=32))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        g = torch.Generator().manual_seed(0)
        x = torch.randint(0, 256, (8, 32), generator=g)
        y = torch.randint(0, 256, (8, 32), generator=g)
        losses = []
        for _ in range(12):
            loss = model(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[-1] < losses[0] - 1.0, (preset, losses[0], losses[-1])


def test_presets_are_resolved_run_fields() -> None:
    set_by_dataset = {"model", "vocab_size"}
    not_a_shape = {"workload"}  # what the run trains (None: the GPT), set by the grid
    for name, fields in PRESETS.items():
        want = set(names_with(Role.ARCHITECTURE)) - set_by_dataset - not_a_shape
        assert set(fields) == want, name
        assert preset_fields(name) == fields and preset_fields(name) is not fields
    assert preset_fields("gpt2-124m")["tie_weights"] and not preset_fields("160m")["tie_weights"]
    with pytest.raises(UserError, match=r"unknown model preset 'gpt5'.*160m.*tiny"):
        preset_fields("gpt5")


def test_the_architecture_section_is_the_models_config() -> None:
    arch = Architecture(model="tiny", **preset_fields("tiny") | {"d_model": 64}, vocab_size=8192)
    assert GPT(arch, 128)(torch.zeros(1, 128, dtype=torch.long)).shape == (1, 128, 8192)
    arch_fields = {f.name for f in dataclasses.fields(Architecture)}
    assert arch_fields == {n for n, f in FIELDS.items() if f.section == "arch"}
    assert all(FIELDS[n].role is Role.ARCHITECTURE for n in arch_fields)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"norm": "batchnorm"}, r"norm: 'batchnorm' is not one of rmsnorm, layernorm"),
        ({"activation": "relu"}, r"activation: 'relu' is not one of swiglu, gelu"),
        ({"positions": "alibi"}, r"positions: 'alibi' is not one of rope, learned"),
        ({"n_head": 5}, r"d_model 128 is not divisible by n_head 5"),
        ({"rotary_frac": 1.5}, r"rotary_frac 1.5"),
    ],
)
def test_config_errors_name_the_value(change: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        cfg_of(**change)


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("vocab", [1000, 50304])
def test_formula_counts_match_instantiated_models(preset, vocab):
    from harness.model.architecture import _counts

    cfg = Architecture(model=preset, **preset_fields(preset), vocab_size=vocab)
    with torch.device("meta"):
        model = GPT(cfg, 256)
    total = sum(p.numel() for p in model.parameters())
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert _counts(cfg, 256) == (total, linear + (vocab * cfg.d_model if cfg.tie_weights else 0))


def test_every_valid_norm_and_activation_has_a_builder():
    assert set(NORMS) == set(config.NORMS) == set(FIELDS["norm"].meta.choices)
    assert set(MLPS) == set(config.ACTIVATIONS) == set(FIELDS["activation"].meta.choices)
