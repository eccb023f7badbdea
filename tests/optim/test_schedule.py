"""Learning-rate schedules: wsd (warmup, stable, decay) at known steps, and its run fields."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest

from harness.core.catalogue import with_values
from harness.core.errors import UserError
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid
from harness.optim.schedule import lr_at

BASE = """
name: w
base:
  model: tiny
  optimizer: adamw
  seq_len: 64
  batch_size: 16
  tokens: 102400          # 100 steps
  eval_tokens: 4096
  lr: 1.0
  lr_min: 0.1
  warmup_steps: 10
"""


def runs(tmp_path: Path, extra: str):
    p = tmp_path / "w.yaml"
    p.write_text(textwrap.dedent(BASE) + extra)
    return load_grid(p, vocab=vocab_lookup(tmp_path)).runs


# 100 steps, warmup 10, decay over the last 20% = 20 steps: steps 80..99 are k = 1..20 of the
# decay, progress p = k / 20; lr = 0.1 + 0.9 * shape(p). Values worked out by hand.
KNOWN = {
    "linear": {80: 0.1 + 0.9 * 0.95, 89: 0.55, 94: 0.1 + 0.9 * 0.25, 99: 0.1},
    "cosine": {89: 0.55, 84: 0.1 + 0.9 * (0.5 + 0.5 * 0.5**0.5), 99: 0.1},
    "1-sqrt": {84: 0.55, 80: 0.1 + 0.9 * (1 - 0.05**0.5), 99: 0.1},
}


@pytest.mark.parametrize("shape", sorted(KNOWN))
def test_wsd_lr_at_known_steps(tmp_path, shape):
    (run,) = runs(tmp_path, f"  schedule: wsd\n  decay_frac: 0.2\n  decay_shape: {shape}\n")
    assert run.data.steps == 100
    lr = [lr_at(s, run) for s in range(100)]
    assert lr[0] == pytest.approx(0.1) and lr[4] == pytest.approx(0.5)  # warmup (s + 1) / 10
    assert lr[9:80] == [1.0] * 71  # stable phase: every step at the peak
    for step, want in KNOWN[shape].items():
        assert lr[step] == pytest.approx(want, abs=1e-12), (shape, step)
    assert all(a > b for a, b in itertools.pairwise(lr[79:]))  # strictly decreasing


def test_wsd_decay_rounds_half_up_and_never_enters_warmup(tmp_path):
    (run,) = runs(tmp_path, "  schedule: wsd\n  decay_frac: 0.125\n  decay_shape: linear\n")
    lr = [lr_at(s, run) for s in range(100)]
    assert lr[86] == 1.0 and lr[87] < 1.0  # 12.5 steps round to 13: steps 87..99 decay
    long = with_values(run, decay_frac=1.0)  # would start at 0: starts after warmup instead
    lr = [lr_at(s, long) for s in range(100)]
    assert lr[9] == 1.0 and lr[10] == pytest.approx(0.1 + 0.9 * (1 - 1 / 90)) and lr[99] == 0.1


def test_wsd_defaults_and_other_schedules_leave_its_fields_unset(tmp_path):
    wsd, cos = runs(tmp_path, "  decay_frac: 0.3\ngrid:\n  schedule: [wsd, cosine]\n")
    assert (wsd.optim.decay_frac, wsd.optim.decay_shape) == (0.3, "1-sqrt")  # shape defaulted
    assert (cos.optim.decay_frac, cos.optim.decay_shape) == (None, None)
    (plain,) = runs(tmp_path, "  schedule: wsd\n")
    assert (plain.optim.decay_frac, plain.optim.decay_shape) == (0.2, "1-sqrt")
    (old,) = runs(tmp_path, "")  # a cosine run: the fields stay out of its run_id
    assert old.run_id == with_values(old, decay_frac=None, decay_shape=None).run_id
    assert wsd.run_id != with_values(wsd, decay_shape="linear").run_id


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("  decay_frac: 0.2\n", "none of the grid's schedules (cosine) reads it"),
        ("  schedule: wsd\n  decay_frac: 1.5\n", "decay_frac 1.5 is not in (0, 1]"),
        ("  schedule: wsd\n  decay_frac: 0\n", "decay_frac 0.0 is not in (0, 1]"),
        ("  schedule: wsd\n  decay_shape: sqrt\n", "'sqrt' is not one of linear, cosine, 1-sqrt"),
        ("  schedule: wds\n", "wds"),
    ],
)
def test_bad_wsd_settings_are_one_clear_line(tmp_path, extra, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        runs(tmp_path, extra)
