"""What every study script shares: call the harness (its library, :mod:`harness.api`, the one
the CLI calls), restrict the analysis to the grid's current runs, time it, copy a figure next to
the report, and write the numbers down.

A study is one command from a fresh clone (``bash scripts/install.sh`` first)::

    python analysis/studies/<name>.py

It trains the grid's ``local:`` section into ``results/studies/`` (re-running skips the runs that
have a result), analyses exactly the runs the grid plans today (their run_ids from
:func:`harness.api.plan`, so older rows in the folder never mix in), copies the
figures it draws to ``analysis/studies/<name>*.png`` and writes every table it printed to
``analysis/studies/<name>.txt``.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import platform
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from harness import api
from harness.core.errors import UserError

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
        """Do what ``harness ARGS`` does (analyze, figures, query, import), through
        :mod:`harness.api` (exit on bad input); return the text the command prints."""
        t = time.time()
        try:
            text = _COMMANDS[args[0]](*_parse(args[1:]))
        except UserError as e:
            sys.exit(f"harness {shlex.join(args)} failed:\n{e}")
        if log:
            self.lines += [
                f"\n$ harness {shlex.join(args)}   # {time.time() - t:.0f} s",
                text.rstrip(),
            ]
        print(text, flush=True)
        return text

    def train(self) -> float:
        """Train the grid's local section (then the study grids ``also``); returns the wall
        seconds."""
        t = start = time.time()
        out = self._submit(self.grid, self.followup)
        took = time.time() - t
        flags = "".join(f" {f}" for f in self.followup)
        self.lines.append(
            f"\n# training: submit {self.grid.name} --local{flags}: {took / 60:.1f} min"
        )
        keep = ("runs planned", "new run(s) planned", "beyond", "edge", "confirm", "finished")
        self.lines += [f"# {ln}" for ln in out.splitlines() if any(k in ln for k in keep)]
        for extra in self.also:
            t = time.time()
            out = self._submit(extra, ())
            self.lines.append(
                f"# training: submit {extra.relative_to(REPO)} --local: "
                f"{(time.time() - t) / 60:.1f} min"
            )
            self.lines += [f"# {ln}" for ln in out.splitlines() if any(k in ln for k in keep)]
        return time.time() - start

    @staticmethod
    def _submit(grid: Path, followup: tuple[str, ...]) -> str:
        """``api.submit`` of ``grid``'s local section; what it printed (also shown)."""
        buf = io.StringIO()
        done = api.submit(
            grid,
            local=True,
            extend="--extend" in followup,
            confirm="--confirm" in followup,
            results=RESULTS,
            out=buf,
            err=buf,
        )
        print(buf.getvalue(), end="", flush=True)
        if done.faults:
            sys.exit(f"submit {grid}: {done.faults} runs failed or were lost")
        return buf.getvalue()

    def where(self) -> str:
        """``--where`` restricting the rows to the runs the grid plans today (with the
        follow-ups recorded in the results manifest, when ``followup`` asks for them, and the
        runs of the study grids ``also``)."""
        ids: dict[str, None] = {}
        for grid, flags in ((self.grid, self.followup), *((g, ()) for g in self.also)):
            plan = api.plan(
                grid,
                local=True,
                extend="--extend" in flags,
                confirm="--confirm" in flags,
                results=RESULTS,
            )
            ids.update(dict.fromkeys(plan.run_ids))
        return "run_id IN (" + ", ".join(f"'{i}'" for i in ids) + ")"

    def frame(self, sql: str) -> pd.DataFrame:
        """The rows of ``sql`` over the studies' results (views runs, curves, manifest)."""
        return api.connect(results=RESULTS).sql(sql).df()

    def analyze(self, command: str, *args: str) -> str:
        """``harness analyze COMMAND GRID ARGS`` over the grid's current local runs."""
        return self.harness(
            "analyze",
            command,
            str(self.grid),
            "--scale",
            "local",
            "--results",
            str(RESULTS),
            "--where",
            self.where(),
            *args,
        )

    def query(self, sql: str) -> str:
        """The rows of ``sql`` over the studies' results, as a table in the log."""
        return self.harness("query", sql, "--results", str(RESULTS))

    def figure(self, figure: str, *args: str, suffix: str = "") -> Path:
        """Draw one of the grid's figures and copy its PNG (downscaled) next to the report."""
        self.harness(
            "figures",
            str(self.grid),
            "--figure",
            figure,
            "--scale",
            "local",
            "--results",
            str(RESULTS),
            "--where",
            self.where(),
            *args,
        )
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


def _parse(args: tuple[str, ...]) -> tuple[list[str], dict[str, Any]]:
    """(positional arguments, flags by keyword) of a command line: ``--by a,b`` -> ``by``,
    ``--figure`` repeatable (``names``), ``--tuned`` -> ``tuned_mode``."""
    pos: list[str] = []
    kw: dict[str, Any] = {}
    it = iter(args)
    for arg in it:
        if not arg.startswith("--"):
            pos.append(arg)
            continue
        key = _RENAMED.get(arg, arg[2:].replace("-", "_"))
        value: Any = next(it)
        if key in ("by", "over", "extra"):
            value = [c for c in value.split(",") if c]
        elif key in ("target", "confidence", "alpha", "power", "difference", "tau_max"):
            value = float(value)
        elif key in ("n_boot", "seed"):
            value = int(value)
        if key == "names":
            kw.setdefault("names", []).append(value)
        else:
            kw[key] = value
    return pos, kw


_RENAMED = {"--figure": "names", "--tuned": "tuned_mode", "--format": "fmt", "--runs": "runs"}


def _analyze(pos: list[str], kw: dict[str, Any]) -> str:
    fmt = kw.pop("fmt", "table")
    return api.text(api.analyze(pos[0], pos[1:] or None, **kw), fmt)


def _figures(pos: list[str], kw: dict[str, Any]) -> str:
    done = api.figures(pos or None, **kw)
    lines = [f"{r.name}: {' '.join(p.name for p in r.files) or r.skipped}" for r in done.rendered]
    return "\n".join([*lines, *(f"note: {n}" for n in done.notes)])


def _query(pos: list[str], kw: dict[str, Any]) -> str:
    df = api.connect(results=kw.get("results")).sql(pos[0]).df()
    if kw.get("fmt") == "csv":
        return df.to_csv(index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 50):
        return df.to_string(index=False)


def _import(pos: list[str], kw: dict[str, Any]) -> str:
    done = api.import_results(pos[0], **kw)
    return f"imported {done.rows} row(s) into grid {kw['grid']!r}"


_COMMANDS = {"analyze": _analyze, "figures": _figures, "query": _query, "import": _import}
"""The commands a study runs, each through :mod:`harness.api`."""


def clean(name: str) -> None:
    """Remove a study's results (``--fresh``): the next run trains everything again."""
    shutil.rmtree(RESULTS / name, ignore_errors=True)
