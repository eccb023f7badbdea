"""The analysis layer's layout is kept by a machine: statistics import no rows, store or DuckDB;
the database has one door; the statistics facade is cheap to import and unambiguous."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.analysis import stats
from tests.system import test_architecture
from tests.system.test_architecture import _lint_imports


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package and its contracts (``tests/system/test_architecture.py``'s)."""
    return test_architecture.tree_copy.__wrapped__(tmp_path_factory)


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        (
            "analysis/stats/intervals.py",
            "from harness.analysis.rows.load import select",
            "Statistics are numbers in, numbers out",
        ),
        ("analysis/stats/corrections.py", "import duckdb", "Statistics are numbers in"),
        ("analysis/rows/tuning.py", "from harness.store.db import connect", "One door"),
        ("watch/live_view.py", "import duckdb", "One door"),
        (
            "analysis/rows/axes.py",
            "from harness.analysis.questions import query",
            "present > questions > rows > stats",
        ),
    ],
)
def test_a_forbidden_import_breaks_the_analysis_contracts(
    tree_copy: Path, module: str, line: str, contract: str
) -> None:
    path = tree_copy / "harness" / module
    original = path.read_text()
    path.write_text(original + f"\n{line}  # noqa\n")
    try:
        broken = _lint_imports(tree_copy)
    finally:
        path.write_text(original)
    assert broken.returncode != 0
    assert contract in broken.stdout.replace("\n", " ") and "BROKEN" in broken.stdout


def test_the_stats_facade_exports_every_name_without_importing_scipy() -> None:
    code = (
        "import sys; from harness.analysis import stats; "
        "assert 'scipy' not in sys.modules, 'facade imported scipy'; "
        "stats.holm; assert 'scipy' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    modules = {m.name for m in pkgutil.iter_modules(stats.__path__)}
    assert not set(stats.__all__) & modules, "a public name shadows a module of the package"
    for name in stats.__all__:
        assert getattr(stats, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        stats.nope  # noqa: B018


def test_the_stats_facade_declares_for_mypy_exactly_what_it_exports() -> None:
    """The names under ``if TYPE_CHECKING:`` (what mypy sees) are the lazy exports, no more, no
    fewer: a name added to one list only drifts."""
    import ast

    import harness.analysis.stats as stats

    tree = ast.parse(Path(stats.__file__).read_text())
    (block,) = [
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    ]
    seen = {
        (node.module, a.name)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for a in node.names
    }
    assert seen == {(f"harness.analysis.stats.{m}", n) for n, m in stats._EXPORTS.items()}


def test_analyze_help_imports_no_statistic() -> None:
    code = (
        "import sys; from click.testing import CliRunner; from harness.cli import main; "
        "r = CliRunner().invoke(main, ['analyze', 'compare', '--help']); "
        "assert r.exit_code == 0 and 'welch' in r.output, r.output; "
        "assert 'scipy.stats' not in sys.modules and 'duckdb' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_declared_choices_are_the_implemented_ones() -> None:
    from harness.analysis.stats import defaults
    from harness.analysis.stats.corrections import CORRECTIONS
    from harness.analysis.stats.sequential import DEFAULT_SPENDING, SPENDING
    from harness.analysis.stats.significance import TESTS
    from harness.analysis.stats.to_target import MEASURES

    assert tuple(TESTS) == defaults.TEST_NAMES
    assert tuple(CORRECTIONS) == defaults.CORRECTION_NAMES
    assert tuple(MEASURES) == defaults.MEASURE_NAMES
    assert set(defaults.POWER_TESTS) <= set(TESTS)
    assert tuple(SPENDING) == defaults.SPENDING_NAMES and DEFAULT_SPENDING in SPENDING
