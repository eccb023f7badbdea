"""The GPT workload's training loss: the harness's own GPT computes it inside its forward
(``forward(x, y)``, so that a compiled model has it in its graph), with the same value as the
cross-entropy of its logits; a user's model, which returns logits only, gets the latter (its
training is tested in ``tests/optim/test_own_optimizer.py``)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch

from harness.model.gpt import cross_entropy
from harness.workloads.gpt import GPT
from tests.runs import tiny_run


class _Recorder(torch.nn.Module):
    """The model, recording how many arguments each call passed."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model, self.calls = model, []

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        self.calls.append(len(args))
        return self.model(*args)


def test_the_harness_gpt_computes_its_loss_inside_its_forward(prepared_data: Path) -> None:
    workload = GPT(
        tiny_run(prepared_data), prepared_data, torch.device("cpu"), contextlib.nullcontext
    )
    model = workload.build()
    batch = workload.micro_batches(0)[0]
    recorder = _Recorder(model)
    loss = workload.loss(recorder, batch)
    assert recorder.calls == [2]  # forward(x, y): the loss inside the model
    x, y = batch
    assert loss.dtype == torch.float32
    assert torch.equal(loss, cross_entropy(model(x), y))  # the same computation, bit for bit
