"""Golden outputs of ``harness analyze``, ``figures`` and ``report``: recorded before the analysis
layer was restructured (issue 33), compared byte for byte after.

The rows are the test suite's fixture rows (built by the fixtures of the analysis tests, called
here as functions), written afresh each time: run_ids are content hashes, so they are the same
rows; what differs between two writes (timestamps, code commits, the temporary folder, the hash
of the rows that holds them) is replaced by a fixed token before comparing (:func:`normalize`).

``python tests/analysis/golden.py`` rewrites the recorded outputs (only when an output is meant
to change; say why in the commit).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from harness.analysis.testing import make_run, write_run
from harness.cli import main

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"


@dataclass(frozen=True)
class Case:
    """One command whose output is recorded."""

    name: str
    """File stem under ``golden/``."""
    root: str
    """Which fixture's results folder (a key of :func:`build`)."""
    args: tuple[str, ...]
    """The ``harness`` arguments (``--results`` added)."""


class _Factory:
    """Enough of pytest's ``tmp_path_factory`` for the fixtures."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.made = 0

    def mktemp(self, name: str) -> Path:
        self.made += 1
        path = self.base / f"{name}{self.made}"
        path.mkdir(parents=True)
        return path


def _fixture(module: str, name: str) -> Callable[..., object]:
    """A fixture of a test module beside this file (``tests/analysis/``), as a function."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    mod = __import__(module)
    return getattr(mod, name).__wrapped__


def _workload(root: Path) -> None:
    """A workload grid: rows with val_loss only (no val_ppl), as the quadratic and imbalance
    workloads write them; two optimizers over two lrs and three seeds, with curves."""
    for opt, level in (("sgd", 1.0), ("adam", 0.5)):
        for k, lr in enumerate((0.01, 0.1)):
            for s in range(3):
                run = make_run(grid="work", optimizer=opt, lr=lr, seed=s)
                loss = level + 0.2 * k + 0.05 * s
                write_run(root, run, val_ppl=math.exp(loss), metrics={"val_ppl": None})


def build(base: Path) -> dict[str, Path]:
    """Every fixture's results folder under ``base``, by name."""
    f = _Factory(base)
    roots = {
        "cli": _fixture("test_analysis_cli", "root")(f),
        "figures": _fixture("test_figures", "root")(f),
        "cb": _fixture("test_analysis_critical_batch", "root")(f),
        "protocol": _fixture("test_analysis_protocol", "root")(f),
    }
    timed_root, timed_grid = _fixture("test_targets", "timed")(f.mktemp("timed"))
    roots["timed"] = timed_root
    roots["timed_grid"] = timed_grid
    report = _fixture("test_report", "report")(f)
    roots["report"] = report.parent
    roots["work"] = f.mktemp("work")
    _workload(roots["work"])
    return roots


_SGD_ADAM = ("--a", "optimizer=sgd", "--b", "optimizer=adamw")


