"""Modules outside the statistics import their public names through the facade
(``harness.analysis.stats``), never from the module behind it (issue 40, item 5): the modules
behind it can then move. ``harness/bench`` is left out while issue 37 reworks it; so is
``stats.defaults``, the option choices and defaults ``harness analyze --help`` reads without
importing a statistic (a name the facade maps to a heavier module, ``ALTERNATIVES`` to
``significance``, is read there)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from harness.analysis import stats

HARNESS = Path(__file__).resolve().parents[2] / "harness"
IMPORT = re.compile(r"from harness\.analysis\.stats\.(\w+) import (\([^)]*\)|[^\n]*)")


def _names(body: str) -> list[str]:
    body = re.sub(r"#[^\n]*", "", body.strip("()"))
    return [n.split(" as ")[0].strip() for n in body.replace("\n", " ").split(",") if n.strip()]


def test_public_statistics_are_imported_through_the_facade() -> None:
    around = []
    for path in sorted(HARNESS.rglob("*.py")):
        rel = path.relative_to(HARNESS).as_posix()
        if rel.startswith(("analysis/stats/", "bench/")):
            continue
        for module, body in IMPORT.findall(path.read_text()):
            if module == "defaults":
                continue
            behind = importlib.import_module(f"harness.analysis.stats.{module}")
            public = [
                n
                for n in _names(body)
                if n in stats.__all__ and getattr(stats, n) is getattr(behind, n)
            ]
            around += [f"{rel}: {n} from stats.{module}" for n in public]
    assert not around, "import these from harness.analysis.stats:\n" + "\n".join(around)
