"""The shipped protocols' sizes (issue 38, item 6): no run of a bench under any shipped protocol
(``protocols/*.yaml``, the CI one included) averages over more than a third of its steps (the
card's EMA-horizon note: beta2 = 0.999 averages over ~1000 steps, longer than a 32-step laptop
run)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.analysis.rows.caveats import long_horizons
from harness.bench import SCALES, derive_bench, protocol_dirs
from harness.bench.derive import write_grid
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid

SHIPPED = sorted(protocol_dirs()[-1].glob("*.yaml"))


def test_every_scale_names_a_shipped_protocol() -> None:
    assert {p.name for p in SHIPPED} >= set(SCALES.values()), SHIPPED


@pytest.mark.slow
@pytest.mark.parametrize("protocol", SHIPPED, ids=[p.stem for p in SHIPPED])
@pytest.mark.parametrize("candidate", ["torch.optim:AdamW", "torch.optim:SGD"])
def test_no_shipped_protocol_triggers_the_ema_horizon_note(
    tmp_path: Path, protocol: Path, candidate: str
) -> None:
    d = derive_bench(candidate, root=tmp_path, protocol=protocol)
    g = load_grid(write_grid(d), vocab=vocab_lookup(tmp_path))
    rows = pd.DataFrame(
        [
            {
                "steps": r.data.steps,
                "beta1": r.optim.beta1,
                "beta2": r.optim.beta2,
                "momentum": r.optim.momentum,
            }
            for r in g.runs
        ]
    )
    assert long_horizons(rows, rows) == []
