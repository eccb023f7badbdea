"""The README's report screenshot (docs/report.png), from SYNTHETIC rows: no training, made-up
numbers shaped like a sweep (loss curves that fall, a spike at the largest lr, one arm that only
failed), to show the page. Run: python docs/report_demo.py OUT_DIR (then open OUT_DIR/report.html).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from click.testing import CliRunner

from harness.analysis.testing import make_run, write_run
from harness.cli import main

#: arm -> (final loss at its best lr, best lr)
ARMS = {
    "sgd": (4.1, 0.1),
    "adamw": (3.55, 3e-3),
    "signum": (3.6, 1e-3),
    "lion": (3.62, 3e-4),
    "./my_opt.py:MyOpt": (3.58, 3e-3),
}


def losses(final: float, off: float, spike: bool, seed: int, n: int = 40) -> list[float]:
    """A curve from ln(8192) down to ``final + off``; a spike two thirds in when ``spike``."""
    start = math.log(8192)
    out = []
    for k in range(n):
        f = (k + 1) / n
        v = final + off + (start - final - off) * math.exp(-6 * f) + 0.02 * math.sin(k + seed)
        if spike and 0.6 < f < 0.72:
            v += 1.5 * math.sin((f - 0.6) / 0.12 * math.pi)
        out.append(v)
    return out


def main_(out: Path) -> None:
    for arm, (final, best_lr) in ARMS.items():
        for m in (1 / 3, 1, 3):
            for seed in range(2):
                run = make_run(
                    grid="demo",
                    optimizer=arm,
                    lr=best_lr * m,
                    seed=seed,
                    model="tiny",
                    tokens=2_621_440,
                )
                off = 0.12 * abs(math.log(m)) + 0.01 * seed
                curve = losses(final, off, spike=m == 3 and arm != "sgd", seed=seed)
                write_run(out, run, val_ppl=math.exp(curve[-1] + 0.05), losses=curve)
    for seed in range(2):
        write_run(
            out, make_run(grid="demo", optimizer="pkg.opt:Broken", seed=seed), status="failed"
        )
    res = CliRunner().invoke(
        main, ["report", "demo", "--results", str(out), "-o", str(out / "report.html")]
    )
    print(res.output)


if __name__ == "__main__":
    main_(Path(sys.argv[1]))