def cases() -> list[Case]:
    """Every recorded command."""
    a = [
        Case("best_opt", "cli", ("analyze", "best", "opt", "--by", "optimizer,batch_size")),
        Case(
            "best_opt_json",
            "cli",
            ("analyze", "best", "opt", "--by", "optimizer,batch_size", "--format", "json"),
        ),
        Case(
            "best_opt_csv",
            "cli",
            ("analyze", "best", "opt", "--by", "optimizer,batch_size", "--format", "csv"),
        ),
        Case(
            "best_coupled_loss",
            "cli",
            ("analyze", "best", "coupled", "--by", "optimizer", "--metric", "val_loss"),
        ),
        Case(
            "best_coupled_iso",
            "cli",
            (
                "analyze",
                "best",
                "coupled",
                "--by",
                "optimizer",
                "--metric",
                "iso",
                "--select-by",
                "val_loss",
            ),
        ),
        Case("best_scales", "cli", ("analyze", "best", "scales", "--scale", "local")),
        Case("best_single", "cli", ("analyze", "best", "single", "--by", "optimizer")),
        Case("best_scaled", "cli", ("analyze", "best", "scaled", "--by", "optimizer")),
        Case(
            "gap_opt",
            "cli",
            (
                "analyze",
                "gap",
                "opt",
                "--by",
                "batch_size",
                "--baseline",
                "optimizer=sgd",
                "--reference",
                "optimizer=adamw",
            ),
        ),
        Case(
            "gap_opt_fit",
            "cli",
            (
                "analyze",
                "gap",
                "opt",
                "--by",
                "batch_size",
                "--baseline",
                "optimizer=sgd",
                "--reference",
                "optimizer=adamw",
                "--tuned",
                "fit",
            ),
        ),
        Case("compare_opt", "cli", ("analyze", "compare", "opt", *_SGD_ADAM, "--by", "batch_size")),
        Case(
            "compare_opt_paper",
            "cli",
            (
                "analyze",
                "compare",
                "opt",
                *_SGD_ADAM,
                "--by",
                "batch_size",
                "--test",
                "paper",
                "--alternative",
                "less",
                "--correction",
                "bh",
            ),
        ),
        Case(
            "compare_coupled",
            "cli",
            (
                "analyze",
                "compare",
                "coupled",
                "--a",
                "optimizer=adamw",
                "--b",
                "optimizer=coupled_adam",
                "--metric",
                "val_loss",
            ),
        ),
        Case(
            "crossover_opt", "cli", ("analyze", "crossover", "opt", "--x", "batch_size", *_SGD_ADAM)
        ),
        Case(
            "speedup_budget",
            "cli",
            ("analyze", "speedup", "budget", "--a", "optimizer=signum", "--b", "optimizer=adamw"),
        ),
        Case("power_opt", "cli", ("analyze", "power", "opt", *_SGD_ADAM, "--by", "batch_size")),
        Case(
            "power_coupled",
            "cli",
            (
                "analyze",
                "power",
                "coupled",
                "--a",
                "optimizer=adamw",
                "--b",
                "optimizer=coupled_adam",
                "--metric",
                "val_loss",
                "--difference",
                "0.01",
            ),
        ),
        Case("optimum_opt", "cli", ("analyze", "optimum", "opt", "--by", "optimizer,batch_size")),
        Case("best_work", "work", ("analyze", "best", "work", "--by", "optimizer")),
        Case(
            "compare_work",
            "work",
            ("analyze", "compare", "work", "--a", "optimizer=sgd", "--b", "optimizer=adam"),
        ),
        Case("critical_batch", "cb", ("analyze", "critical-batch", "cb")),
        Case("critical_batch_json", "cb", ("analyze", "critical-batch", "cb", "--format", "json")),
        Case(
            "best_protocol",
            "protocol",
            ("analyze", "best", "sgd_embeddings", "--metric", "val_loss"),
        ),
        Case("best_betas", "figures", ("analyze", "best", "betas", "--by", "beta1,beta2")),
        Case("targets_timed", "timed", ("analyze", "targets", "@timed_grid")),
        Case("profiles_timed", "timed", ("analyze", "profiles", "@timed_grid")),
        Case(
            "profiles_timed_time",
            "timed",
            (
                "analyze",
                "profiles",
                "@timed_grid",
                "--target",
                "3.5",
                "--measure",
                "time",
                "--format",
                "json",
            ),
        ),
        Case("best_report", "report", ("analyze", "best", "opt", "--by", "optimizer")),
        Case("error_best_mixed", "report", ("analyze", "best", "opt")),
    ]
    figs = [
        Case("figures_opt", "cli", ("figures", "opt")),
        Case(
            "figures_opt_named",
            "cli",
            (
                "figures",
                "opt",
                "--figure",
                "loss_curves",
                "--runs",
                "all",
                "--figure",
                "metric_vs",
                "--x",
                "lr",
                "--figure",
                "steps_to_target",
                "--target",
                "4.0",
            ),
        ),
        Case("figures_betas", "figures", ("figures", "betas")),
        Case(
            "figures_fopt",
            "figures",
            (
                "figures",
                "opt",
                "--figure",
                "gap_closure",
                "--figure",
                "batch_size",
                "--baseline",
                "optimizer=sgd",
                "--reference",
                "optimizer=adamw",
            ),
        ),
        Case("figures_coupled", "figures", ("figures", "coupled", "--metric", "val_loss")),
        Case(
            "figures_coupled_tokens",
            "figures",
            ("figures", "coupled", "--figure", "metric_vs_tokens", "--metric", "iso"),
        ),
        Case("figures_timed", "timed", ("figures", "@timed_grid")),
        Case("figures_cb", "cb", ("figures", "cb", "--target", "5.0")),
        Case("figures_work", "work", ("figures", "work")),
        Case("figures_report", "report", ("figures", "opt")),
    ]
    reports = [
        Case("report_opt", "report", ("report", "opt", "-o", "@out")),
        Case("report_cli_opt", "cli", ("report", "opt", "-o", "@out")),
        Case("report_betas", "figures", ("report", "betas", "-o", "@out")),
        Case(
            "report_coupled", "figures", ("report", "coupled", "--metric", "val_loss", "-o", "@out")
        ),
        Case("report_work", "work", ("report", "work", "-o", "@out")),
    ]
    return a + figs + reports


