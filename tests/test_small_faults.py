"""Smaller faults (issue 11, item 9): a YAML alias bomb, stale checkpoint temp files, and rows of
failed, cancelled and timed-out runs that say how far the run got."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from harness.core.errors import MAX_MESSAGE, UserError

BOMB = """
name: bomb
base: {model: tiny, optimizer: adamw, seq_len: 32, batch_size: 8, tokens: 1536}
seeds:
  - &a [1, 1, 1, 1, 1, 1, 1, 1, 1]
  - &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
  - &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
  - &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
  - &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
  - &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
  - &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
  - &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
  - [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def test_a_yaml_alias_bomb_is_one_short_line_in_little_memory(tmp_path: Path) -> None:
    grid = tmp_path / "bomb.yaml"
    grid.write_text(textwrap.dedent(BOMB))  # 9**9 = 387 million values once expanded
    code = f"""
        import resource
        from click.testing import CliRunner
        from harness.cli import main
        r = CliRunner().invoke(main, ["submit", {str(grid)!r}, "--dry-run", "--launcher", "local"])
        print(r.exit_code, len(r.output), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        print(r.output)
    """
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=120, check=True).stdout  # fmt: skip
    exit_code, length, max_rss_kb = (int(x) for x in out.splitlines()[0].split())
    assert exit_code == 2 and length < 400, out[:500]
    assert "more than 100,000 values once its YAML aliases" in out
    assert max_rss_kb < 500_000  # the interpreter and its imports; never the expansion


def test_an_error_echoing_a_huge_value_is_cut() -> None:
    assert len(str(UserError("x" * 10_000_000))) <= MAX_MESSAGE
