"""A branch's state at its decay start (issue 42) with the GPT: the parent's saved state carries
model, optimizer, RNG, the unfinished logging interval and the curve so far, so the branch
trained from it is bit for bit the run trained alone."""

from __future__ import annotations

import pytest
import torch

from harness.train.checkpoint import Checkpointing
from harness.train.loop import train
from tests.runs import tiny_run

STEP_TOKENS = 8 * 32


@pytest.mark.slow
def test_a_gpt_branch_from_its_parents_decay_start_is_the_run_trained_alone(
    prepared_data, tmp_path
):
    kw = {"schedule": "wsd", "log_every": 3, "eval_every": 6, "warmup_steps": 2}
    parent = tiny_run(prepared_data, tokens=STEP_TOKENS * 20, **kw)
    child = tiny_run(prepared_data, tokens=STEP_TOKENS * 10, **kw)
    step = 8  # the child's decay start (10 - 0.2 * 10), inside a logging interval
    point = tmp_path / "child.branch.pt"
    train(
        parent,
        data_root=prepared_data,
        checkpoint=Checkpointing(tmp_path / "p.pt", 1e9, branch_points=((step, point),)),
        log=None,
    )
    assert point.exists()
    alone = train(child, data_root=prepared_data, log=None)
    torch.manual_seed(99)  # a branch starts in another process, another RNG state
    branched = train(
        child,
        data_root=prepared_data,
        checkpoint=Checkpointing(tmp_path / "c.pt", 1e9, start_from=point),
        log=None,
    )
    drop = ("elapsed_s",)
    assert [{k: v for k, v in p.items() if k not in drop} for p in branched.curve] == [
        {k: v for k, v in p.items() if k not in drop} for p in alone.curve
    ]
    assert branched.metrics["val_loss"] == alone.metrics["val_loss"]
    assert branched.metrics["max_loss_rise"] == alone.metrics["max_loss_rise"]
    assert (branched.branch_of, branched.steps_trained) == (parent.run_id, 10 - step)
    assert (alone.branch_of, alone.steps_trained) == (None, 10)
