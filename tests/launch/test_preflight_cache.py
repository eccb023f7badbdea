"""The preflight remembers the configurations of the harness's own code that passed (issue 40:
a sandbox child importing torch, about 5 s of CPU, for every submit, extension round and bench
phase): a second preflight of the same configuration starts no child and says so; a user's or a
package's optimizer is checked every time; a failure is never remembered; another harness
source or torch version, or other limits, is another key; a cache folder that refuses costs
the cache, not the preflight."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.core.config import RunConfig
from harness.grid.resolve import Resolver
from harness.launch import preflight, preflight_cache
from harness.launch.sandbox import Limits

QUADRATIC = {"workload": "quadratic", "steps": 6, "lr": 0.01, "log_every": 1, "warmup_steps": 1}
LIMITS = Limits(timeout_s=60.0, memory_bytes=None)


def _run(tmp_path: Path, **point: Any) -> RunConfig:
    return Resolver("s", "full", lambda name: 64, "test", tmp_path).resolve(
        {**QUADRATIC, **point}, "test run"
    )


@pytest.fixture
def children(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[list[RunConfig]]:
    """The configurations each sandbox child was given (a stand-in for the child: a
    configuration with weight decay 9 fails); the cache folder under ``tmp_path``."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    given: list[list[RunConfig]] = []

    def child(function: str, items: list[RunConfig], limits: Limits) -> list[str | None]:
        given.append(list(items))
        return ["boom" if r.optim.weight_decay == 9 else None for r in items]

    monkeypatch.setattr(preflight, "run_isolated", child)
    return given


def test_a_configuration_of_the_harness_passes_once(tmp_path: Path, children) -> None:
    runs = [_run(tmp_path, optimizer="adamw", lr=lr) for lr in (0.01, 0.1)]  # one configuration
    each, said = preflight.outcomes(runs, "g.yaml", LIMITS)
    assert each[0][1] is None and len(children) == 1 and "passed before" not in said
    each, said = preflight.outcomes(runs, "g.yaml", LIMITS)
    assert each[0][1] is None and len(children) == 1, "a second child for a known pass"
    assert "1 optimizer configuration(s) built and stepped" in said
    assert "1 of them, the harness's own code, passed before" in said, said
    preflight.outcomes(runs, "g.yaml", Limits(timeout_s=5.0, memory_bytes=None))
    assert len(children) == 2  # other limits: checked again


def test_a_failure_is_never_remembered(tmp_path: Path, children) -> None:
    run = _run(tmp_path, optimizer="adamw", weight_decay=9)
    for _ in range(2):
        each, _ = preflight.outcomes([run], "g.yaml", LIMITS)
        assert each[0][1] == "boom"
    assert len(children) == 2 and not list(preflight_cache.folder().glob("*"))


def test_code_outside_the_harness_is_checked_every_time(tmp_path: Path, children) -> None:
    user = tmp_path / "mine.py"
    user.write_text("from torch.optim import SGD as Mine\n")
    runs = [_run(tmp_path, optimizer=f"{user}:Mine"), _run(tmp_path, optimizer="sgd")]
    preflight.outcomes(runs, "g.yaml", LIMITS)
    preflight.outcomes(runs, "g.yaml", LIMITS)
    assert [len(c) for c in children] == [2, 1]
    assert children[1][0].optim.optimizer.endswith("mine.py:Mine")


def test_another_harness_or_torch_is_another_key(
    tmp_path: Path, children, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run(tmp_path, optimizer="adamw")
    preflight.outcomes([run], "g.yaml", LIMITS)
    monkeypatch.setattr(preflight_cache, "_environment", lambda: "another harness or torch")
    preflight.outcomes([run], "g.yaml", LIMITS)
    assert len(children) == 2


def test_a_cache_folder_that_refuses_costs_only_the_cache(tmp_path: Path, children) -> None:
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    run = _run(tmp_path, optimizer="adamw")
    for _ in range(2):
        each, _ = preflight.outcomes([run], "g.yaml", LIMITS)
        assert each[0][1] is None
    assert len(children) == 2
