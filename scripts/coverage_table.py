"""Write the measured coverage of every interval into docs/statistics.md (between markers).

Usage: python scripts/coverage_table.py [--reps 4000] [--slow-reps 1000]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from coverage_simulation import LEVEL, SMALL_GAP_DRAWS, coverage

DOC = Path(__file__).resolve().parents[1] / "docs" / "statistics.md"
BEGIN, END = "<!-- coverage:begin -->", "<!-- coverage:end -->"


def markdown(reps: int, slow_reps: int) -> str:
    t = coverage(reps=reps, slow_reps=slow_reps)
    wide = t.pivot_table(
        index=["interval", "method", "noise"], columns="n", values="coverage_pct", sort=False
    )
    counts = list(wide.columns)
    lines = [
        f"Coverage (%) of nominal {100 * LEVEL:g}% intervals; {reps} simulated experiments per "
        f"row ({slow_reps} for those that fit a curve per experiment: speed-up ratios, fitted "
        f"optima, metric at optimum; {SMALL_GAP_DRAWS} x {reps} drawn for the small-gap rows, "
        "which count the bounded intervals only), written by `python scripts/coverage_table.py "
        f"--reps {reps} --slow-reps {slow_reps}`.",
        "",
        "| interval | method | noise | " + " | ".join(f"n = {n}" for n in counts) + " |",
        "|---|---|---|" + "---:|" * len(counts),
    ]
    for (name, method, noise), row in wide.iterrows():
        cells = " | ".join(f"{row[n]:.1f}" if row[n] == row[n] else "-" for n in counts)
        lines.append(f"| {name} | {method} | {noise} | {cells} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--slow-reps", type=int, default=1000)
    args = ap.parse_args()
    table = markdown(args.reps, args.slow_reps)  # minutes: the document is read after it
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{table}\n{END}{tail}")
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
