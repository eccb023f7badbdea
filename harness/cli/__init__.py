"""The ``harness`` command line: thin commands, each parsing flags, calling one library function
and printing. Bad input exits with code 2 and a one-line message, having written nothing; so does
a file-system error (no space left, a read-only folder: the path and the cause). A command
stopped by a signal prints what became of its work and exits with 128 + the signal's number
(130 for Ctrl-C), never with a traceback. A reader that stops reading (``| head``) ends the
command quietly with exit code 1 (click's convention).

Commands are imported only when invoked (``harness submit`` never imports the analysis layer).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import click

from harness.core.errors import Stopped, UserError
from harness.core.files import os_error_line
from harness.core.registry import Registry, load_object

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
        return load_object(COMMANDS[name])

    def invoke(self, ctx: click.Context) -> Any:
        try:
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
