"""An option several commands take is declared once, in ``harness/cli/options.py`` (issue 40,
item 5): its help, type and default cannot drift between commands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[2] / "harness" / "cli"


@pytest.mark.parametrize("flag", ['"--format"', '"--launcher"', '"--wait/--no-wait"', '"--figure"'])
def test_a_shared_option_is_declared_once(flag: str) -> None:
    declared = re.compile(rf"(option\(\s*|^\s+){flag}", re.MULTILINE)  # click.option("--x", ...
    where = {p.name: len(declared.findall(p.read_text())) for p in sorted(CLI.glob("*.py"))}
    assert {k: v for k, v in where.items() if v} == {"options.py": 1}
