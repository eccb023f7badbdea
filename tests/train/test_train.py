"""train(run): a few real CPU steps per optimizer, divergence, determinism, bitwise resume."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.core.config import RunConfig
from harness.model.architecture import flops_per_token
from harness.optim.registry import OPTIMIZERS
from harness.train.checkpoint import Checkpointing
from harness.train.device import place
from harness.train.loop import TrainingFailed, train
from tests.runs import interrupt_then_resume, tiny_run

pytestmark = pytest.mark.usefixtures("one_thread")


SMALL: dict[str, Any] = {"n_layer": 1, "n_head": 2, "d_model": 32}
"""The tiny GPT cut to one narrow layer (a third of its CPU): for what holds at any size; the
spike test keeps the tiny model, whose AdamW spikes and recovers at lr 0.1."""

OPTIMIZER_LRS = {"sgd": 0.3, "sgd_cclip": 0.3, "signsgd": 3e-3, "signum": 3e-3, "lion": 3e-3}
"""Learning rates that move the small model's loss below uniform in 6 steps (others: 1e-2)."""


def small_run(data_root: Path, **overrides: Any) -> RunConfig:
    """A resolved run of the small model (:data:`SMALL`)."""
    return tiny_run(data_root, **{**SMALL, **overrides})


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.slow
def test_few_steps_per_optimizer(prepared_data, optimizer):
    extra = {"clip_value": 0.01} if optimizer == "sgd_cclip" else {}
    run = small_run(
        prepared_data, optimizer=optimizer, lr=OPTIMIZER_LRS.get(optimizer, 1e-2), **extra
    )
    result = train(run, data_root=prepared_data, log=None)
    assert result.status == "completed", result.error
    assert result.steps_done == run.data.steps == 6
    assert result.tokens_seen == 6 * 8 * 32
    assert math.isfinite(result.metrics["val_loss"]) and result.metrics["val_ppl"] == pytest.approx(
        math.exp(result.metrics["val_loss"])
    )
    assert result.metrics["val_loss"] < math.log(run.arch.vocab_size)  # moved away from uniform
    assert [p["step"] for p in result.curve] == [2, 4, 6]
    assert result.curve[-1]["val_loss"] == result.metrics["val_loss"]
    assert result.params == sum(p.numel() for p in _model(run).parameters())
    for key in ("iso", "mu_norm", "rho", "kappa", "data_wait_s", "optimizer_step_frac"):
        assert result.metrics[key] is not None, key
    peak = place(run.execution.precision, run.execution.compile).peak_flops()
    if peak is None:  # CPU, or a GPU without a known peak
        assert result.metrics["mfu"] is None
    else:  # this device's peak: the model FLOP/s over it
        fpt = flops_per_token(run.arch, run.data.seq_len)
        expected = result.metrics["tokens_per_s"] * fpt / peak
        assert result.metrics["mfu"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.slow
def test_mfu_is_model_flops_per_second_over_the_device_peak(prepared_data, monkeypatch):
    from harness.model.architecture import flops_per_token
    from harness.train.device import Placement

    monkeypatch.setattr(Placement, "peak_flops", lambda self: 2e12)  # a pretend accelerator
    run = small_run(prepared_data)
    result = train(run, data_root=prepared_data, log=None)
    fpt = flops_per_token(run.arch, run.data.seq_len)  # 6 * matmul params + 12 * L * d * T
    assert result.metrics["mfu"] == pytest.approx(
        result.metrics["tokens_per_s"] * fpt / 2e12, rel=1e-12
    )


def _model(run):
    from harness.model.gpt import GPT

    return GPT(run.arch, run.data.seq_len)


@pytest.mark.slow
def test_divergence_is_a_result(prepared_data):
    run = small_run(prepared_data, optimizer="sgd", lr=1e4, grad_clip=None, log_every=1)
    result = train(run, data_root=prepared_data, log=None)
    assert result.status == "diverged"
    assert result.steps_done < run.data.steps
    assert "loss" in result.error or "gradient" in result.error
    assert result.metric("val_loss") is None and result.curve


@pytest.mark.slow
def test_deterministic_given_seed(prepared_data, on_the_cpu):
    run = small_run(prepared_data)
    a = train(run, data_root=prepared_data, log=None)
    b = train(run, data_root=prepared_data, log=None)
    assert a.metrics["val_loss"] == b.metrics["val_loss"]
    assert [p["train_loss"] for p in a.curve] == [p["train_loss"] for p in b.curve]
    c = train(small_run(prepared_data, seed=1), data_root=prepared_data, log=None)
    assert c.metrics["val_loss"] != a.metrics["val_loss"]


@pytest.mark.parametrize("optimizer", ["adamw", "sgd"])
@pytest.mark.slow
def test_resume_from_checkpoint_is_bitwise_identical(
    prepared_data, on_the_cpu, tmp_path, optimizer
):
    run = small_run(prepared_data, optimizer=optimizer, lr=0.1 if optimizer == "sgd" else 3e-3)
    whole = train(run, data_root=prepared_data, log=None)
    ckpt = Checkpointing(tmp_path / "run.pt", every_s=600.0)
    resumed = interrupt_then_resume(run, prepared_data, ckpt, after=3)
    assert resumed.metrics["val_loss"] == whole.metrics["val_loss"]
    assert [p["train_loss"] for p in resumed.curve] == [p["train_loss"] for p in whole.curve]
    assert resumed.steps_done == whole.steps_done


@pytest.mark.slow
def test_gradient_accumulation_matches_full_batch(prepared_data, on_the_cpu):
    full = train(small_run(prepared_data), data_root=prepared_data, log=None)
    accum = train(small_run(prepared_data, micro_batch_size=2), data_root=prepared_data, log=None)
    assert accum.metrics["val_loss"] == pytest.approx(full.metrics["val_loss"], rel=1e-4)


@pytest.mark.slow
def test_a_loss_that_climbs_away_from_its_best_is_diverged(prepared_data):
    # a constant, too-high SGD lr without clipping: the loss first falls, then climbs
    setup = {
        "schedule": "constant",
        "warmup_steps": 0,
        "tokens": 8 * 32 * 40,
        "log_every": 1,
        "grad_clip": None,
    }
    run = small_run(prepared_data, optimizer="sgd", lr=3.0, diverge_rise=0.5, **setup)
    result = train(run, data_root=prepared_data, log=None)
    assert result.status == "diverged", [p["train_loss"] for p in result.curve]
    losses = [p["train_loss"] for p in result.curve]
    assert "rose more than 0.5 above its best" in result.error
    assert losses[-1] > min(losses[:-1]) + 0.5
    assert max(losses) < 1.5 * math.log(run.arch.vocab_size)  # not the absolute cap
    # the same run with the criterion relaxed keeps going
    lenient = dataclasses.replace(run.execution, diverge_rise=100.0)
    relaxed = train(dataclasses.replace(run, execution=lenient), data_root=prepared_data, log=None)
    assert relaxed.steps_done > result.steps_done


@pytest.mark.slow
def test_without_the_spike_rules_a_finite_spike_trains_to_the_end(prepared_data):
    """The talk's beta table keeps finite values for runs that blew up. AdamW at a constant lr
    of 0.1 spikes above 1.5 ln V early, then recovers: the default rules score it diverged;
    with diverge_rise and diverge_factor off it trains to the end, its spike recorded."""
    setup = {
        "optimizer": "adamw",
        "lr": 0.1,
        "schedule": "constant",
        "warmup_steps": 0,
        "tokens": 8 * 32 * 40,
        "log_every": 1,
    }
    strict = train(tiny_run(prepared_data, **setup), data_root=prepared_data, log=None)
    assert strict.status == "diverged" and strict.steps_done < 40
    run = tiny_run(prepared_data, diverge_rise=None, diverge_factor=None, **setup)
    result = train(run, data_root=prepared_data, log=None)
    assert result.status == "completed" and result.steps_done == run.data.steps
    losses = [p["train_loss"] for p in result.curve]
    assert max(losses) > 1.5 * math.log(run.arch.vocab_size)  # the spike the default stops
    assert result.metrics["val_loss"] < math.log(run.arch.vocab_size)  # and it recovered
    assert result.metrics["max_loss_rise"] == pytest.approx(
        max(b - min(losses[:i]) for i, b in enumerate(losses) if i), rel=1e-12
    )
    assert result.metrics["max_loss_rise"] > 1.0


@pytest.mark.slow
def test_validation_loss_by_frequency_bucket(prepared_data):
    """val_loss_q1..q4: the loss of the targets in each training-frequency bucket; their
    target-weighted mean is val_loss, and the rare tokens are the hard ones."""
    from harness.data.batches import TokenData
    from harness.data.catalogue import resolve_dataset
    from harness.metrics.frequency import frequency_buckets

    run = small_run(prepared_data)
    result = train(run, data_root=prepared_data, log=None)
    data = TokenData(resolve_dataset(run.data.dataset, prepared_data))
    buckets = frequency_buckets(data.unigram_counts())
    targets = np.concatenate(
        [
            y.numpy().ravel()
            for _, y in data.eval_batches(
                run.data.eval_tokens, run.data.seq_len, run.data.micro_batch_size
            )
        ]
    )
    n = np.bincount(buckets[targets], minlength=4)
    q = [result.metrics[f"val_loss_q{k}"] for k in range(1, 5)]
    assert all(v is not None for v in q) and (n > 0).all()
    assert np.dot(n, q) / n.sum() == pytest.approx(result.metrics["val_loss"], rel=1e-6)
    assert q[0] < q[3]  # frequent tokens are learned first


def test_frequency_buckets_hold_equal_shares_of_training_tokens():
    from harness.metrics.frequency import frequency_buckets

    # ids by count: 0 (50), 2 (30), 3 (10), 4 (10), 1 (0); share before each: 0, .5, .8, .9, 1
    assert frequency_buckets(np.array([50, 0, 30, 10, 10])).tolist() == [0, 3, 2, 3, 3]
    zipf = 1_000_000 // np.arange(1, 5001)
    b = frequency_buckets(zipf)
    mass = np.bincount(b, weights=zipf) / zipf.sum()
    assert np.allclose(mass, 0.25, atol=0.02) and (np.diff(b) >= 0).all()


@pytest.mark.slow
def test_an_error_during_training_is_typed_and_carries_what_was_done(prepared_data):
    run = small_run(prepared_data)
    calls = iter(range(10**6))
    fault = RuntimeError("the controller fell")

    def should_stop() -> bool:  # fails once 3 steps are done
        if next(calls) >= 3:
            raise fault
        return False

    with pytest.raises(TrainingFailed) as info:
        train(run, data_root=prepared_data, should_stop=should_stop, log=None)
    assert info.value.error is fault and info.value.__cause__ is fault
    partial = info.value.partial
    assert (partial.status, partial.steps_done) == ("failed", 3)
    assert partial.tokens_seen == 3 * run.data.batch_size * run.data.seq_len
