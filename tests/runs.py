"""Helpers that build small, real run configs for tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.core.config import RunConfig
from harness.data.catalogue import vocab_lookup
from harness.grid.resolve import Resolver
from harness.launch.contract import ExecutionSpec, Launcher, LaunchReport
from harness.launch.profile import load_profile

TINY: dict[str, Any] = {
    "model": "tiny",
    "dataset": "classics-bpe8k",
    "optimizer": "adamw",
    "lr": 3e-3,
    "seq_len": 32,
    "batch_size": 8,
    "tokens": 8 * 32 * 6,
    "eval_tokens": 2048,
    "warmup_steps": 1,
    "log_every": 2,
    "weight_decay": 0.1,
}


def tiny_run(data_root: Path, grid: str = "t", **overrides: Any) -> RunConfig:
    """A resolved tiny run (6 steps of 8 x 32 tokens unless overridden)."""
    point = {**TINY, **overrides}
    return Resolver(grid, "local", vocab_lookup(data_root), "test").resolve(point, "test run")


def spec_for(root: Path, grid: str, data_root: Path, threads: int | None = None) -> ExecutionSpec:
    """The execution spec a ``local`` submission of ``grid`` would hand its runs."""
    profile = load_profile("local")
    return ExecutionSpec.build(profile, root, grid, data_root).with_threads(threads)


def launch_and_wait(
    launcher: Launcher, runs: list[RunConfig], root: Path, data_root: Path
) -> LaunchReport:
    """What ``submit`` does with a backend once the manifest is written: launch, then wait."""
    spec = ExecutionSpec.build(launcher.profile, root, runs[0].grid, data_root)
    return launcher.wait(launcher.launch(runs, spec), spec, show_progress=False)


def interrupt_then_resume(
    run: RunConfig,
    data_root: Path,
    checkpoint: Any,
    *,
    after: int,
    log: Callable[[str], None] | None = None,
) -> Any:
    """Train ``run`` until ``after`` steps are done (it checkpoints to ``checkpoint``, a
    ``Checkpointing``, and stops), then resume it from there to the end in another RNG state, as
    a new process would; returns the resumed run's ``RunResult`` (``log`` gets its lines)."""
    import pytest
    import torch

    from harness.train.loop import TrainingInterrupted, train

    polls = iter(range(1, 1_000_000))  # should_stop is polled before each step
    with pytest.raises(TrainingInterrupted):
        train(
            run,
            data_root=data_root,
            checkpoint=checkpoint,
            log=None,
            should_stop=lambda: next(polls) == after + 1,
        )
    assert checkpoint.path.exists()
    torch.manual_seed(1234)  # a resumed process starts with other RNG state
    return train(run, data_root=data_root, checkpoint=checkpoint, log=log)
