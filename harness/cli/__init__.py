"""The ``harness`` command line: thin commands, each parsing flags, calling one library function
and printing. Bad input exits with code 2 and a one-line message, having written nothing."""

from __future__ import annotations

import importlib
import sys

import click

from harness.errors import UserError

#: Modules that add commands to ``main`` (each defines commands with ``@main.command``).
COMMAND_MODULES = (
    "harness.cli.submit",
    "harness.cli.cancel",
    "harness.cli.query",
    "harness.cli.data",
    "harness.cli.analyze",
    "harness.cli.figures",
    "harness.cli.importer",
    "harness.cli.compact",
)


class _Group(click.Group):
    """Turns UserError into one line on stderr and exit code 2."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except UserError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(2)


@click.group(cls=_Group)
@click.version_option(package_name="harness")
def main() -> None:
    """Run, store and analyse language-model pretraining runs for optimizer research.

    Example: harness submit grids/adam_betas.yaml --local
    """


def _load_commands() -> None:
    for mod in COMMAND_MODULES:
        importlib.import_module(mod)


_load_commands()
