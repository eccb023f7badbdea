"""What one step of an optimizer says about its hyperparameters, before its search space is made
(``harness bench``, :mod:`harness.bench.space`): run in the preflight's child process
(:mod:`harness.launch.sandbox`), on one small tensor with a fixed gradient.

- **The weight-decay convention**: the step with decay ``wd`` minus the step without is
  ``-lr * wd * w`` (decoupled, PyTorch's AdamW), ``-wd * w`` (decoupled and independent of the
  lr) or something else (L2 added to the gradient, then scaled by the update: "coupled"); for
  each boolean argument whose name says ``decoupl`` (``weight_decouple``, ``decouple``,
  ``decoupled_weight_decay``, ``decoupled_wd``) the convention of each of its values.
- **Multipliers of the lr**: an own hyperparameter that, doubled, makes the same step as the lr
  doubled (AdamAtan2's ``a``): searching it would search the lr twice.
- **Bounds the constructor enforces**: each end of a range the constructor refuses
  (an ``assert 0 <= cautious_factor <= 1``) is moved towards the default until it is accepted.
"""

from __future__ import annotations

import inspect
import json
import math
from typing import Any

import torch

from harness.optim.registry import get_spec

LR = 0.01
"""The probe's learning rate."""
WD = 0.1
"""The probe's weight decay."""
DECOUPLED, INDEPENDENT, COUPLED, NONE = "decoupled", "independent", "coupled", "none"
"""Conventions: ``w -= lr * wd * w``; ``w -= wd * w``; through the gradient; no decay taken."""
FLAG_WORD = "decoupl"
"""A boolean argument whose name holds this switches the decay convention."""
STEPS = 3
"""Steps the probe takes (ADOPT's first step only initialises its state)."""
STEPS_TO_BOUND = 8
"""Tries per range end, each a quarter of the way (in log) back to the default."""


def probe(request: tuple[str, dict[str, tuple[float, float]]]) -> str:
    """``(optimizer, {hyperparameter: (low, high)})`` -> a JSON object: ``lr`` (its default),
    ``decay`` (the
    default's convention), ``flags`` (flag -> {value: convention}), ``multipliers`` (names),
    ``bounded`` (name -> [low, high] the constructor accepts)."""
    name, ranges = request
    cls = get_spec(name).load()
    lr = inspect.signature(cls).parameters.get("lr")
    default_lr = None if lr is None else lr.default
    out: dict[str, Any] = {
        "lr": default_lr if isinstance(default_lr, float | int) else None,
        "decay": _convention(cls, {}),
        "flags": {},
        "multipliers": [],
    }
    spec = get_spec(name)
    for h in spec.hyperparameters:
        if h.type is bool and FLAG_WORD in h.name.lower():
            out["flags"][h.name] = {str(v): _convention(cls, {h.name: v}) for v in (True, False)}
    base = _delta(cls, {})
    doubled_lr = _delta(cls, {}, lr=2 * LR)
    defaults = {h.name: h.default for h in spec.hyperparameters}
    for key in ranges:
        d = defaults.get(key)
        if not isinstance(d, float) or not math.isfinite(d) or d <= 0:
            continue
        doubled = _delta(cls, {key: 2 * d})
        if (
            base is not None
            and doubled is not None
            and doubled_lr is not None
            and not torch.allclose(doubled, base, rtol=1e-6, atol=1e-15)
            and torch.allclose(doubled, doubled_lr, rtol=1e-6, atol=1e-15)
        ):
            out["multipliers"].append(key)
    out["bounded"] = {
        k: _bounded(cls, k, lo, hi, defaults.get(k)) for k, (lo, hi) in ranges.items()
    }
    return json.dumps(out)


def _tensor() -> tuple[torch.nn.Parameter, torch.Tensor]:
    """The probe's weights and fixed gradient (float64: Prodigy's first steps move by 1e-9)."""
    w = torch.nn.Parameter(torch.linspace(0.5, 1.5, 16, dtype=torch.float64).reshape(4, 4))
    g = torch.linspace(-0.02, 0.03, 16, dtype=torch.float64).reshape(4, 4)
    return w, g


def _steps(
    cls: type, kwargs: dict[str, Any], lr: float = LR, wd: float = 0.0
) -> list[torch.Tensor] | None:
    """The probe's weights before each of :data:`STEPS` steps and after the last (None when the
    optimizer cannot be built or stepped with these values)."""
    w, g = _tensor()
    seen = [w.detach().clone()]
    try:
        opt = cls([w], lr=lr, weight_decay=wd, **kwargs)
        if hasattr(opt, "train"):
            opt.train()  # schedule-free
        for _ in range(STEPS):
            w.grad = g.clone()
            opt.step()
            seen.append(w.detach().clone())
    except Exception:  # a constructor that refuses the probe's values: unknown
        return None
    return seen


def _delta(cls: type, kwargs: dict[str, Any], lr: float = LR) -> torch.Tensor | None:
    """The change of the probe's weights over its steps (None when they cannot be made)."""
    seen = _steps(cls, kwargs, lr)
    return None if seen is None else seen[-1] - seen[0]


def _decay_ratio(cls: type, kwargs: dict[str, Any], lr: float) -> float | None:
    """At the first step where decay changes the step: (its step - the step without decay) /
    (the weights times ``wd``), when that is one number for every weight (the decay is
    proportional to the weights: decoupled), else NaN (coupled); None when no step differs."""
    with_wd, without = _steps(cls, kwargs, lr, WD), _steps(cls, kwargs, lr)
    if with_wd is None or without is None:
        return None
    for t in range(STEPS):
        diff = (with_wd[t + 1] - with_wd[t]) - (without[t + 1] - without[t])
        if torch.allclose(diff, torch.zeros_like(diff), rtol=0, atol=1e-15):
            continue
        ratio = diff / (WD * with_wd[t])
        if torch.allclose(ratio, ratio.mean().expand_as(ratio), rtol=1e-6, atol=0):
            return float(-ratio.mean())
        return math.nan
    return None


def _convention(cls: type, kwargs: dict[str, Any]) -> str:
    """The decay convention of ``cls`` built with ``kwargs`` (module docstring)."""
    once, twice = _decay_ratio(cls, kwargs, LR), _decay_ratio(cls, kwargs, 2 * LR)
    if once is None or twice is None:
        return NONE
    if math.isnan(once) or math.isnan(twice) or once <= 0:
        return COUPLED
    return DECOUPLED if math.isclose(twice, 2 * once, rel_tol=1e-3) else INDEPENDENT


def _constructs(cls: type, key: str, value: float) -> bool:
    w, _ = _tensor()
    try:
        cls([w], lr=LR, **{key: value})
    except Exception:  # the constructor's bound (assert, ValueError)
        return False
    return True


def _bounded(cls: type, key: str, low: float, high: float, default: Any) -> list[float]:
    """``[low, high]`` with each end the constructor refuses moved towards ``default``."""
    if not isinstance(default, int | float) or isinstance(default, bool) or default <= 0:
        return [low, high]
    ends = []
    for end in (low, high):
        value = end
        for i in range(1, STEPS_TO_BOUND + 1):
            if _constructs(cls, key, value):
                break
            value = end * (default / end) ** (i / STEPS_TO_BOUND)  # towards the default
        ends.append(float(f"{value:.4g}"))
    return ends