_HEX = re.compile(r"\b[0-9a-f]{64}\b")
_PROVENANCE = (
    "report code commit",
    "commits of the runs",
    "created",
    "python",
    "harness",
    "duckdb",
    "pandas",
    "numpy",
    "matplotlib",
)


def normalize(text: str, root: Path) -> str:
    """``text`` with what differs between two writes of the same rows replaced by tokens."""
    text = text.replace(str(root), "<ROOT>")
    text = _HEX.sub("<SHA256>", text)
    for key in _PROVENANCE:
        text = re.sub(rf"(<th>{re.escape(key)}</th><td>)[^<]*(</td>)", r"\1<X>\2", text)
    return text


def _sidecar(path: Path, root: Path) -> str:
    side = json.loads(path.read_text())
    for key in ("code_commit", "created_at", "harness_version", "rows_sha256"):
        side.pop(key, None)
    return normalize(json.dumps(side, indent=1, sort_keys=True), root)


def run(case: Case, roots: dict[str, Path], out: Path) -> Iterator[tuple[str, bytes]]:
    """Run one case; yield (file name, bytes) of each output it recorded."""
    root = roots[case.root]
    html = out / f"{case.name}.html"
    args = [
        str(roots["timed_grid"]) if a == "@timed_grid" else str(html) if a == "@out" else a
        for a in case.args
    ]
    figures = sorted(root.glob("*/figures/*"))
    for old in figures:  # each case draws its own
        old.unlink()
    res = CliRunner().invoke(main, [*args, "--results", str(root)])
    text = f"exit {res.exit_code}\n--- stdout\n{res.stdout}--- stderr\n{res.stderr}"
    text = normalize(text.replace(str(out), "<OUT>"), root).replace(str(out.parent), "<BASE>")
    yield f"{case.name}.txt", text.encode()
    if case.args[0] == "figures":
        for png in sorted(root.glob("*/figures/*.png")):
            digest = hashlib.sha256(png.read_bytes()).hexdigest()
            yield f"{case.name}.{png.stem}.png.sha256", f"{digest}\n".encode()
            yield f"{case.name}.{png.stem}.json", _sidecar(png.with_suffix(".json"), root).encode()
    if case.args[0] == "report" and html.exists():
        yield f"{case.name}.html", normalize(html.read_text(), root).encode()


def outputs(base: Path) -> dict[str, bytes]:
    """Every recorded output, by file name."""
    roots = build(base / "rows")
    (base / "out").mkdir()
    return {name: data for case in cases() for name, data in run(case, roots, base / "out")}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        got = outputs(Path(tmp))
    for old in GOLDEN.glob("*"):
        old.unlink()
    for name, data in got.items():
        (GOLDEN / name).write_bytes(data)
    print(f"{len(got)} golden outputs in {GOLDEN}")
