"""train(run): a few real CPU steps per optimizer, divergence, determinism, bitwise resume."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from harness.optim.registry import OPTIMIZERS
from harness.train.checkpoint import Checkpointing
from harness.train.loop import TrainingInterrupted, train
from tests.runs import tiny_run


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


OPTIMIZER_LRS = {"sgd": 0.3, "sgd_cclip": 0.3, "signsgd": 1e-3, "signum": 1e-3, "lion": 3e-4}


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_few_steps_per_optimizer(prepared_data, optimizer):
    extra = {"clip_value": 0.01} if optimizer == "sgd_cclip" else {}
    run = tiny_run(
        prepared_data, optimizer=optimizer, lr=OPTIMIZER_LRS.get(optimizer, 3e-3), **extra
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
    assert result.metrics["mfu"] is None  # no GPU peak on CPU


def test_mfu_is_model_flops_per_second_over_the_device_peak(prepared_data, monkeypatch):
    from harness.model.architecture import flops_per_token
    from harness.train.device import Placement

    monkeypatch.setattr(Placement, "peak_flops", lambda self: 2e12)  # a pretend accelerator
    run = tiny_run(prepared_data)
    result = train(run, data_root=prepared_data, log=None)
    fpt = flops_per_token(run.arch, run.data.seq_len)  # 6 * matmul params + 12 * L * d * T
    assert result.metrics["mfu"] == pytest.approx(
        result.metrics["tokens_per_s"] * fpt / 2e12, rel=1e-12
    )


def _model(run):
    from harness.model.gpt import GPT

    return GPT(run.arch, run.data.seq_len)


def test_divergence_is_a_result(prepared_data):
    run = tiny_run(prepared_data, optimizer="sgd", lr=1e4, grad_clip=None, log_every=1)
    result = train(run, data_root=prepared_data, log=None)
    assert result.status == "diverged"
    assert result.steps_done < run.data.steps
    assert "loss" in result.error or "gradient" in result.error
    assert result.metric("val_loss") is None and result.curve


def test_deterministic_given_seed(prepared_data):
    run = tiny_run(prepared_data)
    a = train(run, data_root=prepared_data, log=None)
    b = train(run, data_root=prepared_data, log=None)
    assert a.metrics["val_loss"] == b.metrics["val_loss"]
    assert [p["train_loss"] for p in a.curve] == [p["train_loss"] for p in b.curve]
    c = train(tiny_run(prepared_data, seed=1), data_root=prepared_data, log=None)
    assert c.metrics["val_loss"] != a.metrics["val_loss"]


@pytest.mark.parametrize("optimizer", ["adamw", "sgd"])
def test_resume_from_checkpoint_is_bitwise_identical(prepared_data, tmp_path, optimizer):
    run = tiny_run(prepared_data, optimizer=optimizer, lr=0.1 if optimizer == "sgd" else 3e-3)
    whole = train(run, data_root=prepared_data, log=None)
    ckpt = Checkpointing(tmp_path / "run.pt", every_s=600.0)
    calls = {"n": 0}

    def stop_after_three() -> bool:
        calls["n"] += 1
        return calls["n"] == 4  # polled before step 4: three steps done

    with pytest.raises(TrainingInterrupted):
        train(run, data_root=prepared_data, checkpoint=ckpt, should_stop=stop_after_three,
              log=None)  # fmt: skip
    assert ckpt.path.exists()
    torch.manual_seed(1234)  # a resumed process starts with other RNG state
    resumed = train(run, data_root=prepared_data, checkpoint=ckpt, log=None)
    assert resumed.metrics["val_loss"] == whole.metrics["val_loss"]
    assert [p["train_loss"] for p in resumed.curve] == [p["train_loss"] for p in whole.curve]
    assert resumed.steps_done == whole.steps_done


def test_gradient_accumulation_matches_full_batch(prepared_data):
    full = train(tiny_run(prepared_data), data_root=prepared_data, log=None)
    accum = train(tiny_run(prepared_data, micro_batch_size=2), data_root=prepared_data, log=None)
    assert accum.metrics["val_loss"] == pytest.approx(full.metrics["val_loss"], rel=1e-4)


def test_a_loss_that_climbs_away_from_its_best_is_diverged(prepared_data):
    # a constant, too-high SGD lr without clipping: the loss first falls, then climbs
    setup = {"schedule": "constant", "warmup_steps": 0, "tokens": 8 * 32 * 40, "log_every": 1,
             "grad_clip": None}  # fmt: skip
    run = tiny_run(prepared_data, optimizer="sgd", lr=3.0, diverge_rise=0.5, **setup)
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
