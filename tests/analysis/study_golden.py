"""Golden outputs on the four study grids' results (issue 33): every ``harness analyze``,
``figures``, ``query`` and ``import`` command the study scripts ran, replayed through the CLI on
a snapshot of the results they trained, plus one ``report`` per study grid.

The snapshot (``golden_studies/store/``) is ``results/studies/`` as the studies left it, every
grid compacted and the per-run files the compaction covers left out (what a reader sees is
unchanged: the views show the same rows). The commands are the ``$ harness ...`` lines of the
study logs (``analysis/studies/<study>.txt``) of the run that trained the snapshot, kept in
``golden_studies/commands/``, in order (an ``import`` writes into the store, so each replay
starts from a fresh copy of the snapshot); their paths are re-rooted at this checkout and the
snapshot copy. The outputs are recorded by this module, not copied from the logs: a log keeps
the output of the library call, the golden the CLI's bytes.

``python tests/analysis/study_golden.py RESULTS [LOGS]`` records the snapshot from ``RESULTS``
(the studies' ``results/studies``), the commands from the logs in ``LOGS`` and the outputs;
``python tests/analysis/study_golden.py`` only re-records the outputs (when an output is meant
to change; say why in the commit).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner
from golden import _sidecar as golden_sidecar
from golden import normalize

from harness.cli import main

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
GOLDEN = HERE / "golden_studies"
STORE = GOLDEN / "store"
OUTPUTS = GOLDEN / "outputs"
COMMANDS = GOLDEN / "commands"
"""``<study>.txt``: the ``harness`` arguments of each command the study ran (shell-quoted), one
per line, taken from its log when the snapshot was recorded."""
STUDIES = ("adam_betas", "batch_size_gap", "coupled_adam", "optimizer_gap")
"""The four studies whose grids train GPTs at laptop scale (the toy studies train workloads
whose goldens are the fixture rows')."""
REPORTS = {
    "adam_betas": ("grids/adam_betas.yaml", "--metric", "val_loss"),
    "batch_size_gap": ("analysis/studies/batch_size_gap.yaml",),
    "coupled_adam": ("analysis/studies/coupled_adam.yaml", "--metric", "val_loss"),
    "optimizer_gap": ("grids/optimizer_gap.yaml",),
}
"""One ``harness report`` per study grid (the studies draw figures, not reports)."""

_COMMAND = re.compile(r"^\$ harness (.*?)(?:   # \d+ s)?$")
_IN_REPO = re.compile(r"^(?:.*/)?((?:grids|analysis)/[^ ]+\.(?:yaml|csv))$")
_RESULTS = re.compile(r"^(?:.*/)?results/studies$")


@dataclass(frozen=True)
class Case:
    """One recorded command."""

    name: str
    """File stem under ``golden_studies/outputs/``: ``<study>-<nn>-<command>``."""
    args: tuple[str, ...]
    """The ``harness`` arguments, with ``@results`` for the snapshot copy, ``@out`` for a
    report's file and ``@repo/`` starting a path into this checkout."""


def _rerooted(arg: str) -> str:
    if _RESULTS.match(arg):
        return "@results"
    found = _IN_REPO.match(arg)
    return f"@repo/{found.group(1)}" if found else arg


def cases() -> list[Case]:
    """The studies' commands, then the reports, in the order they run."""
    out: list[Case] = []
    for study in STUDIES:
        lines = (COMMANDS / f"{study}.txt").read_text().splitlines()
        for k, line in enumerate(lines):
            args = tuple(_rerooted(a) for a in shlex.split(line))
            out.append(Case(f"{study}-{k:02d}-{args[0]}", args))
    for study, (grid, *flags) in REPORTS.items():
        args = (
            "report",
            f"@repo/{grid}",
            "--scale",
            "local",
            *flags,
            "--results",
            "@results",
            "-o",
            "@out",
        )
        out.append(Case(f"{study}-report", args))
    return out


def record_commands(logs: Path) -> None:
    """Take the commands of the study logs ``logs/<study>.txt`` into :data:`COMMANDS`."""
    COMMANDS.mkdir(parents=True, exist_ok=True)
    for study in STUDIES:
        text = (logs / f"{study}.txt").read_text()
        lines = [m.group(1) for ln in text.splitlines() if (m := _COMMAND.match(ln))]
        (COMMANDS / f"{study}.txt").write_text("".join(f"{ln}\n" for ln in lines))


_PNG = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")


def _digest(found: re.Match[str]) -> str:
    """An embedded PNG as its SHA-256 (the report's figures: kept short, still compared)."""
    return f"png-sha256:{hashlib.sha256(found.group(1).encode()).hexdigest()[:16]}"


def _sidecar(path: Path, root: Path) -> str:
    """The figure's data as :func:`golden._sidecar` records it, paths into the checkout too."""
    return golden_sidecar(path, root).replace(str(REPO), "<REPO>")


def run(case: Case, root: Path, out: Path) -> Iterator[tuple[str, bytes]]:
    """Run one case over the snapshot copy ``root``; yield (file name, bytes) of its outputs:
    what it printed, each figure's data (the PNG's bytes depend on the fonts; its data is what
    it shows) and a report's HTML."""
    html = out / f"{case.name}.html"
    swap = {"@results": str(root), "@out": str(html)}
    args = [swap.get(a, a.replace("@repo", str(REPO), 1)) for a in case.args]
    for old in root.glob("*/figures/*"):  # each case draws its own
        old.unlink()
    res = CliRunner().invoke(main, args)
    text = f"exit {res.exit_code}\n--- stdout\n{res.stdout}--- stderr\n{res.stderr}"
    text = normalize(text.replace(str(out), "<OUT>").replace(str(REPO), "<REPO>"), root)
    yield f"{case.name}.txt", text.encode()
    if case.args[0] == "figures":
        for sidecar in sorted(root.glob("*/figures/*.json")):
            yield f"{case.name}.{sidecar.stem}.json", _sidecar(sidecar, root).encode()
    if case.args[0] == "report" and html.exists():
        page = normalize(html.read_text().replace(str(REPO), "<REPO>"), root)
        yield f"{case.name}.html", _PNG.sub(_digest, page).encode()


def outputs(base: Path) -> dict[str, bytes]:
    """Every recorded output, by file name, replayed on a copy of the snapshot under ``base``."""
    root = base / "results"
    shutil.copytree(STORE, root)
    (base / "out").mkdir()
    return {name: data for case in cases() for name, data in run(case, root, base / "out")}


def _locks(folder: str, names: list[str]) -> list[str]:
    return [n for n in names if n.endswith(".lock")]


def snapshot(results: Path) -> None:
    """Copy ``results`` (the studies' ``results/studies``) to :data:`STORE`, each grid compacted
    first; leave out what a compaction covers, figures, logs, locks and checkpoints."""
    from harness.store.compact import compact

    if STORE.exists():
        shutil.rmtree(STORE)
    STORE.mkdir(parents=True)
    if (results / "_families").is_dir():  # the claims a --family correction is over
        shutil.copytree(results / "_families", STORE / "_families", ignore=_locks)
    for grid in sorted(p for p in results.iterdir() if (p / "manifest.parquet").is_file()):
        compact(results, grid.name)
        covered: set[str] = set()
        for listed in (grid / "compact").glob("covered-*.json"):
            covered.update(Path(f).name for f in json.loads(listed.read_text())["files"])
        newest = max((grid / "compact").glob("covered-*.json"))  # numbered: the last one
        gen = newest.stem.removeprefix("covered-")
        keep = ["manifest.parquet", *(p.name for p in grid.glob("[!.]*.json"))]  # not caches
        (STORE / grid.name / "compact").mkdir(parents=True)
        for name in keep:
            shutil.copy2(grid / name, STORE / grid.name / name)
        for part in (f"runs-{gen}.parquet", f"curves-{gen}.parquet", newest.name):
            shutil.copy2(grid / "compact" / part, STORE / grid.name / "compact" / part)
        for kind in ("runs", "curves"):
            loose = [p for p in (grid / kind).glob("*.parquet") if p.name not in covered]
            for p in loose:  # arrived after the compaction: none expected, kept if any
                (STORE / grid.name / kind).mkdir(exist_ok=True)
                shutil.copy2(p, STORE / grid.name / kind / p.name)


if __name__ == "__main__":
    import tempfile

    if len(sys.argv) > 1:  # RESULTS, then the folder of the logs (default: the studies')
        snapshot(Path(sys.argv[1]))
        record_commands(Path(sys.argv[2]) if len(sys.argv) > 2 else REPO / "analysis" / "studies")
    with tempfile.TemporaryDirectory() as tmp:
        got = outputs(Path(tmp))
    if OUTPUTS.exists():
        shutil.rmtree(OUTPUTS)
    OUTPUTS.mkdir(parents=True)
    for name, data in got.items():
        (OUTPUTS / name).write_bytes(data)
    print(f"{len(got)} golden outputs in {OUTPUTS}")
