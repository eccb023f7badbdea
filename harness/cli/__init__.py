"""The ``harness`` command line: thin commands, each parsing flags, calling one library function
and printing. Bad input exits with code 2 and a one-line message, having written nothing.

Commands are imported only when invoked (``harness submit`` never imports the analysis layer).
"""

from __future__ import annotations

import sys

import click

from harness.core.errors import UserError
from harness.core.registry import Registry, load_object

COMMANDS: Registry[str] = Registry(
    "command",
    {
        "submit": "harness.cli.submit:submit",
        "status": "harness.cli.status:status",
        "cancel": "harness.cli.cancel:cancel",
        "query": "harness.cli.query:query",
        "compact": "harness.cli.compact:compact",
        "data": "harness.cli.data:data",
        "analyze": "harness.cli.analyze:analyze",
        "figures": "harness.cli.figures:figures",
        "import": "harness.cli.importer:import_",
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
