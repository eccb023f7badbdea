"""The shipped protocols' sizes (issue 38, item 6): no run of a bench under the laptop or paper
protocol averages over more than a third of its steps (the card's EMA-horizon note: beta2 =
0.999 averages over ~1000 steps, longer than a 32-step laptop run)."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.analysis.rows.caveats import long_horizons
from harness.bench import derive_bench
from harness.bench.derive import write_grid
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid


@pytest.mark.slow
@pytest.mark.parametrize("scale", ["local", "paper"])
@pytest.mark.parametrize("candidate", ["torch.optim:AdamW", "torch.optim:SGD"])
def test_no_shipped_protocol_triggers_the_ema_horizon_note(tmp_path, scale, candidate) -> None:
    d = derive_bench(candidate, root=tmp_path, scale=scale)
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
