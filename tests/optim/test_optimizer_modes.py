"""Optimizers that ask more of the loop than ``step()`` (issue 18, item 4): a schedule-free
optimizer is evaluated in eval mode and trains in train mode, through checkpoints; a SAM-style
optimizer gets a closure, and its row counts the second pass."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from harness.train.checkpoint import Checkpointing
from harness.train.loop import TrainingInterrupted, _Trainer, train
from tests.runs import tiny_run

# Exact float32 arithmetic of the CPU (tests/train/test_gpu.py checks the GPU path, with
# tolerances).
pytestmark = [pytest.mark.usefixtures("on_the_cpu"), pytest.mark.slow]  # each test trains the GPT

TESTS = Path(__file__).resolve().parents[1]
SCHEDULE_FREE = "schedulefree:AdamWScheduleFree"
SAM = f"{TESTS / 'user_optimizers.py'}:TwoPassSAM"


def _val_loss_by_hand(trainer: _Trainer) -> float:
    """The held-out loss of the trainer's model as it is now, computed here."""
    data, model = trainer.run.data, trainer.model
    model.eval()
    losses, count = 0.0, 0
    with torch.no_grad():
        for x, y in trainer.workload.data.eval_batches(
            data.eval_tokens, data.seq_len, data.micro_batch_size
        ):
            logits = model(x).float()
            losses += F.cross_entropy(
                logits.view(-1, logits.size(-1)), y.reshape(-1), reduction="sum"
            ).item()
            count += y.numel()
    model.train()
    return losses / count


def test_schedule_free_is_evaluated_at_its_eval_point(prepared_data: Path) -> None:
    run = tiny_run(prepared_data, optimizer=SCHEDULE_FREE, lr=3e-3, tokens=8 * 32 * 8)
    trainer = _Trainer(run, prepared_data, None, None)
    result = trainer.fit(None)
    opt = trainer.optimizer
    assert all(g["train_mode"] for g in opt.param_groups)  # back in train mode after evaluating
    at_train_point = _val_loss_by_hand(trainer)
    opt.eval()  # what a user of schedulefree does before evaluating
    at_eval_point = _val_loss_by_hand(trainer)
    assert result.metrics["val_loss"] == pytest.approx(at_eval_point, rel=1e-6)
    assert abs(at_eval_point - at_train_point) > 1e-4  # the two points differ: the test can fail


def test_schedule_free_resumes_from_a_checkpoint_as_if_never_stopped(prepared_data, tmp_path):
    run = tiny_run(prepared_data, optimizer=SCHEDULE_FREE, lr=3e-3, tokens=8 * 32 * 8, eval_every=2)
    whole = train(run, data_root=prepared_data, log=None)
    ck = Checkpointing(tmp_path / "ck.pt", every_s=1e9)
    calls = iter(range(100))
    with pytest.raises(TrainingInterrupted):
        train(
            run,
            data_root=prepared_data,
            checkpoint=ck,
            log=None,
            should_stop=lambda: next(calls) == 5,
        )
    resumed = train(run, data_root=prepared_data, checkpoint=ck, log=None)
    assert resumed.metrics["val_loss"] == pytest.approx(whole.metrics["val_loss"], rel=1e-6)
    assert [p["val_loss"] for p in resumed.curve] == pytest.approx(
        [p["val_loss"] for p in whole.curve], rel=1e-6, nan_ok=True
    )


def test_a_sam_style_optimizer_gets_a_closure_and_counts_two_passes(prepared_data) -> None:
    run = tiny_run(prepared_data, optimizer=SAM, lr=3e-2)
    trainer = _Trainer(run, prepared_data, None, None)
    result = trainer.fit(None)
    assert result.status == "completed"
    assert trainer.optimizer.closure_calls == 6  # one closure call per step
    assert result.metrics["passes_per_step"] == 2.0
    plain = train(tiny_run(prepared_data, lr=3e-2), data_root=prepared_data, log=None)
    assert plain.metrics["passes_per_step"] == 1.0
    assert result.metrics["train_flops"] == pytest.approx(2 * plain.metrics["train_flops"])
