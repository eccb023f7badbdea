"""The ``harness`` command line: thin commands, each parsing flags, calling one library function
and printing. Bad input exits with code 2 and a one-line message, having written nothing; so does
a file-system error (no space left, a read-only folder: the path and the cause). A command
stopped by a signal prints what became of its work and exits with 128 + the signal's number
(130 for Ctrl-C), never with a traceback. A reader that stops reading (``| head``) ends the
command quietly with exit code 1 (click's convention).

Commands are imported only when invoked (``harness submit`` never imports the analysis layer);
``harness --help`` lists them from their source, without importing any (:func:`short_help`).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import sys
from pathlib import Path
from typing import Any

import click

from harness import api
from harness.core.errors import Stopped, UserError
from harness.core.files import os_error_line
from harness.core.registry import Registry, checked_imports, load_instance

COMMANDS: Registry[str] = Registry(
    "command",
    {
        "submit": "harness.cli.submit:submit",
        "status": "harness.cli.status:status",
        "cancel": "harness.cli.cancel:cancel",
        "query": "harness.cli.query:query",
        "compact": "harness.cli.compact:compact",
        "clean": "harness.cli.clean:clean",
        "data": "harness.cli.data:data",
        "analyze": "harness.cli.analyze:analyze",
        "figures": "harness.cli.figures:figures",
        "report": "harness.cli.report:report",
        "import": "harness.cli.importer:import_",
        "watch": "harness.cli.watch:watch",
        "eval": "harness.cli.evaluate:evaluate",
        "bench": "harness.cli.bench:bench",
    },
)
"""Command name -> ``module:attribute`` of its click command."""


class _Group(click.Group):
    """Loads commands lazily; turns UserError into one line on stderr and exit code 2."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS.names())

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        return load_instance(COMMANDS[name], click.Command)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``harness --help``, read from the commands' source files."""
        rows = [
            (name, short_help(name, formatter.width - 6 - len(name)))
            for name in self.list_commands(ctx)
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with checked_imports(api.import_problem):  # the user's modules: in a child first
                out = super().invoke(ctx)
            sys.stdout.flush()  # a reader gone (| head) shows here, not at exit
            return out
        except BrokenPipeError:
            raise  # click's main ends quietly with exit code 1, as it does for --help | head
        except UserError as e:
            _say(f"error: {e}")
            sys.exit(2)
        except OSError as e:  # the environment's, not the code's: no space, read-only, ...
            _say(f"error: {os_error_line(e)}")
            sys.exit(2)
        except Stopped as e:
            for line in e.lines:
                _say(line)
            sys.exit(e.exit_code)
        except KeyboardInterrupt:
            _say("interrupted")
            sys.exit(130)


def short_help(name: str, limit: int = 45) -> str:
    """The one-line help ``harness --help`` shows for command ``name``, as click makes it from
    the command's help text, read from the ``@click.command``/``@click.group`` function's
    docstring (or its decorator's ``help=``) in its source file: listing the commands imports
    none of them (the analysis layer alone takes seconds). A command defined otherwise is
    imported."""
    text = _help_in_source(COMMANDS[name])
    if text is None:
        command = load_instance(COMMANDS[name], click.Command)
        return command.get_short_help_str(limit)
    return click.Command(name, help=text).get_short_help_str(limit)


@functools.cache
def _help_in_source(ref: str) -> str | None:
    """The help text of the click command ``module:function`` as its source declares it, None
    when the source does not say it plainly (then the command is imported)."""
    module, _, attr = ref.partition(":")
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    tree = ast.parse(Path(spec.origin).read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == attr and node.decorator_list:
            if any(_declares_help(deco) for deco in node.decorator_list):
                return None  # click's other source of help: let click say it
            return ast.get_docstring(node, clean=False)  # as click reads ``f.__doc__``
    return None


def _declares_help(decorator: ast.expr) -> bool:
    """Whether ``decorator`` is ``@click.command(help=...)`` or a group's (or ``short_help=``)."""
    if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)):
        return False
    return decorator.func.attr in ("command", "group") and any(
        kw.arg in ("help", "short_help") for kw in decorator.keywords
    )


def _say(line: str) -> None:
    """One line on stderr; a terminal gone (SIGHUP) silences it rather than raising."""
    with contextlib.suppress(OSError):
        click.echo(line, err=True)


@click.group(cls=_Group)
@click.version_option(package_name="harness")
def main() -> None:
    """Run, store and analyse language-model pretraining runs for optimizer research.

    Example: harness submit grids/adam_betas.yaml --local
    """
