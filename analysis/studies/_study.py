"""What every study script shares: run the harness CLI, restrict the analysis to the grid's
current runs, time it, copy a figure next to the report, and write the numbers down.

A study is one command from a fresh clone (``bash scripts/install.sh`` first)::

    python analysis/studies/<name>.py

It trains the grid's ``local:`` section into ``results/studies/`` (re-running skips the runs that
have a result), analyses exactly the runs the grid plans today (their run_ids from
``harness submit --dry-run --format csv``, so older rows in the folder never mix in), copies the
figures it draws to ``analysis/studies/<name>*.png`` and writes every table it printed to
``analysis/studies/<name>.txt``.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STUDIES = REPO / "analysis" / "studies"
RESULTS = REPO / "results" / "studies"
PNG_WIDTH = 1000
"""Width (pixels) of the committed copies of the figures."""


class Study:
    """One study's log: every command it ran with its output, in ``<name>.txt``."""

    def __init__(
        self,
        name: str,
        grid: str,
        followup: tuple[str, ...] = (),
        also: tuple[str, ...] = (),
        grid_file: Path | None = None,
    ) -> None:
        """``grid_file``: a study grid (e.g. next to the study) instead of ``grids/<grid>.yaml``;
        ``grid`` is then its ``name:`` (where its results and figures go)."""
        self.name = name
        self.grid = grid_file or REPO / "grids" / f"{grid}.yaml"
        self.followup = followup
        """``submit`` flags that add runs after the grid's own (``--extend``, ``--confirm``):
        training passes them, and the analysis covers the runs they added."""
        self.also = tuple(STUDIES / f for f in also)
        """Study grids (files next to the study) of the same grid name, trained after the
        grid (more seeds of some cells, without changing the shipped grid's plan): the
        analysis covers their runs too."""
        self.grid_name = grid
        self.start = time.time()
        self.lines: list[str] = [
            f"# {name}: {dt.datetime.now().astimezone().isoformat(timespec='minutes')}",
            f"# machine: {platform.machine()}, {os.cpu_count()} CPUs, load average "
            f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}, python {platform.python_version()}"
            f", torch {_torch_version()}",
        ]

    def harness(self, *args: str, log: bool = True) -> str:
        """Run ``harness ARGS`` (exit on failure); return its stdout."""
        cmd = ["harness", *args]
        t = time.time()
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")
        if log:
            self.lines += [f"\n$ {' '.join(cmd)}   # {time.time() - t:.0f} s", done.stdout.rstrip()]
            if done.stderr.strip():
                self.lines.append(done.stderr.rstrip())
        print(done.stdout, end="", flush=True)
        return done.stdout

    def train(self) -> float:
        """Train the grid's local section (then the study grids ``also``); returns the wall
        seconds."""
        t = start = time.time()
        out = self.harness("submit", str(self.grid), "--local", *self.followup,
                           "--results", str(RESULTS), log=False)  # fmt: skip
        took = time.time() - t
        flags = "".join(f" {f}" for f in self.followup)
        self.lines.append(f"\n# training: submit {self.grid.name} --local{flags}: "
                          f"{took / 60:.1f} min")  # fmt: skip
        keep = ("runs planned", "new run(s) planned", "beyond", "edge", "confirm", "finished")
        self.lines += [f"# {ln}" for ln in out.splitlines() if any(k in ln for k in keep)]
        for extra in self.also:
            t = time.time()
            out = self.harness("submit", str(extra), "--local", "--results", str(RESULTS),
                               log=False)  # fmt: skip
            self.lines.append(f"# training: submit {extra.relative_to(REPO)} --local: "
                              f"{(time.time() - t) / 60:.1f} min")  # fmt: skip
            self.lines += [f"# {ln}" for ln in out.splitlines() if any(k in ln for k in keep)]
        return time.time() - start

    def where(self) -> str:
        """``--where`` restricting the rows to the runs the grid plans today (with the
        follow-ups recorded in the results manifest, when ``followup`` asks for them, and the
        runs of the study grids ``also``)."""
        ids: dict[str, None] = {}
        for grid, flags in ((self.grid, self.followup), *((g, ()) for g in self.also)):
            plan = self.harness("submit", str(grid), "--local", *flags, "--dry-run", "--format",
                                "csv", "--launcher", "local", "--results", str(RESULTS),
                                log=False)  # fmt: skip
            ids.update(dict.fromkeys(row["run_id"] for row in csv.DictReader(io.StringIO(plan))))
        return "run_id IN (" + ", ".join(f"'{i}'" for i in ids) + ")"

    def analyze(self, command: str, *args: str) -> str:
        """``harness analyze COMMAND GRID ARGS`` over the grid's current local runs."""
        return self.harness("analyze", command, str(self.grid), "--scale", "local",
                            "--results", str(RESULTS), "--where", self.where(), *args)  # fmt: skip

    def query(self, sql: str) -> str:
        """``harness query SQL`` over the studies' results."""
        return self.harness("query", sql, "--results", str(RESULTS))

    def figure(self, figure: str, *args: str, suffix: str = "") -> Path:
        """Draw one of the grid's figures and copy its PNG (downscaled) next to the report."""
        self.harness("figures", str(self.grid), "--figure", figure, "--scale", "local",
                     "--results", str(RESULTS), "--where", self.where(), *args)  # fmt: skip
        folder = RESULTS / self.grid_name / "figures"
        src = max(folder.glob(f"{figure}*-local.png"), key=lambda p: p.stat().st_mtime_ns)
        return self.save_png(src, suffix)

    def save_png(self, src: Path, suffix: str = "") -> Path:
        """Copy ``src`` to ``analysis/studies/<name><suffix>.png``, PNG_WIDTH pixels wide."""
        from PIL import Image

        dst = STUDIES / f"{self.name}{suffix}.png"
        with Image.open(src) as img:
            h = round(img.height * PNG_WIDTH / img.width)
            small = img.convert("RGB").resize((PNG_WIDTH, h), Image.LANCZOS)
            small.quantize(colors=128).save(dst, optimize=True)  # a few tens of kB
        self.lines.append(f"\n# figure: {dst.relative_to(REPO)} (from {src.relative_to(REPO)})")
        return dst

    def note(self, text: str) -> None:
        """Add a line to the log (and print it)."""
        print(text, flush=True)
        self.lines.append(text)

    def finish(self) -> None:
        """Write ``analysis/studies/<name>.txt`` with the total time."""
        took = time.time() - self.start
        self.lines.append(f"\n# total: {took / 60:.1f} min (end to end, this script)")
        (STUDIES / f"{self.name}.txt").write_text("\n".join(self.lines) + "\n")
        print(f"total {took / 60:.1f} min; numbers in analysis/studies/{self.name}.txt")


def _torch_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "?"


def clean(name: str) -> None:
    """Remove a study's results (``--fresh``): the next run trains everything again."""
    shutil.rmtree(RESULTS / name, ignore_errors=True)
